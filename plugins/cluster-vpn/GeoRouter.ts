/**
 * The geo router (research-jobs spec, "Geographic filter", route selection rules 1-5), the
 * `GeoResolver` every fetching path of the platform asks (registered into the jobs plugin's
 * `GeoRouters` point):
 * 1. `tor` (and `…:tor` with no bank for it) → the Tor SOCKS proxy;
 * 2. a bank for the filter, active and healthy (a worker up) → its endpoint;
 * 3. an unhealthy (or idle) bank → recovery (down workers restarted; idle resumed); if it stays
 *    unhealthy and `fallback_enabled`, a healthy bank of the same country, else direct when
 *    `fallback_to_direct`, else the job fails (`NETWORK_ERROR`, retryable);
 * 4. no bank → one is created from free workers (`auto_bank_workers`) and its VPNs started;
 *    no free worker → fails "no workers available" (`NETWORK_ERROR`, retryable);
 * 5. routes are cached `route_cache_ttl_s` (300 s); a cached route is dropped as soon as its
 *    bank changes (idle, delete, update, a worker flipping down).
 *
 * A bank route carries an undici `ProxyAgent` (one per bank, `proxyTunnel: false` so plain
 * `http://` requests are sent to the bank as proxy requests and balanced one by one; `https://`
 * still tunnels with CONNECT), and its `proxyUrl` is what Chromium contexts take.
 */
import { socksDispatcher } from "fetch-socks"
import { ProxyAgent } from "undici"
import { type GeoFilter, type GeoResolver, JobFailure, parseGeo, type Route } from "../jobs/Contract.ts"
import type { Cluster } from "./Cluster.ts"
import { ClusterError, type Bank } from "./Model.ts"

/** Router settings (the `georouter` section of the config). */
export interface RouterSettings {
  readonly default_geo: string
  readonly fallback_enabled: boolean
  readonly fallback_to_direct: boolean
  readonly route_cache_ttl_s: number
  readonly auto_bank_workers: number
  readonly tor_socks_url: string
}

/** The router: a `GeoResolver` plus counters and shutdown. */
export interface GeoRouter extends GeoResolver {
  /** Resolutions answered from the cache / computed. */
  readonly stats: () => { cached: number; computed: number; cache_entries: number }
  /** Drops every cached route. */
  readonly clear: () => void
  /** Closes the agents (plugin shutdown). */
  readonly close: () => Promise<void>
}

const DIRECT: Route = { kind: "direct" }

