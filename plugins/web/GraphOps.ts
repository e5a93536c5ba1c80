/**
 * The web acquisition operations of the graph engine (research-jobs spec, "Operations by
 * category"): `search` (Discover), `fetch`, `fetch_batch`, `tor_fetch` (Acquire), `filter_urls`
 * (Filter) and `links` (Transform: the links of pages, for iterative crawls). Every request
 * honours the op context's signal (cancel) and `limits.fetchTimeoutMs` (FETCH_TIMEOUT).
 */
import * as Schema from "effect/Schema"
import type { GraphOpContext, GraphOperation } from "../../core/Contribution.ts"
import { Page } from "../../core/GraphTypes.ts"
import { abortFailure, GeoField, JobFailure, type Route } from "../jobs/Contract.ts"
import { fetchPage, type PageFetchOptions } from "./Pages.ts"
import { type ProviderLookup, runSearch } from "./Search.ts"
import type { TorResolver } from "./Tor.ts"
import { filterUrls, pageLinks } from "./Urls.ts"

/** What the operations share: built once by the plugin's setup. */
export interface WebDeps {
  readonly pages: PageFetchOptions
  /** Routes geos: Tor geos through the SOCKS proxy, others through the GeoRouter or direct. */
  readonly tor: TorResolver
  readonly providers: ProviderLookup
  /** Provider id `search` uses when its params name none. */
  readonly defaultProvider: string
}

const withDefault = <S extends Schema.Schema.AnyNoContext>(schema: S, value: Schema.Schema.Type<S>, description: string) =>
  Schema.optionalWith(schema.annotations({ description }), { default: () => value })

const Geo = withDefault(GeoField, null, "geographic filter: null (direct), `tor`, `{country}[:{state}][:tor]`")

/** `search` params. */
export const SearchParams = Schema.Struct({
  query: withDefault(Schema.NullOr(Schema.String), null, "the query, when the op has no string input"),
  provider: withDefault(Schema.NullOr(Schema.String), null, "search provider id (default: the plugin's default_provider)"),
  max_results: withDefault(Schema.Int.pipe(Schema.between(1, 1000)), 10, "the most URLs returned"),
  categories: withDefault(Schema.NullOr(Schema.Union(Schema.String, Schema.Array(Schema.String))), null, "provider categories (SearXNG: general, news, ...)"),
  language: withDefault(Schema.NullOr(Schema.String), null, "language code, e.g. en"),
  time_range: withDefault(Schema.NullOr(Schema.Literal("day", "week", "month", "year")), null, "recency window")
})

/** `fetch` params. */
export const FetchParams = Schema.Struct({ url: Schema.String.annotations({ description: "absolute http(s) URL" }), geo: Geo })

/** `fetch_batch` params. */
export const FetchBatchParams = Schema.Struct({
  geo: Geo,
  concurrency: withDefault(Schema.NullOr(Schema.Int.pipe(Schema.between(1, 100))), null, "requests in flight at once (default: GRAPH_MAX_PARALLEL)"),
  skip_failed: withDefault(Schema.Boolean, true, "leave failed URLs out (reported in progress) instead of failing the op")
})

/** `tor_fetch` params. */
export const TorFetchParams = Schema.Struct({ url: Schema.String.annotations({ description: "absolute http(s) URL, typically an .onion one" }) })

/** `filter_urls` params. */
export const FilterUrlsParams = Schema.Struct({
  include: withDefault(Schema.Array(Schema.String), [], "regexes: keep URLs matching one (none: keep all)"),
  exclude: withDefault(Schema.Array(Schema.String), [], "regexes: drop URLs matching one"),
  same_domain_as: withDefault(Schema.NullOr(Schema.String), null, "keep URLs on this URL's domain or its subdomains"),
  domains: withDefault(Schema.Array(Schema.String), [], "keep URLs on these domains or their subdomains"),
  exclude_urls: withDefault(Schema.Array(Schema.String), [], "drop these URLs (compared normalised), e.g. the ones already fetched"),
  // Any int: templates compute it (`max_urls - length(urls)`), and a budget already spent is 0 or less.
  max: withDefault(Schema.NullOr(Schema.Int), null, "the most URLs kept; 0 or less keeps none"),
  dedupe: withDefault(Schema.Boolean, true, "normalise URLs and drop repeats (keeps the first)")
})

/** `links` params. */
export const LinksParams = Schema.Struct({
  same_domain: withDefault(Schema.Boolean, false, "keep only links on the page's own domain"),
  max: withDefault(Schema.NullOr(Schema.Int.pipe(Schema.positive())), null, "the most links returned")
})

const Urls = Schema.Array(Schema.String)

/** The failure `e` with its message prefixed by `op` (unless it already starts with it). */
const named = (op: string, e: unknown): JobFailure => {
  if (!(e instanceof JobFailure)) return new JobFailure("INTERNAL_ERROR", `${op}: ${e instanceof Error ? e.message : String(e)}`)
  return e.message.startsWith(`${op}:`) ? e : new JobFailure(e.kind, `${op}: ${e.message}`, e.retryable)
}

