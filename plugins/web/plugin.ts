/**
 * Plugin `web`: the web acquisition graph operations (`search`, `fetch`, `fetch_batch`,
 * `tor_fetch`, `filter_urls`, `links`), the search-provider extension point (`Contract.ts`) with
 * its SearXNG provider, and Tor routing for `tor_fetch` and `geo: tor`.
 *
 * External services (a SearXNG instance, a Tor daemon) are only reached when an op runs: the
 * plugin boots without them and the ops then fail with a message naming the address tried.
 */
import { Effect, Option, Schema } from "effect"
import { configOption, definePlugin, PluginBootError } from "../../core/Plugin.ts"
import { Page } from "../../core/GraphTypes.ts"
import { Extensions } from "../../core/Services.ts"
import { directOnly, fetchConfigFields, Fetcher, type GeoResolver, GeoRouter } from "../jobs/Contract.ts"
import { fetchBatchOp, fetchOp, filterUrlsOp, linksOp, searchOp, torFetchOp, type WebDeps } from "./GraphOps.ts"
import { HostLimits } from "./Pages.ts"
import { type ProviderLookup, type SearchProvider, SearchProviders, searchProviders, searxngProvider } from "./Search.ts"
import { torAwareResolver } from "./Tor.ts"

const opt = configOption

/** Config of `plugins.web` in platform.yaml. */
export const WebConfig = Schema.Struct({
  default_provider: opt(Schema.String, "searxng", "search provider id `search` uses when a graph names none"),
  searxng_url: opt(Schema.String.pipe(Schema.pattern(/^https?:\/\/\S+$/)), "http://127.0.0.1:8888", "SearXNG instance (JSON format enabled) the searxng provider queries at {url}/search"),
  searxng_max_pages: opt(Schema.Int.pipe(Schema.between(1, 50)), 5, "SearXNG result pages read at most per search"),
  tor_socks_url: opt(Schema.String.pipe(Schema.pattern(/^socks5h?:\/\/\S+:\d+\/?$/)), "socks5h://127.0.0.1:9050", "Tor SOCKS5 proxy for tor_fetch and geo: tor (names resolved by the proxy)"),
  max_page_bytes: opt(Schema.Int.pipe(Schema.between(1_024, 1024 * 1024 * 1024)), 5 * 1024 * 1024, "largest page body fetched, bytes; a larger one fails the fetch"),
  per_host_per_minute: opt(Schema.Number.pipe(Schema.greaterThan(0)), 600, "requests per minute to one host (host:port) per process, after a burst"),
  per_host_burst: opt(Schema.Int.pipe(Schema.between(1, 10_000)), 20, "requests to one host that may go out at once before per_host_per_minute applies"),
  ...fetchConfigFields
}).annotations({ identifier: "WebConfig" })
export type WebConfig = typeof WebConfig.Type

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

export default definePlugin({
  name: "web",
  version: "0.1.0",
  description: "Web graph operations: search (provider extension point, SearXNG), fetch, fetch_batch, tor_fetch (Tor SOCKS5), filter_urls, links.",
  // No routes of its own; graph operations are served by whoever runs graphs (the jobs listener).
  defaultListener: "jobs",
  config: WebConfig,
  resources: { WebPage: Page },
  setup: (ctx) =>
    Effect.gen(function* () {
      const c = ctx.config
      const fallback = Option.getOrElse(yield* Effect.serviceOption(GeoRouter), () => directOnly)
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
})
