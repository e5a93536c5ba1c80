/**
 * Tor routing: requests for `geo: tor` (or a geo whose type is `tor`, `us:tx:tor`) and every
 * `tor_fetch` go through the configured Tor SOCKS5 proxy (Debian's `tor` listens on
 * 127.0.0.1:9050). The host name travels to the proxy unresolved (SOCKS5 ATYP domain: remote
 * DNS), which is the only way `.onion` names work: they exist only inside Tor.
 *
 * Node's fetch reaches a SOCKS proxy through an undici dispatcher: `fetch-socks` builds one over
 * the `socks` client. It is created on first use and kept (its connections are reused), and
 * wrapped as a `GeoResolver` so the jobs `Fetcher` applies it like any other proxy route.
 */
import { socksDispatcher } from "fetch-socks"
import { directOnly, type GeoResolver, JobFailure, parseGeo, type Route } from "../jobs/Contract.ts"

/** Host and port of a `socks5h://host:port` (or `socks5://host:port`) URL. */
export interface SocksAddress {
  readonly host: string
  readonly port: number
}

/**
 * Parses a Tor SOCKS URL. Both `socks5h://` and `socks5://` are accepted and both resolve names
 * at the proxy (a Tor client must: `.onion` names cannot be resolved locally).
 * Throws `JobFailure` `VALIDATION_ERROR` for anything else.
 */
export const parseSocksUrl = (url: string): SocksAddress => {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    throw new JobFailure("VALIDATION_ERROR", `tor_socks_url ${JSON.stringify(url)} is not a URL (expected socks5h://host:port)`, false)
  }
  if (u.protocol !== "socks5h:" && u.protocol !== "socks5:") {
    throw new JobFailure("VALIDATION_ERROR", `tor_socks_url ${JSON.stringify(url)}: scheme must be socks5h:// (or socks5://)`, false)
  }
  const port = Number(u.port || 1080)
  return { host: u.hostname.replace(/^\[|\]$/g, ""), port }
}

/** True when `geo` asks for Tor: `tor`, or a filter whose type is `tor`. Throws like `parseGeo` on a malformed geo. */
export const wantsTor = (geo: string | null | undefined): boolean => {
  const f = parseGeo(geo)
  return f !== null && (f.tor || f.type === "tor")
}

/** A `GeoResolver` that sends Tor geos through the SOCKS proxy, with direct access to that route. */
export interface TorResolver extends GeoResolver {
  /** The Tor route (a `proxy` route carrying the SOCKS dispatcher). */
  readonly tor: () => Route
  /** The proxy URL in use (`socks5h://127.0.0.1:9050`). */
  readonly socksUrl: string
  /** Drops the dispatcher and its connections, aborting requests in flight (plugin shutdown). */
  readonly close: () => Promise<void>
}

/**
 * A resolver that answers Tor geos (`wantsTor`) with the SOCKS route of `socksUrl` and every other
 * geo with `fallback` (the `GeoRouter` service when one is plugged in, else `directOnly`).
 * The route is the one the jobs contract's `torAware` gives Chromium (`proxyUrl`
 * `socks5://host:port`, label `tor`; Chromium resolves names at a SOCKS5 proxy too) plus the
 * undici `dispatcher` Node's `fetch` needs, so one resolver serves both kinds of client. Nothing connects until a request goes out, so a missing
 * Tor daemon fails requests (`NETWORK_ERROR`), never construction.
 *
 * Throws `JobFailure` `VALIDATION_ERROR` when `socksUrl` is malformed.
 */
export const torAwareResolver = (socksUrl: string, fallback: GeoResolver = directOnly): TorResolver => {
  const addr = parseSocksUrl(socksUrl)
  let route: Route | undefined
  let dispatcher: ReturnType<typeof socksDispatcher> | undefined
  const tor = (): Route => {
    if (!route) {
      dispatcher = socksDispatcher({ type: 5, host: addr.host, port: addr.port })
      route = { kind: "proxy", proxyUrl: `socks5://${addr.host.includes(":") ? `[${addr.host}]` : addr.host}:${addr.port}`, dispatcher, label: "tor" }
    }
    return route
  }
  return {
    socksUrl,
    tor,
    resolve: async (geo, signal) => (wantsTor(geo) ? tor() : fallback.resolve(geo, signal)),
    close: async () => {
      const d = dispatcher
      route = undefined
      dispatcher = undefined
      // destroy, not close: close waits for requests in flight, which must not hold up a shutdown.
      await d?.destroy().catch(() => undefined)
    }
  }
}