const resolveRoute = async (deps: WebDeps, op: string, geo: string | null, signal: AbortSignal): Promise<Route> => {
  try {
    return await deps.tor.resolve(geo, signal)
  } catch (e) {
    throw named(op, e)
  }
}

const size = (n: number) => (n < 10_240 ? `${n} B` : `${Math.round(n / 1024)} KiB`)

/** `search`: a query (string input or `params.query`) → `url[]`, distinct, in the provider's rank order. */
export const searchOp = (deps: WebDeps): GraphOperation<typeof SearchParams.Type, string | null | undefined, ReadonlyArray<string>> => ({
  name: "search",
  description: "Searches the web through a search provider (default SearXNG) and returns the result URLs in rank order.",
  category: "discover",
  inputTypes: ["string"],
  outputType: "url[]",
  params: SearchParams,
  input: Schema.NullishOr(Schema.String),
  output: Urls,
  handler: async (params, input, ctx) => {
    const query = typeof input === "string" && input.trim() !== "" ? input : (params.query ?? "")
    if (query.trim() === "") throw new JobFailure("VALIDATION_ERROR", "search: no query (give a string input or params.query)", false)
    const provider = params.provider ?? deps.defaultProvider
    const categories = params.categories === null ? undefined : typeof params.categories === "string" ? [params.categories] : params.categories
    try {
      const hits = await runSearch(deps.providers, provider, query, {
        limit: params.max_results,
        signal: ctx.signal,
        timeoutMs: ctx.limits.fetchTimeoutMs,
        ...(params.language ? { language: params.language } : {}),
        ...(params.time_range ? { timeRange: params.time_range } : {}),
        ...(categories ? { categories } : {})
      })
      await ctx.progress(100, `search: ${hits.length} results from ${provider} for ${JSON.stringify(query)}`)
      return hits.map((h) => h.url)
    } catch (e) {
      if (ctx.signal.aborted) throw abortFailure(ctx.signal)
      throw named("search", e)
    }
  }
})

/** `fetch`: `params.url` → `html` (a `Page`), through the route of `params.geo`. */
export const fetchOp = (deps: WebDeps): GraphOperation<typeof FetchParams.Type, unknown, Page> => ({
  name: "fetch",
  description: "Fetches one URL (http/https) and returns the page: final URL, status, content type and body.",
  category: "acquire",
  inputTypes: [],
  outputType: "html",
  params: FetchParams,
  input: Schema.Unknown,
  output: Page,
  handler: async (params, _input, ctx) => {
    const route = await resolveRoute(deps, "fetch", params.geo, ctx.signal)
    const page = await fetchPage(deps.pages, "fetch", params.url, route, ctx.signal, ctx.limits.fetchTimeoutMs)
    await ctx.progress(100, `fetched ${page.final_url} (HTTP ${page.status}, ${page.content_type || "no content type"}, ${size(page.html.length)})`)
    return page
  }
})

/** Runs `fn` over `items` with at most `concurrency` calls in flight; stops taking new items once `stop()` holds. */
const pool = async <T>(items: ReadonlyArray<T>, concurrency: number, stop: () => boolean, fn: (item: T, index: number) => Promise<void>): Promise<void> => {
  let next = 0
  const worker = async () => {
    while (next < items.length && !stop()) {
      const i = next++
      await fn(items[i]!, i)
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker))
}

/**
 * `fetch_batch`: `url[]` → `html[]` in input order, `concurrency` requests in flight. With
 * `skip_failed` (default) a failed URL is left out and reported in a progress message; when every
 * URL fails the op fails with the first error. Without it the first failure cancels the rest and
 * fails the op. A cancel fails the op at once whatever `skip_failed` says.
 */
export const fetchBatchOp = (deps: WebDeps): GraphOperation<typeof FetchBatchParams.Type, ReadonlyArray<string>, ReadonlyArray<Page>> => ({
  name: "fetch_batch",
  description: "Fetches a list of URLs concurrently and returns the pages in input order, leaving out (and reporting) the ones that fail.",
  category: "acquire",
  inputTypes: ["url[]"],
  outputType: "html[]",
  params: FetchBatchParams,
  input: Urls,
  output: Schema.Array(Page),
  handler: async (params, urls, ctx) => {
    if (urls.length === 0) return []
    const route = await resolveRoute(deps, "fetch_batch", params.geo, ctx.signal)
    // Our own controller, so the first failure without skip_failed can cancel the requests in flight.
    const local = new AbortController()
    const forward = () => local.abort(ctx.signal.reason)
    if (ctx.signal.aborted) forward()
    ctx.signal.addEventListener("abort", forward, { once: true })
    const pages: Array<Page | undefined> = new Array(urls.length)
    const failures: Array<{ url: string; failure: JobFailure }> = []
    let fatal: JobFailure | undefined
    let done = 0
    try {
      await pool(urls, params.concurrency ?? ctx.limits.maxParallel, () => local.signal.aborted, async (url, i) => {
        try {
          pages[i] = await fetchPage(deps.pages, "fetch_batch", url, route, local.signal, ctx.limits.fetchTimeoutMs)
          done++
          await ctx.progress(Math.floor((done * 100) / urls.length), `fetched ${done}/${urls.length}: ${url}`)
        } catch (e) {
          if (ctx.signal.aborted || fatal) return
          const failure = named("fetch_batch", e)
          done++
          failures.push({ url, failure })
          if (!params.skip_failed) {
            fatal = failure
            local.abort(failure)
            return
          }
          await ctx.progress(Math.floor((done * 100) / urls.length), `failed ${done}/${urls.length}: ${failure.message}`)
        }
      })
    } finally {
      ctx.signal.removeEventListener("abort", forward)
    }
    if (ctx.signal.aborted) throw abortFailure(ctx.signal)
    if (fatal) throw fatal
    const out = pages.filter((p): p is Page => p !== undefined)
    if (out.length === 0) {
      const first = failures[0]!.failure
      throw new JobFailure(first.kind, `fetch_batch: all ${urls.length} URLs failed; the first: ${first.message.replace(/^fetch_batch: /, "")}`, first.retryable)
    }
    if (failures.length > 0) await ctx.progress(100, `fetched ${out.length}/${urls.length} URLs, ${failures.length} failed`)
    return out
  }
})

