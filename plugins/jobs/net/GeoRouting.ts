/**
 * Where a request goes out: the plug-in point between fetching jobs and geographic routing.
 *
 * Jobs accept a `geo` filter (research-jobs spec, "Geographic filter"): `{country}[:{state}][:{type}]`
 * or `tor`. Resolving a filter to a regional proxy (a VPN bank's endpoint, the Tor proxy) is the
 * job of a geo router, which a plugin registers into the `GeoRouters` point (`cluster-vpn`).
 * Every fetching path (the `Fetcher`, the browser's per-job context, graph operations) asks the
 * `pluggedGeoResolver` for a `Route` and applies it; nothing in the jobs changes. Without a
 * router `directOnly` serves `null` geo directly and refuses any other value with a clear,
 * non-retryable error.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as ExtensionPoint from "../../../core/ExtensionPoint.ts"
import type { Registry } from "../../../core/Registry.ts"
import { Extensions } from "../../../core/Services.ts"
import { JobFailure } from "../JobType.ts"

/** A parsed geo filter. `tor: true` alone for the bare `tor`. */
export interface GeoFilter {
  readonly raw: string
  readonly country: string | null
  readonly state: string | null
  readonly type: string | null
  readonly tor: boolean
}

/**
 * How a request leaves this worker.
 * - `direct`: no proxy.
 * - `proxy`: through `proxyUrl` (`http://host:port`, `socks5://host:port`), the form Chromium's
 *   per-context `proxy.server` takes. `dispatcher` is an optional undici `Dispatcher` (e.g. a
 *   `ProxyAgent`) the resolver supplies for Node's `fetch`; a proxy route without one cannot be
 *   used by `Fetcher` and fails the request.
 */
export type Route =
  | { readonly kind: "direct" }
  | { readonly kind: "proxy"; readonly proxyUrl: string; readonly dispatcher?: unknown; readonly label?: string }

/** Resolves a job's `geo` to a route. Rejects with `JobFailure` when it cannot. */
export interface GeoResolver {
  readonly resolve: (geo: string | null | undefined, signal?: AbortSignal) => Promise<Route>
}

const GEO_RE = /^(?:tor|[a-z]{2,3}(?::[a-z]{2})?(?::tor)?)$/

/**
 * The `geo` field of a payload or operation: null (direct) or a filter in the grammar, so an
 * ill-formed filter is refused when the job is submitted (422), not when it runs. Use as
 * `geo: Schema.optionalWith(GeoField, { default: () => null })`.
 */
export const GeoField = Schema.NullOr(
  Schema.String.pipe(Schema.filter((g) => g.trim() === "" || GEO_RE.test(g.trim().toLowerCase()) || `invalid geo "${g}": expected {country}[:{state}][:tor] or tor`))
).annotations({ description: "geographic filter {country}[:{state}][:tor] or tor (research-jobs spec, \"Geographic filter\"); null goes direct" })

/**
 * Parses a geo filter (case-insensitive). Returns `null` for null/undefined/empty.
 * Throws `JobFailure` `VALIDATION_ERROR` on a value outside the grammar (`us`, `us:ca`,
 * `us:tx:tor`, `tor`).
 */
export const parseGeo = (geo: string | null | undefined): GeoFilter | null => {
  if (geo === null || geo === undefined || geo.trim() === "") return null
  const raw = geo.trim().toLowerCase()
  if (!GEO_RE.test(raw)) {
    throw new JobFailure("VALIDATION_ERROR", `invalid geo "${geo}": expected {country}[:{state}][:tor] or tor`, false)
  }
  if (raw === "tor") return { raw, country: null, state: null, type: "tor", tor: true }
  const [country, second, third] = raw.split(":")
  const state = second && second !== "tor" ? second : null
  const type = second === "tor" || third === "tor" ? "tor" : null
  return { raw, country: country!, state, type, tor: false }
}

/**
 * The resolver used until geographic routing exists: `null`/absent geo is a direct route; any
 * other (well-formed) value fails with `VALIDATION_ERROR` "geo routing is not configured" so
 * the job fails at once instead of silently going out from the wrong country.
 */
