/**
 * The geo router's selection rules 1-5 over a cluster with the `local` driver (real tinyproxy
 * workers and HAProxy frontends, no kernel): Tor, a healthy bank, recovery of a bank whose
 * workers died, fallback to a bank of the same country when recovery fails (an idle bank whose
 * worker joined another bank), failure or direct when fallback says so, a bank created for a new
 * geo, "no workers available", the route cache and its invalidation, `default_geo`; and banks
 * brought back up by a fresh process (`restore`).
 */
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Cluster, makeCluster } from "../../../plugins/cluster-vpn/Cluster.ts"
import { makeGeoRouter, type RouterSettings } from "../../../plugins/cluster-vpn/GeoRouter.ts"
import { generateInventory, loadInventory } from "../../../plugins/cluster-vpn/Inventory.ts"
import { localDriver } from "../../../plugins/cluster-vpn/LocalDriver.ts"
import type { Driver } from "../../../plugins/cluster-vpn/Model.ts"
import { tempDir } from "../jobs/support.ts"

const dir = tempDir("cluster-router-")
const drivers: Array<Driver> = []
let cluster: Cluster
let clock = 0
const settings: RouterSettings = { default_geo: "", fallback_enabled: true, fallback_to_direct: false, route_cache_ttl_s: 300, auto_bank_workers: 1, tor_socks_url: "socks5h://127.0.0.1:9" }

const open = () => {
  generateInventory(path.join(dir, "profiles"), 1500)
  const driver = localDriver({ dir: path.join(dir, "local"), tinyproxy: "tinyproxy", haproxy: "haproxy", checkIntervalMs: 200, hostPort: () => undefined })
  drivers.push(driver)
  return makeCluster({
    file: path.join(dir, "cluster.json"),
    inventory: loadInventory(path.join(dir, "profiles")),
    driver,
    ports: { from: 19288, to: 19292 },
    layout: { master: "127.0.0.1", gateway: "127.0.0.1", worker: () => "127.0.0.1" },
    log: () => undefined
  })
}
const router = (s: Partial<RouterSettings> = {}) => makeGeoRouter(cluster, { ...settings, ...s }, () => clock)
const failure = (p: Promise<unknown>) => p.then(() => { throw new Error("resolved") }, (e: { kind: string; message: string; retryable?: boolean }) => e)

beforeAll(() => {
  cluster = open()
})
afterAll(async () => {
  await Promise.all(drivers.map((d) => d.close()))
})

describe("geo router", () => {
  it("rule 1: tor is the SOCKS proxy; rule 2: a healthy bank is its endpoint; rule 5: cached", async () => {
    const r = router()
    expect(await r.resolve("tor")).toMatchObject({ kind: "proxy", proxyUrl: "socks5://127.0.0.1:9", label: "tor" })
    const bank = await cluster.create({ name: "ca", workers: [1], filter: "us:ca" })
    expect(await r.resolve("us:ca")).toMatchObject({ kind: "proxy", proxyUrl: bank.endpoint, label: "bank ca", dispatcher: expect.anything() })
    expect(await r.resolve("US:CA")).toMatchObject({ proxyUrl: bank.endpoint })
    expect(r.stats()).toMatchObject({ computed: 2, cached: 1 })
    clock += 301_000
    await r.resolve("us:ca")
    expect(r.stats()).toMatchObject({ computed: 3 })
    expect(await r.resolve(null)).toEqual({ kind: "direct" })
    expect(await failure(r.resolve("not a geo"))).toMatchObject({ kind: "VALIDATION_ERROR" })
    expect(await router({ default_geo: "us:ca" }).resolve(undefined)).toMatchObject({ proxyUrl: bank.endpoint })
    await r.close()
  })

  it("rule 3: a bank whose workers died is recovered (workers restarted) before its route is given", async () => {
    const r = router()
    await r.resolve("us:ca")
    const pid = drivers[0]!.workerFacts(1).proxy_pid as number
    process.kill(pid, "SIGKILL")
    // Under load the killed proxy's port may answer a moment longer: check until it is seen down.
    for (let i = 0; i < 50; i++) {
      await new Promise((res) => setTimeout(res, 100))
      await cluster.checkHealth()
      if (cluster.bank("ca")!.health.workers_up === 0) break
    }
    expect(cluster.bank("ca")!.health.workers_up).toBe(0)
    // The cached route is dropped when its bank flips unhealthy.
    expect(await r.resolve("us:ca")).toMatchObject({ label: "bank ca" })
    expect(r.stats().computed).toBe(2)
    expect(cluster.bank("ca")!.health.workers_up).toBe(1)
    expect(drivers[0]!.workerFacts(1).proxy_pid).not.toBe(pid)
    await r.close()
  })

  it("rule 3: recovery failing, fallback to a bank of the same country; else failure, or direct when allowed", async () => {
    await cluster.idle("ca")
    await cluster.create({ name: "tx", workers: [1], filter: "us:tx" })
    // Resuming ca needs worker 1, now in tx: recovery fails, tx (same country) serves.
    expect(await router().resolve("us:ca")).toMatchObject({ label: "bank tx" })
    expect(await failure(router({ fallback_enabled: false }).resolve("us:ca"))).toMatchObject({ kind: "NETWORK_ERROR", retryable: true, message: expect.stringMatching(/bank ca is unhealthy after recovery/) })
    await cluster.idle("tx")
    await cluster.create({ name: "de", workers: [1], filter: "de" })
    expect(await failure(router().resolve("us:ca"))).toMatchObject({ kind: "NETWORK_ERROR", message: expect.stringMatching(/no bank of similar geography is healthy/) })
    expect(await router({ fallback_to_direct: true }).resolve("us:ca")).toEqual({ kind: "direct" })
    for (const tag of ["ca", "tx", "de"]) await cluster.remove(tag)
  })

  it("rule 4: a new geo gets a bank from free workers; none free: no workers available", async () => {
    const r = router({ auto_bank_workers: 2 })
    const [a, b] = await Promise.all([r.resolve("us:ny"), r.resolve("us:ny")])
    expect(a).toBe(b)
    expect(cluster.bank("geo-us-ny")).toMatchObject({ geo: "us:ny", workers: [1, 2], status: "active" })
    expect(await failure(r.resolve("zz"))).toMatchObject({ kind: "VALIDATION_ERROR", message: expect.stringMatching(/no VPN profile matches filter "zz"/) })
    await cluster.create({ name: "rest", workers: [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16], filter: "us" })
    expect(await failure(r.resolve("us:fl"))).toMatchObject({ kind: "NETWORK_ERROR", retryable: true, message: expect.stringMatching(/no workers available/) })
    await cluster.remove("rest")
    await r.close()
  })

  it("a fresh process brings the active banks back up (restore)", async () => {
    const before = cluster.bank("geo-us-ny")!
    await drivers[0]!.close()
    cluster = open()
    expect(cluster.bank("geo-us-ny")).toMatchObject({ status: "active", port: before.port })
    await cluster.restore()
    expect(cluster.bank("geo-us-ny")!.health).toMatchObject({ workers_up: 2 })
    expect((await fetch(`http://127.0.0.1:${before.port}/`).catch(() => null))?.status).toBeGreaterThanOrEqual(400)
    await cluster.remove("geo-us-ny")
  })
})
