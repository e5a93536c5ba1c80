/**
 * The `web` plugin's implementation, imported when the plugin is set up (not when `plugin.ts` is
 * read for `config validate` or help): the shared fetcher and search provider built from the
 * decoded config, and the graph operations over them.
 */
import * as Effect from "effect/Effect"
import { PluginBootError, type PluginContext } from "../../core/Plugin.ts"
import { Extensions } from "../../core/Services.ts"
import { directOnly, Fetcher, type GeoResolver, pluggedGeoResolver } from "../jobs/Contract.ts"
import { fetchBatchOp, fetchOp, filterUrlsOp, linksOp, searchOp, torFetchOp, type WebDeps } from "./GraphOps.ts"
import { HostLimits } from "./Pages.ts"
import type { WebConfig } from "./plugin.ts"
import { type ProviderLookup, type SearchProvider, SearchProviders, searchProviders, searxngProvider } from "./Search.ts"
import { torAwareResolver } from "./Tor.ts"

/**
 * What the operations run on, from a decoded config: the shared `Fetcher` (routing Tor geos
 * through `tor_socks_url`, others through `fallback`), per-host limits, and the `searxng`
 * provider to register. `providers` is where `search` looks providers up at run time.
 * Throws `JobFailure` `VALIDATION_ERROR` for a malformed `tor_socks_url`.
 */
export const makeWebDeps = (c: WebConfig, providers: ProviderLookup, fallback: GeoResolver = directOnly): { deps: WebDeps; searxng: SearchProvider } => {
  const tor = torAwareResolver(c.tor_socks_url, fallback)
  const fetcher = new Fetcher({ geo: tor, timeoutMs: c.fetch_timeout_ms, max429Retries: c.max_429_retries, backoffBaseMs: c.backoff_base_ms, backoffMaxMs: c.backoff_max_ms, maxBytes: c.max_page_bytes })
  return {
    deps: { pages: { fetcher, limits: new HostLimits(c.per_host_per_minute, c.per_host_burst), maxBytes: c.max_page_bytes }, tor, providers, defaultProvider: c.default_provider },
    searxng: searxngProvider({ baseUrl: c.searxng_url, fetcher, maxPages: c.searxng_max_pages })
  }
}

/** The plugin's graph operations over `deps`. */
export const webOps = (deps: WebDeps) => [searchOp(deps), fetchOp(deps), fetchBatchOp(deps), torFetchOp(deps), filterUrlsOp(), linksOp()]

/** `setup` of the plugin (see `plugin.ts`). */
export const setup = (ctx: PluginContext<WebConfig>) =>
  Effect.gen(function* () {
    const c = ctx.config
    const fallback = yield* pluggedGeoResolver
    const providers = (yield* Extensions).registry(SearchProviders)
    const { deps, searxng } = yield* Effect.try({
      try: () => makeWebDeps(c, providers, fallback),
      catch: (e) => new PluginBootError({ reason: (e as Error).message })
    })
    yield* Effect.addFinalizer(() => Effect.promise(() => deps.tor.close()))
    return {
      extensions: searchProviders(searxng),
      graphOps: webOps(deps),
      status: () => ({ search_providers: providers.ids(), default_provider: c.default_provider, searxng_url: c.searxng_url, tor_socks_url: c.tor_socks_url })
    }
  })
