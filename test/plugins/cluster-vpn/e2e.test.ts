/**
 * cluster-vpn end to end with the `local` driver, on the real kernel: workers are real tinyproxy
 * processes, the bank frontend a real HAProxy. A bank for `us:ca`; a screenshot job (Chromium)
 * and a fetch-based graph with `geo: us:ca` go through its frontend, and the pages fixture sees
 * which worker carried each request (`X-Cluster-Worker`), round robin; a killed worker proxy
 * drops the bank's health and its traffic moves to the others; idle/resume; delete releases the
 * workers; `geo: tor` goes through a SOCKS5 fixture; a new geo gets a bank from free workers.
 */
import * as fs from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import { type Fixture, serve } from "../../fixtures/pages-server.ts"
import { type Socks5Fixture, socks5Server } from "../../fixtures/socks5-server.ts"
import { remoteGeoResolver } from "../../../plugins/jobs/net/RemoteGeo.ts"
import { jobsClient, tempDir } from "../jobs/support.ts"
import { clusterClient, clusterYaml, geoFetchGraph, waitUntil } from "./support.ts"

let fx: Fixture
let socks: Socks5Fixture
let platform: Awaited<ReturnType<typeof startPlatform>>
let api: ReturnType<typeof jobsClient>
let cluster: ReturnType<typeof clusterClient>
/** Requests the pages fixture saw: path and the worker that carried it (null: direct). */
const seen: Array<{ path: string; worker: string | null }> = []
const hasChromium = fs.existsSync("/usr/bin/chromium")

const PAGE = "<!doctype html><html><head><title>geo page</title></head><body><h1>hello</h1><p>routed through a bank</p></body></html>"

beforeAll(async () => {
  fx = await serve((req, res) => {
    seen.push({ path: req.url ?? "", worker: (req.headers["x-cluster-worker"] as string | undefined) ?? null })
    res.writeHead(req.url === "/favicon.ico" ? 404 : 200, { "content-type": "text/html" })
    res.end(PAGE)
  })
  socks = await socks5Server({ host: "127.0.0.1", port: Number(new URL(fx.url).port) })
  platform = await startPlatform({
    cwd: ROOT,
    yaml: clusterYaml({
      dataDir: tempDir("cluster-e2e-"),
      ports: { from: 19280, to: 19284 },
      socks: socks.url,
      extra: `  web:\n    tor_socks_url: ${socks.url}\n  job-graph: {}\n${hasChromium ? `  job-browser:\n    navigation_timeout_ms: 8000\n    tor_proxy_url: ${socks.url.replace("socks5h:", "socks5:")}\n` : ""}`
    })
  })
  api = jobsClient(platform.url("jobs"))
  cluster = clusterClient(platform.url("cluster"))
}, 60_000)
afterAll(async () => {
  await platform?.stop()
  await socks?.close()
  await fx?.close()
})

/** Workers that carried the requests for paths starting with `prefix`. */
const carriers = (prefix: string) => seen.filter((s) => s.path.startsWith(prefix)).map((s) => s.worker)

