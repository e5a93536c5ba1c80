/**
 * Geo routing where jobs run outside the process that holds the router: the redis backend with
 * workers in the jobs worker thread, which boots `jobs` and its extenders but not cluster-vpn.
 * The thread resolves through the serving thread's Cluster API (`GET /api/v1/georouter/route`,
 * its URL handed over as `geo_router_url`): a fetch graph with a geo no bank serves yet gets a
 * bank from free workers (rule 4) and its requests go through that bank's workers.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import { type Fixture, serve } from "../../fixtures/pages-server.ts"
import { jobsClient, startRedis, tempDir, type TestRedis } from "../jobs/support.ts"
import { clusterClient, clusterYaml, geoFetchGraph } from "./support.ts"

let fx: Fixture
let redis: TestRedis
let platform: Awaited<ReturnType<typeof startPlatform>>
const seen: Array<{ path: string; worker: string | null }> = []

beforeAll(async () => {
  fx = await serve((req, res) => {
    seen.push({ path: req.url ?? "", worker: (req.headers["x-cluster-worker"] as string | undefined) ?? null })
    res.writeHead(200, { "content-type": "text/html" })
    res.end("<!doctype html><title>t</title><p>through the thread</p>")
  })
  redis = await startRedis()
  platform = await startPlatform({
    cwd: ROOT,
    yaml: clusterYaml({ dataDir: tempDir("cluster-thread-"), ports: { from: 19295, to: 19297 }, redisUrl: redis.url, extra: "  web: {}\n  job-graph: {}\n" })
  })
}, 90_000)
afterAll(async () => {
  await platform?.stop()
  await redis?.stop()
  await fx?.close()
})

describe("geo from the jobs worker thread (redis backend)", () => {
  it("resolves through the serving thread's router: a bank is created for the geo and carries the requests", async () => {
    const api = jobsClient(platform.url("jobs"))
    const urls = [0, 1, 2].map((i) => `${fx.url}/thread/${i}`)
    const j = await api.waitFor((await api.submit("graph", geoFetchGraph(urls, "us:tx"))).body.job_id)
    expect(j.status, JSON.stringify(j.error ?? j)).toBe("COMPLETED")
    const carriers = seen.filter((s) => s.path.startsWith("/thread/")).map((s) => s.worker)
    expect(carriers).toHaveLength(3)
    for (const w of carriers) expect(w).toMatch(/^\d+$/)
    const banks = (await clusterClient(platform.url("cluster")).call("GET", "/api/v1/banks/")).body
    expect(banks).toEqual([expect.objectContaining({ geo: "us:tx", status: "active" })])
  }, 90_000)
})
