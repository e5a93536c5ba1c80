/**
 * Plugin `web`: the web acquisition graph operations (`search`, `fetch`, `fetch_batch`,
 * `tor_fetch`, `filter_urls`, `links`), the search-provider extension point (`Contract.ts`) with
 * its SearXNG provider, and Tor routing for `tor_fetch` and `geo: tor`.
 *
 * External services (a SearXNG instance, a Tor daemon) are only reached when an op runs: the
 * plugin boots without them and the ops then fail with a message naming the address tried.
 */
import * as Schema from "effect/Schema"
import { configOption, definePlugin, lazySetup } from "../../core/Plugin.ts"
import { Page } from "../../core/GraphTypes.ts"
import { fetchConfigFields } from "../jobs/Contract.ts"

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

const setup = lazySetup(() => import("./Setup.ts"))

export default definePlugin({
  name: "web",
  version: "0.1.0",
  description: "Web graph operations: search (provider extension point, SearXNG), fetch, fetch_batch, tor_fetch (Tor SOCKS5), filter_urls, links.",
  // Graph operations run inside graph jobs: depending on `jobs` boots this plugin in every
  // workers-only process and thread too, where the graph engine runs them.
  dependsOn: ["jobs"],
  // No routes of its own; graph operations are served by whoever runs graphs (the jobs listener).
  defaultListener: "jobs",
  config: WebConfig,
  resources: { WebPage: Page },
  setup
})