describe("cluster-vpn with the local driver", () => {
  it("boots, registers its geo router and lists 18 devices and 16 workers", async () => {
    const p = platform.kernel.plugins.find((x) => x.name === "cluster-vpn")!
    expect(p).toMatchObject({ status: "running", contributions: { geoRouters: ["cluster-vpn"] } })
    const devices = (await cluster.call("GET", "/api/v1/devices/")).body
    expect(devices).toHaveLength(18)
    expect(devices.map((d: { role: string }) => d.role).filter((r: string) => r === "worker")).toHaveLength(16)
    expect(devices[2]).toMatchObject({ id: 3, hostname: "worker-01", wg_interface: "wg01", wg_public_key: expect.stringMatching(/^[A-Za-z0-9+/]{43}=$/) })
    expect((await cluster.call("GET", "/api/v1/workers/")).body).toHaveLength(16)
  })

  it("creates a bank for us:ca with every field: profiles assigned, HAProxy frontend up", async () => {
    const r = await cluster.call("POST", "/api/v1/banks/", { name: "Cali Bank", workers: [1, 2, 3], filter: "us:ca" })
    expect(r.status).toBe(201)
    expect(r.body).toMatchObject({
      name: "Cali Bank",
      tag: "calibank",
      workers: [1, 2, 3],
      filter: { country: "us", state: "ca", type: null },
      status: "active",
      endpoint: expect.stringMatching(/^http:\/\/127\.0\.0\.1:192(8\d)$/),
      health: { workers_total: 3, workers_up: 3, workers_down: 0, success_rate: 1 }
    })
    expect(r.body.port).toBeGreaterThanOrEqual(19280)
    expect(r.body.worker_assignments).toHaveLength(3)
    for (const a of r.body.worker_assignments) {
      expect(a).toMatchObject({ worker_ip: "127.0.0.1", vpn_status: "up", exit_ip: "127.0.0.1", vpn_profile: expect.stringMatching(/^us-ca-\d{3}(-tor)?\.[a-z]+\.udp\.ovpn$/) })
    }
    expect(new Set(r.body.worker_assignments.map((a: { vpn_profile: string }) => a.vpn_profile)).size).toBe(3)
  })

  it("a fetch-based graph with geo us:ca goes through the bank's workers round robin", async () => {
    const urls = Array.from({ length: 6 }, (_, i) => `${fx.url}/graph/${i}`)
    const j = await api.waitFor((await api.submit("graph", geoFetchGraph(urls, "us:ca"))).body.job_id)
    expect(j.status).toBe("COMPLETED")
    const workers = carriers("/graph/")
    expect(workers).toHaveLength(6)
    // One request at a time: HAProxy's round robin cycles through the three workers.
    expect(workers.slice(0, 3).sort()).toEqual(["1", "2", "3"])
    expect(workers.slice(3)).toEqual(workers.slice(0, 3))
    // Each worker's own log names the requests it carried.
    const logs = await Promise.all([3, 4, 5].map(async (id) => fs.readFileSync((await cluster.call("GET", `/api/v1/devices/${id}/status`)).body.log_file, "utf8")))
    for (const log of logs) expect((log.match(/GET http:\/\/127\.0\.0\.1:\d+\/graph\/\d/g) ?? []).length).toBe(2)
  })

  it.skipIf(!hasChromium)("a screenshot job with geo us:ca loads its page through the bank", async () => {
    const j = await api.waitFor((await api.submit("screenshot", { urls: [`${fx.url}/shot/a`, `${fx.url}/shot/b`], geo: "us:ca", viewport_width: 320, viewport_height: 200, full_page: false })).body.job_id)
    expect(j).toMatchObject({ status: "COMPLETED", result: { urls_processed: 2 } })
    const workers = carriers("/shot/")
    expect(workers).toHaveLength(2)
    expect(workers.every((w) => ["1", "2", "3"].includes(w!))).toBe(true)
  })

  it("a process without a router (jobs.geo_router_url) resolves through GET /api/v1/georouter/route", async () => {
    const remote = remoteGeoResolver(platform.url("cluster"))
    try {
      const bank = (await cluster.call("GET", "/api/v1/banks/calibank")).body
      const route = await remote.resolve("us:ca")
      expect(route).toMatchObject({ kind: "proxy", proxyUrl: bank.endpoint })
      const r = await fetch(`${fx.url}/remote/0`, { dispatcher: (route as { dispatcher: unknown }).dispatcher } as RequestInit)
      expect(r.status).toBe(200)
      expect(carriers("/remote/")).toEqual([expect.stringMatching(/^[123]$/)])
      expect(await remote.resolve(null)).toEqual({ kind: "direct" })
      await expect(remote.resolve("zz")).rejects.toMatchObject({ kind: "VALIDATION_ERROR" })
      await expect(remoteGeoResolver("http://127.0.0.1:9").resolve("us")).rejects.toMatchObject({ kind: "NETWORK_ERROR", retryable: true })
    } finally {
      await remote.close()
    }
  })

  it("a killed worker proxy: health drops, traffic moves to the other workers", async () => {
    const status = (await cluster.call("GET", "/api/v1/devices/4/status")).body
    expect(status).toMatchObject({ worker_number: 2, bank: "calibank", proxy_pid: expect.any(Number) })
    process.kill(status.proxy_pid, "SIGKILL")
    const bank = await waitUntil(async () => (await cluster.call("GET", "/api/v1/banks/calibank")).body, (b) => b.health.workers_up === 2)
    expect(bank.health).toMatchObject({ workers_total: 3, workers_up: 2, workers_down: 1 })
    expect(bank.health.success_rate).toBeLessThan(1)
    expect(bank.worker_assignments.find((a: { worker_number: number }) => a.worker_number === 2).vpn_status).toBe("down")
    expect((await cluster.call("GET", "/api/v1/cluster/health")).body).toMatchObject({ status: "healthy", bank_workers_up: 2, bank_workers_down: 1 })
    const urls = Array.from({ length: 4 }, (_, i) => `${fx.url}/after/${i}`)
    expect((await api.waitFor((await api.submit("graph", geoFetchGraph(urls, "us:ca"))).body.job_id)).status).toBe("COMPLETED")
    const workers = carriers("/after/")
    expect(workers).toHaveLength(4)
    expect(new Set(workers)).toEqual(new Set(["1", "3"]))
    // The router's recovery (and the VPN restart route) bring it back.
    expect((await cluster.call("POST", "/api/v1/devices/4/vpn/restart", {})).status).toBe(200)
    await waitUntil(async () => (await cluster.call("GET", "/api/v1/banks/calibank")).body, (b) => b.health.workers_up === 3)
  })

  it("idle stops the tunnels and releases the workers; resume restarts them on the same endpoint", async () => {
    const before = (await cluster.call("GET", "/api/v1/banks/calibank")).body
    const idle = await cluster.call("POST", "/api/v1/banks/calibank/idle")
    expect(idle.body).toMatchObject({ status: "idle", health: { workers_up: 0 } })
    expect(idle.body.worker_assignments.every((a: { vpn_status: string }) => a.vpn_status === "stopped")).toBe(true)
    const workers = (await cluster.call("GET", "/api/v1/workers/")).body
    expect(workers.filter((w: { bank: string | null }) => w.bank !== null)).toEqual([])
    expect(await fetch(before.endpoint).catch(() => "refused")).toBe("refused")
    const resumed = await cluster.call("POST", "/api/v1/banks/calibank/resume")
    expect(resumed.body).toMatchObject({ status: "active", endpoint: before.endpoint, health: { workers_up: 3 } })
    expect(resumed.body.worker_assignments.map((a: { vpn_profile: string }) => a.vpn_profile)).toEqual(before.worker_assignments.map((a: { vpn_profile: string }) => a.vpn_profile))
  })

  it("geo tor goes through the Tor SOCKS5 proxy", async () => {
    const before = socks.connections.length
    const j = await api.waitFor((await api.submit("graph", geoFetchGraph([`${fx.url}/tor/1`], "tor"))).body.job_id)
    expect(j.status).toBe("COMPLETED")
    expect(socks.connections.length).toBeGreaterThan(before)
    expect(carriers("/tor/")).toEqual([null])
  })

  it("a geo without a bank gets one from free workers (rule 4), reused from the cache (rule 5)", async () => {
    const j = await api.waitFor((await api.submit("graph", geoFetchGraph([`${fx.url}/tx/1`, `${fx.url}/tx/2`], "us:tx"))).body.job_id)
    expect(j.status).toBe("COMPLETED")
    const bank = (await cluster.call("GET", "/api/v1/banks/geo-us-tx")).body
    expect(bank).toMatchObject({ geo: "us:tx", status: "active", workers: [4, 5] })
    expect(carriers("/tx/").sort()).toEqual(["4", "5"])
    const router = (await cluster.call("GET", "/api/v1/cluster/health")).body.router
    expect(router.cached).toBeGreaterThan(0)
  })

  it("delete releases the workers", async () => {
    for (const tag of ["calibank", "geo-us-tx"]) expect((await cluster.call("DELETE", `/api/v1/banks/${tag}`)).status).toBe(200)
    expect((await cluster.call("GET", "/api/v1/banks/")).body).toEqual([])
    expect((await cluster.call("GET", "/api/v1/cluster/health")).body).toMatchObject({ workers_free: 16, banks_total: 0 })
    expect((await cluster.call("GET", "/api/v1/devices/3/status")).body).toMatchObject({ bank: null, proxy_pid: null })
  })
})
