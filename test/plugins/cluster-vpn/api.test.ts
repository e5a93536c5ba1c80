/**
 * The Cluster API's refusals and its security, on the real kernel with the `local` driver and
 * the listener beyond loopback (0.0.0.0, so the admin token is required): every create error of
 * the spec (workers in another bank, no matching profile, load balancer not configurable) is a
 * 4xx with `{error, code}` and leaves nothing half-created; bad ids and filters are 422; reads
 * need no token, mutations do (401 without or with a wrong one); pings answer with latency.
 */
import * as net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import { tempDir } from "../jobs/support.ts"
import { clusterClient, clusterYaml } from "./support.ts"

const TOKEN = "test-admin-token-0123456789"
let platform: Awaited<ReturnType<typeof startPlatform>>
let admin: ReturnType<typeof clusterClient>
let anon: ReturnType<typeof clusterClient>
let blocker: net.Server | undefined

beforeAll(async () => {
  process.env.CLUSTER_API_TEST_TOKEN = TOKEN
  platform = await startPlatform({
    cwd: ROOT,
    yaml: clusterYaml({ dataDir: tempDir("cluster-api-"), ports: { from: 19285, to: 19287 }, clusterHost: "0.0.0.0", cluster: `    admin_token_env: CLUSTER_API_TEST_TOKEN\n` })
  })
  const base = platform.url("cluster").replace("0.0.0.0", "127.0.0.1")
  admin = clusterClient(base, TOKEN)
  anon = clusterClient(base)
}, 60_000)
afterAll(async () => {
  await platform?.stop()
  await new Promise<void>((r) => (blocker ? blocker.close(() => r()) : r()))
})

const freeWorkers = async () => (await admin.call("GET", "/api/v1/cluster/health")).body.workers_free as number
const pids = async (ids: Array<number>) => Promise.all(ids.map(async (id) => (await admin.call("GET", `/api/v1/devices/${id}/status`)).body.proxy_pid))

describe("Cluster API: security beyond loopback", () => {
  it("reads need no token; mutations need the admin bearer token", async () => {
    expect((await anon.call("GET", "/api/v1/banks/")).status).toBe(200)
    expect((await anon.call("GET", "/api/v1/cluster/health")).status).toBe(200)
    const no = await anon.call("POST", "/api/v1/banks/", { name: "x", workers: [1], filter: "us" })
    expect(no).toMatchObject({ status: 401, body: { code: "unauthorized" } })
    const wrong = await clusterClient(platform.url("cluster").replace("0.0.0.0", "127.0.0.1"), "wrong").call("POST", "/api/v1/devices/3/exec", { command: "id" })
    expect(wrong.status).toBe(401)
    expect((await anon.call("DELETE", "/api/v1/banks/anything")).status).toBe(401)
    expect((await anon.call("POST", "/api/v1/devices/ping-all")).status).toBe(401)
    expect(await freeWorkers()).toBe(16)
  })
})