/** The router over `cluster`. `now` is injectable for cache tests (milliseconds). */
export const makeGeoRouter = (cluster: Cluster, s: RouterSettings, now: () => number = Date.now): GeoRouter => {
  const cache = new Map<string, { route: Route; tag: string | null; expires: number }>()
  const agents = new Map<string, { endpoint: string; agent: ProxyAgent }>()
  let torRoute: Route | undefined
  let torDispatcher: ReturnType<typeof socksDispatcher> | undefined
  let cached = 0
  let computed = 0

  cluster.onChange((tag) => {
    for (const [k, v] of cache) if (v.tag === tag) cache.delete(k)
    const b = cluster.bank(tag)
    const a = agents.get(tag)
    if (a && (!b || b.status !== "active" || b.endpoint !== a.endpoint)) {
      agents.delete(tag)
      void a.agent.close().catch(() => undefined)
    }
  })

  const tor = (): Route => {
    if (!torRoute) {
      const m = /^socks5h?:\/\/(\[[^\]]+\]|[^:/]+):(\d+)\/?$/i.exec(s.tor_socks_url)
      if (!m) throw new JobFailure("VALIDATION_ERROR", `the Tor proxy "${s.tor_socks_url}" is not a socks5://host:port URL`, false)
      const host = m[1]!.replace(/^\[|\]$/g, "")
      torDispatcher = socksDispatcher({ type: 5, host, port: Number(m[2]) })
      torRoute = { kind: "proxy", proxyUrl: `socks5://${m[1]}:${m[2]}`, dispatcher: torDispatcher, label: "tor" }
    }
    return torRoute
  }
  const bankRoute = (b: Bank): Route => {
    let a = agents.get(b.tag)
    if (!a || a.endpoint !== b.endpoint) {
      a = { endpoint: b.endpoint, agent: new ProxyAgent({ uri: b.endpoint, proxyTunnel: false }) }
      agents.set(b.tag, a)
    }
    return { kind: "proxy", proxyUrl: b.endpoint, dispatcher: a.agent, label: `bank ${b.tag}` }
  }
  const healthy = (b: Bank | undefined): boolean => b !== undefined && b.status === "active" && b.health.workers_up > 0
  const bankFor = (f: GeoFilter) => cluster.banks().find((b) => b.geo === f.raw)

  const failure = (message: string) => new JobFailure("NETWORK_ERROR", message, true)
  const fallback = (f: GeoFilter, why: string): { route: Route; tag: string | null } => {
    if (s.fallback_enabled) {
      const similar = cluster.banks().find((b) => b.geo !== f.raw && b.filter.country === f.country && healthy(b) && (f.type === "tor") === (b.filter.type === "tor"))
      if (similar) return { route: bankRoute(similar), tag: similar.tag }
      if (s.fallback_to_direct) return { route: DIRECT, tag: null }
    }
    throw failure(`geo "${f.raw}": ${why}${s.fallback_enabled ? " and no bank of similar geography is healthy" : ""}`)
  }

  const compute = async (f: GeoFilter): Promise<{ route: Route; tag: string | null }> => {
    // Rule 1.
    if (f.tor) return { route: tor(), tag: null }
    let bank = bankFor(f)
    // Rule 2.
    if (bank && healthy(bank)) return { route: bankRoute(bank), tag: bank.tag }
    // Rule 3.
    if (bank) {
      try {
        bank = bank.status === "idle" ? await cluster.resume(bank.tag) : await cluster.recover(bank.tag)
      } catch (e) {
        if (!(e instanceof ClusterError)) throw e
      }
      if (bank && healthy(bank)) return { route: bankRoute(bank), tag: bank.tag }
      return fallback(f, `bank ${bank.tag} is unhealthy after recovery`)
    }
    // A `…:tor` filter no bank serves goes through Tor (rule 1's anonymity network).
    if (f.type === "tor") return { route: tor(), tag: null }
    // Rule 4.
    const free = cluster.freeWorkers()
    if (free.length === 0) throw failure(`geo "${f.raw}": no workers available to create a bank (all 16 are in banks)`)
    try {
      const created = await cluster.create({ name: `geo-${f.raw.replace(/:/g, "-")}`, workers: free.slice(0, s.auto_bank_workers), filter: f.raw })
      if (healthy(created)) return { route: bankRoute(created), tag: created.tag }
      return fallback(f, `the bank created for it (${created.tag}) has no worker up`)
    } catch (e) {
      if (e instanceof ClusterError && e.code === "no_matching_profile") throw new JobFailure("VALIDATION_ERROR", `geo "${f.raw}": ${e.message}`, false)
      if (e instanceof ClusterError) throw failure(`geo "${f.raw}": ${e.message}`)
      throw e
    }
  }

  const pending = new Map<string, Promise<{ route: Route; tag: string | null }>>()
  return {
    resolve: async (geo) => {
      // Throws VALIDATION_ERROR for a filter outside the grammar.
      const f = parseGeo(geo) ?? (s.default_geo ? parseGeo(s.default_geo) : null)
      if (f === null) return DIRECT
      const hit = cache.get(f.raw)
      if (hit && hit.expires > now()) {
        const b = hit.tag === null ? undefined : cluster.bank(hit.tag)
        if (hit.tag === null || healthy(b)) {
          cached++
          return hit.route
        }
        cache.delete(f.raw)
      }
      // One computation per filter at a time: concurrent jobs for a new geo share one bank.
      let p = pending.get(f.raw)
      if (!p) {
        computed++
        p = compute(f).finally(() => pending.delete(f.raw))
        pending.set(f.raw, p)
      }
      const r = await p
      if (s.route_cache_ttl_s > 0) cache.set(f.raw, { ...r, expires: now() + s.route_cache_ttl_s * 1000 })
      return r.route
    },
    stats: () => ({ cached, computed, cache_entries: cache.size }),
    clear: () => cache.clear(),
    close: async () => {
      cache.clear()
      const all = [...agents.values()]
      agents.clear()
      await Promise.all(all.map((a) => a.agent.close().catch(() => undefined)))
      await torDispatcher?.destroy().catch(() => undefined)
    }
  }
}