/** `tor_fetch`: `params.url` (an `.onion` URL, or any) → `html`, always through the Tor SOCKS proxy. */
export const torFetchOp = (deps: WebDeps): GraphOperation<typeof TorFetchParams.Type, unknown, Page> => ({
  name: "tor_fetch",
  description: "Fetches one URL through the Tor SOCKS5 proxy (names resolved by Tor, so .onion addresses work).",
  category: "acquire",
  inputTypes: [],
  outputType: "html",
  params: TorFetchParams,
  input: Schema.Unknown,
  output: Page,
  handler: async (params, _input, ctx) => {
    try {
      const page = await fetchPage(deps.pages, "tor_fetch", params.url, deps.tor.tor(), ctx.signal, ctx.limits.fetchTimeoutMs)
      await ctx.progress(100, `fetched ${page.final_url} over Tor (HTTP ${page.status}, ${size(page.html.length)})`)
      return page
    } catch (e) {
      const f = named("tor_fetch", e)
      // A transport error here is most often the proxy itself: say which one was used.
      if (f.kind === "NETWORK_ERROR" && !/HTTP \d{3}/.test(f.message)) {
        throw new JobFailure(f.kind, `${f.message} (through the Tor SOCKS proxy ${deps.tor.socksUrl}; is tor running there?)`, f.retryable)
      }
      throw f
    }
  }
})

/** `filter_urls`: `url[]` → `url[]` by regexes, domains, `max` and normalised de-duplication (`Urls.filterUrls`). */
export const filterUrlsOp = (): GraphOperation<typeof FilterUrlsParams.Type, ReadonlyArray<string>, ReadonlyArray<string>> => ({
  name: "filter_urls",
  description: "Filters URLs by include/exclude regexes, domain and a maximum count, normalising and de-duplicating them.",
  category: "filter",
  inputTypes: ["url[]"],
  outputType: "url[]",
  params: FilterUrlsParams,
  input: Urls,
  output: Urls,
  handler: async (params, urls, ctx: GraphOpContext) => {
    const { kept, invalid } = filterUrls(urls, {
      include: params.include,
      exclude: params.exclude,
      sameDomainAs: params.same_domain_as,
      domains: params.domains,
      excludeUrls: params.exclude_urls,
      max: params.max,
      dedupe: params.dedupe
    })
    await ctx.progress(100, `kept ${kept.length} of ${urls.length} URLs${invalid > 0 ? ` (${invalid} not http(s) URLs dropped)` : ""}`)
    return kept
  }
})

/** `links`: `html` or `html[]` → `url[]`, the pages' absolute http(s) links, normalised, without repeats, in page order. */
export const linksOp = (): GraphOperation<typeof LinksParams.Type, Page | ReadonlyArray<Page>, ReadonlyArray<string>> => ({
  name: "links",
  description: "Extracts the absolute http(s) links of HTML pages (resolved, normalised, de-duplicated, in page order).",
  category: "transform",
  inputTypes: ["html", "html[]"],
  outputType: "url[]",
  params: LinksParams,
  input: Schema.Union(Page, Schema.Array(Page)),
  output: Urls,
  handler: async (params, input, ctx) => {
    const pages: ReadonlyArray<Page> = Array.isArray(input) ? input : [input as Page]
    const seen = new Set<string>()
    const out: string[] = []
    const full = () => params.max !== null && out.length >= params.max
    for (const page of pages) {
      if (ctx.signal.aborted) throw abortFailure(ctx.signal)
      if (full()) break
      for (const link of pageLinks(page, params.same_domain)) {
        if (seen.has(link)) continue
        seen.add(link)
        out.push(link)
        if (full()) break
      }
    }
    await ctx.progress(100, `${out.length} links from ${pages.length} pages`)
    return out
  }
})