describe("Cluster API: refusals leave nothing half-created", () => {
  it("creates a bank for us, then refuses its workers to another bank (409)", async () => {
    expect((await admin.call("POST", "/api/v1/banks/", { name: "US", workers: [1, 2], filter: "us" })).status).toBe(201)
    const r = await admin.call("POST", "/api/v1/banks/", { name: "Other", workers: [2, 3], filter: "us:ny" })
    expect(r).toMatchObject({ status: 409, body: { code: "workers_busy", error: expect.stringMatching(/worker 2 \(bank us\) already in a bank/), workers: [2] } })
    expect((await admin.call("GET", "/api/v1/banks/other")).status).toBe(404)
    expect(await freeWorkers()).toBe(14)
    expect((await pids([5]))[0]).toBeNull()
    expect((await admin.call("POST", "/api/v1/banks/", { name: "us", workers: [4], filter: "us" })).body).toMatchObject({ code: "bank_exists" })
  })

  it("refuses a filter no profile matches (422) and a filter outside the grammar (422)", async () => {
    expect(await admin.call("POST", "/api/v1/banks/", { name: "Nowhere", workers: [3], filter: "zz" })).toMatchObject({ status: 422, body: { code: "no_matching_profile" } })
    expect(await admin.call("POST", "/api/v1/banks/", { name: "Tor", workers: [3], filter: "tor" })).toMatchObject({ status: 422, body: { code: "invalid_filter" } })
    expect(await admin.call("POST", "/api/v1/banks/", { name: "Bad", workers: [3], filter: "u$a" })).toMatchObject({ status: 422, body: { code: "invalid_filter" } })
    expect((await admin.call("POST", "/api/v1/banks/", { name: "Bad", workers: [17], filter: "us" })).status).toBe(422)
    expect((await admin.call("POST", "/api/v1/banks/", { name: "Bad", workers: [3, 3], filter: "us" })).body).toMatchObject({ code: "invalid_workers" })
    expect((await admin.call("GET", "/api/v1/profiles?filter=us:ca&limit=2")).body).toMatchObject({ count: expect.any(Number), profiles: [expect.stringMatching(/^us-ca-/), expect.stringMatching(/^us-ca-/)] })
    expect(await freeWorkers()).toBe(14)
  })

  it("refuses a bank whose load balancer cannot be configured (409): workers stopped again", async () => {
    // The next frontend port (19286) is taken by another process: HAProxy cannot bind it.
    blocker = net.createServer()
    await new Promise<void>((r) => blocker!.listen(19286, "127.0.0.1", () => r()))
    const r = await admin.call("POST", "/api/v1/banks/", { name: "Texas", workers: [6, 7], filter: "us:tx" })
    expect(r).toMatchObject({ status: 409, body: { code: "load_balancer", error: expect.stringMatching(/load balancer cannot be configured/) } })
    expect((await admin.call("GET", "/api/v1/banks/texas")).status).toBe(404)
    expect(await pids([8, 9])).toEqual([null, null])
    expect(await freeWorkers()).toBe(14)
    // The bank already serving is untouched.
    expect((await admin.call("GET", "/api/v1/banks/us")).body).toMatchObject({ status: "active", health: { workers_up: 2 } })
  })

  it("updates a bank (filter and workers), then refuses unknown tags and devices", async () => {
    const u = await admin.call("PUT", "/api/v1/banks/us", { filter: "us:ca", workers: [1, 2, 3] })
    expect(u).toMatchObject({ status: 200, body: { tag: "us", geo: "us:ca", workers: [1, 2, 3], health: { workers_up: 3 } } })
    expect(u.body.worker_assignments.every((a: { vpn_profile: string }) => a.vpn_profile.startsWith("us-ca-"))).toBe(true)
    expect((await admin.call("PUT", "/api/v1/banks/nope", { name: "x" })).status).toBe(404)
    expect((await admin.call("POST", "/api/v1/banks/nope/idle")).status).toBe(404)
    expect((await admin.call("GET", "/api/v1/devices/19/status")).status).toBe(422)
    expect((await admin.call("POST", "/api/v1/devices/3/exec", { command: "id" })).body).toMatchObject({ code: "not_supported" })
    expect((await admin.call("POST", "/api/v1/devices/1/vpn/start", {})).body).toMatchObject({ code: "not_a_worker" })
  })

  it("pings a device and all devices: success and average latency", async () => {
    const p = await admin.call("POST", "/api/v1/devices/3/ping")
    expect(p.body).toMatchObject({ id: 3, success: true, avg_latency_ms: expect.any(Number), sent: 3, received: 3 })
    const all = (await admin.call("POST", "/api/v1/devices/ping-all")).body
    expect(all).toHaveLength(18)
    expect(all.find((x: { id: number }) => x.id === 1)).toMatchObject({ success: true })
    expect(all.find((x: { id: number }) => x.id === 18)).toMatchObject({ success: false, avg_latency_ms: null })
    expect((await admin.call("GET", "/api/v1/devices/3/external-ip")).body).toMatchObject({ country: "us", region: "ca" })
  })

  it("measures a worker's speed through its tunnel and deletes the bank", async () => {
    const s = await admin.call("POST", "/api/v1/devices/3/speedtest")
    expect(s.body.download_speed_mbps).toBeGreaterThan(0)
    expect((await admin.call("DELETE", "/api/v1/banks/us")).status).toBe(200)
    expect(await freeWorkers()).toBe(16)
  })
})
