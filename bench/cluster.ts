/**
 * cluster-vpn: profile selection and geo-route resolution over the full-size test inventory
 * (12,909 profiles, 127 countries, generated once into the temp folder), and the cost of a
 * request through a bank (HAProxy → tinyproxy worker, the `local` driver's real processes)
 * versus direct, on loopback.
 *
 * - `selections_per_s`: `select()` over every country and every country:state filter in turn;
 * - `resolve_cached_per_s` / `resolve_uncached_per_s`: the router answering `us:ca` with a
 *   healthy bank, from its 300 s cache / with the cache off (rule 2 computed each time);
 * - `direct_ms`, `bank_ms`, `worker_ms`: median of `CLUSTER_BENCH_N` (default 400) sequential
 *   GETs of a 1 KiB page with keep-alive, direct / through the bank's frontend / through one
 *   worker's proxy; `bank_overhead_ms` = bank − direct.
 */
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { Agent, ProxyAgent } from "undici"
import { makeCluster } from "../plugins/cluster-vpn/Cluster.ts"
import { makeGeoRouter } from "../plugins/cluster-vpn/GeoRouter.ts"
import { generateInventory, loadInventory } from "../plugins/cluster-vpn/Inventory.ts"
import { localDriver } from "../plugins/cluster-vpn/LocalDriver.ts"

const N = Number(process.env.CLUSTER_BENCH_N ?? 400)

const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const round = (x: number, d = 3) => Math.round(x * 10 ** d) / 10 ** d

/** Median milliseconds of N sequential GETs of `url` with `dispatcher`. */
const timeGets = async (url: string, dispatcher: unknown): Promise<number> => {
  const times: Array<number> = []
  for (let i = 0; i < N + 20; i++) {
    const t0 = performance.now()
    const res = await fetch(url, { dispatcher } as unknown as RequestInit)
    await res.arrayBuffer()
    if (res.status !== 200) throw new Error(`GET ${url}: ${res.status}`)
    if (i >= 20) times.push(performance.now() - t0)
  }
  return median(times)
}

export const benchCluster = async (): Promise<Record<string, number>> => {
  const profilesDir = path.join(os.tmpdir(), "platform-bench-cluster-profiles")
  let t0 = performance.now()
  generateInventory(profilesDir)
  const inv = loadInventory(profilesDir)
  const loadMs = performance.now() - t0
  console.log(`inventory: ${inv.size} profiles, ${inv.countries.length} countries (generate + load ${round(loadMs, 1)} ms)`)

  const filters = new Set<string>()
  for (const f of fs.readdirSync(profilesDir)) {
    const [country, state] = f.split("-")
    filters.add(country!)
    filters.add(`${country}:${state}`)
  }
  const parsed = [...filters].map((raw) => ({ raw, country: raw.split(":")[0]!, state: raw.split(":")[1] ?? null, type: null, tor: false }))
  let selections = 0
  // Summed so the selections cannot be optimised away.
  let selected = 0
  t0 = performance.now()
  while (performance.now() - t0 < 1000) {
    for (const f of parsed) selected += inv.select(f).length
    selections += parsed.length
  }
  const selectionsPerS = selections / ((performance.now() - t0) / 1000)
  console.log(`selection: ${parsed.length} filters, ${round(selectionsPerS, 0)} selections/s (${selected} profiles selected)`)

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "platform-bench-cluster-"))
  const driver = localDriver({ dir: path.join(dir, "local"), tinyproxy: "tinyproxy", haproxy: "haproxy", checkIntervalMs: 5000, hostPort: () => undefined })
  const server = http.createServer((_req, res) => res.end("x".repeat(1024)))
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/page`
  const agents: Array<{ close(): Promise<void> }> = []
  try {
    const cluster = makeCluster({
      file: path.join(dir, "cluster.json"),
      inventory: inv,
      driver,
      ports: { from: 19290, to: 19299 },
      layout: { master: "127.0.0.1", gateway: "127.0.0.1", worker: () => "127.0.0.1" },
      log: (m) => console.error(m)
    })
    const bank = await cluster.create({ name: "bench", workers: [1, 2, 3], filter: "us:ca" })
    const settings = { default_geo: "", fallback_enabled: true, fallback_to_direct: false, route_cache_ttl_s: 300, auto_bank_workers: 2, tor_socks_url: "socks5h://127.0.0.1:9050" }
    const rate = async (router: ReturnType<typeof makeGeoRouter>) => {
      await router.resolve("us:ca")
      let n = 0
      const start = performance.now()
      while (performance.now() - start < 1000) {
        for (let i = 0; i < 100; i++) await router.resolve("us:ca")
        n += 100
      }
      return n / ((performance.now() - start) / 1000)
    }
    const cachedRouter = makeGeoRouter(cluster, settings)
    const uncachedRouter = makeGeoRouter(cluster, { ...settings, route_cache_ttl_s: 0 })
    const cached = await rate(cachedRouter)
    const uncached = await rate(uncachedRouter)
    console.log(`resolve us:ca: cached ${round(cached, 0)}/s, uncached ${round(uncached, 0)}/s`)
    await cachedRouter.close()
    await uncachedRouter.close()

    const direct = new Agent()
    const viaBank = new ProxyAgent({ uri: bank.endpoint, proxyTunnel: false })
    const w = bank.worker_assignments[0]!
    const viaWorker = new ProxyAgent({ uri: `http://${w.worker_ip}:${w.proxy_port}`, proxyTunnel: false })
    agents.push(direct, viaBank, viaWorker)
    const directMs = await timeGets(url, direct)
    const workerMs = await timeGets(url, viaWorker)
    const bankMs = await timeGets(url, viaBank)
    console.log(`GET 1 KiB (median of ${N}): direct ${round(directMs)} ms, one worker ${round(workerMs)} ms, bank ${round(bankMs)} ms (+${round(bankMs - directMs)} ms)`)
    await cluster.remove(bank.tag)
    return {
      profiles: inv.size,
      countries: inv.countries.length,
      selections_per_s: round(selectionsPerS, 0),
      resolve_cached_per_s: round(cached, 0),
      resolve_uncached_per_s: round(uncached, 0),
      direct_ms: round(directMs),
      worker_ms: round(workerMs),
      bank_ms: round(bankMs),
      bank_overhead_ms: round(bankMs - directMs)
    }
  } finally {
    await Promise.all(agents.map((a) => a.close().catch(() => undefined)))
    await driver.close()
    server.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}
