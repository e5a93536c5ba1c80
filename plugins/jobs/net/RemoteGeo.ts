/**
 * A geo router in another process: the resolver of a process that runs jobs but no router of its
 * own (`platform worker`, the jobs worker thread) when `jobs.geo_router_url` names the Cluster
 * API of one that does. Each resolution is `GET {url}/api/v1/georouter/route?geo=…` (rules 1-5
 * run there, banks are created there); the answer `{kind: "direct"}` or `{kind: "proxy",
 * proxy_url}` becomes a `Route` with an undici dispatcher built here (a `ProxyAgent` per HTTP
 * proxy, `fetch-socks` for SOCKS), kept per proxy URL.
 *
 * Errors: the router's refusal keeps its kind (`VALIDATION_ERROR` 422: bad filter, no profile;
 * `NETWORK_ERROR` 503: no workers, unhealthy bank, retryable); a router that does not answer is
 * `NETWORK_ERROR`, retryable; an aborted `signal` is the job's abort failure.
 */
import { socksDispatcher } from "fetch-socks"
import { ProxyAgent } from "undici"
import { JobFailure } from "../JobType.ts"
import { abortFailure } from "./Failure.ts"
import { type GeoResolver, parseGeo, type Route } from "./GeoRouting.ts"

/** Most time one resolution may take, ms (bank creation starts VPNs and proxies). */
const RESOLVE_TIMEOUT_MS = 60_000

/** The resolver over the Cluster API at `baseUrl` (`http://host:port`); `token`: its admin bearer token, or empty. */
export const remoteGeoResolver = (baseUrl: string, token = ""): GeoResolver & { readonly close: () => Promise<void> } => {
  const agents = new Map<string, ProxyAgent | ReturnType<typeof socksDispatcher>>()
  const dispatcherFor = (proxyUrl: string) => {
    let a = agents.get(proxyUrl)
    if (!a) {
      const socks = /^socks5h?:\/\/(\[[^\]]+\]|[^:/]+):(\d+)\/?$/i.exec(proxyUrl)
      a = socks
        ? socksDispatcher({ type: 5, host: socks[1]!.replace(/^\[|\]$/g, ""), port: Number(socks[2]) })
        : new ProxyAgent({ uri: proxyUrl, proxyTunnel: false })
      agents.set(proxyUrl, a)
    }
    return a
  }
  const where = baseUrl.replace(/\/+$/, "")
  return {
    resolve: async (geo, signal) => {
      // A filter outside the grammar fails here, before any request (VALIDATION_ERROR).
      parseGeo(geo)
      const deadline = AbortSignal.timeout(RESOLVE_TIMEOUT_MS)
      let res: Response
      try {
        res = await fetch(`${where}/api/v1/georouter/route?geo=${encodeURIComponent(geo ?? "")}`, {
          headers: { accept: "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
          signal: signal ? AbortSignal.any([signal, deadline]) : deadline
        })
      } catch (e) {
        if (signal?.aborted) throw abortFailure(signal)
        throw new JobFailure("NETWORK_ERROR", `geo router at ${where} did not answer: ${(e as Error).message}`, true)
      }
      const body = (await res.json().catch(() => ({}))) as { kind?: string; proxy_url?: string; label?: string | null; error?: string; retryable?: boolean }
      if (res.ok && body.kind === "direct") return { kind: "direct" }
      if (res.ok && body.kind === "proxy" && typeof body.proxy_url === "string") {
        const route: Route = { kind: "proxy", proxyUrl: body.proxy_url, dispatcher: dispatcherFor(body.proxy_url), ...(body.label ? { label: body.label } : {}) }
        return route
      }
      if (body.kind === "VALIDATION_ERROR") throw new JobFailure("VALIDATION_ERROR", body.error ?? `geo "${geo}" refused`, false)
      throw new JobFailure("NETWORK_ERROR", `geo router at ${where}: HTTP ${res.status}${body.error ? ` ${body.error}` : ""}`, body.retryable ?? true)
    },
    close: async () => {
      await Promise.all([...agents.values()].map((a) => a.close().catch(() => undefined)))
      agents.clear()
    }
  }
}