export const directOnly: GeoResolver = {
  resolve: async (geo) => {
    const filter = parseGeo(geo)
    if (filter === null) return { kind: "direct" }
    throw new JobFailure(
      "VALIDATION_ERROR",
      `geo routing is not configured: cannot route through "${filter.raw}" (send geo: null for a direct connection)`,
      false
    )
  }
}

/**
 * A geo router provided as a service (tests, embedders building their own layer). Fetching
 * plugins read it through `pluggedGeoResolver`, which prefers it to a registered router.
 */
export class GeoRouter extends Context.Tag("@platform/jobs/GeoRouter")<GeoRouter, GeoResolver>() {}

/** A geo router contributed by a plugin (`cluster-vpn`): `id` names it in `plugins list`. */
export interface GeoRouterContribution {
  readonly id: string
  readonly resolver: GeoResolver
  /**
   * Base URL other processes resolve through (`GET {url}/api/v1/georouter/route`), known once the
   * router's listener is bound: the jobs plugin hands it to its worker thread as `geo_router_url`.
   */
  readonly url?: () => string | undefined
}

/**
 * Where a plugin registers its geo router: `extensions: geoRouters({ id, resolver })`. At most
 * one is used: the first registered (ids sorted), so a second router is listed but idle.
 */
export const GeoRouters = ExtensionPoint.make<GeoRouterContribution>({ name: "geoRouters", kind: "geo router", owner: "jobs", idOf: (r) => r.id })

/** The registered routers in the order they are tried: by id (so "cluster-vpn" before "remote"). */
export const routersInOrder = (registry: Registry<GeoRouterContribution>): ReadonlyArray<GeoRouterContribution> =>
  [...registry.values()].sort((a, b) => a.id.localeCompare(b.id)).map((e) => e.value)

/** The contributions registering `routers` into `GeoRouters`. */
export const geoRouters = (...routers: ReadonlyArray<GeoRouterContribution>) => ExtensionPoint.extend(GeoRouters, ...routers)

/**
 * The resolver a fetching plugin hands its jobs and operations: the `GeoRouter` service when one
 * is provided, else the router registered into `GeoRouters`, else `directOnly`. The registry is
 * read at each resolution, not at `setup`, because the plugin registering the router may be set
 * up after the plugin asking (neither depends on the other).
 */
export const pluggedGeoResolver: Effect.Effect<GeoResolver, never, Extensions> = Effect.gen(function* () {
  const provided = yield* Effect.serviceOption(GeoRouter)
  if (Option.isSome(provided)) return provided.value
  const registry = (yield* Extensions).registry(GeoRouters)
  return {
    resolve: (geo, signal) => {
      return (routersInOrder(registry)[0]?.resolver ?? directOnly).resolve(geo, signal)
    }
  }
})

/**
 * A resolver sending `tor` (and any `…:tor` filter) through the Tor SOCKS5 proxy at `proxyUrl`
 * (`socks5://127.0.0.1:9050`, Debian's `tor`; the proxy resolves host names, so `.onion` names
 * work), and everything else to `base`. The route has no `dispatcher`: Chromium takes the URL
 * as is; a plugin fetching with Node's `fetch` adds a SOCKS dispatcher of its own.
 * Throws `JobFailure` VALIDATION_ERROR for an invalid filter or proxy URL.
 */
export const torAware = (base: GeoResolver, proxyUrl: string): GeoResolver => ({
  resolve: async (geo, signal) => {
    const filter = parseGeo(geo)
    if (filter !== null && (filter.tor || filter.type === "tor")) {
      if (!/^socks5h?:\/\/[^\s/]+:\d+\/?$/i.test(proxyUrl)) throw new JobFailure("VALIDATION_ERROR", `the Tor proxy "${proxyUrl}" is not a socks5://host:port URL`, false)
      return { kind: "proxy", proxyUrl: proxyUrl.replace(/^socks5h:/i, "socks5:").replace(/\/$/, ""), label: "tor" }
    }
    return base.resolve(geo, signal)
  }
})
