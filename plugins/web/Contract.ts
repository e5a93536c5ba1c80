/**
 * The public contract of the `web` plugin: the only module of it other plugins import. A plugin
 * adds a web search provider by listing `web` in `dependsOn` and returning
 * `extensions: searchProviders(...)` from `setup`; other plugins (the crawl job) run searches by
 * provider id with `runSearch` over `Extensions.registry(SearchProviders)`, route Tor geos with
 * `torAwareResolver`, and share the URL rules and page decoding of the web operations.
 */
export { type ProviderLookup, runSearch, type SearchOptions, type SearchProvider, SearchProviders, type SearchResult, searchProviders, searxngProvider, type SearxngOptions } from "./Search.ts"
export { parseSocksUrl, type SocksAddress, torAwareResolver, type TorResolver, wantsTor } from "./Tor.ts"
export { filterUrls, httpUrl, inDomain, isHtml, normaliseUrl, pageLinks, type UrlFilter } from "./Urls.ts"
export { decodeBody, isTextual, pageBytes } from "./Pages.ts"
