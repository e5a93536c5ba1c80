/**
 * Web search behind an extension point: the `search` graph op (and the crawl job) name a provider
 * id, and any plugin can contribute a provider (`SearchProviders`). This plugin ships `searxng`,
 * a client of the SearXNG JSON API (the open-source metasearch engine users self-host).
 */
import { JobFailure, type Fetcher } from "../jobs/Contract.ts"
import * as ExtensionPoint from "../../core/ExtensionPoint.ts"
import { normaliseUrl } from "./Urls.ts"

/** One search hit: an absolute URL, its title and the provider's snippet (may be empty). */
export interface SearchResult {
  readonly url: string
  readonly title: string
  readonly snippet: string
}

/** Options of one search. */
export interface SearchOptions {
  /** The most results wanted; a provider may return fewer (never needs to return more). */
  readonly limit: number
  /** Language code (`en`, `de-DE`) where the provider supports it. */
  readonly language?: string
  /** Recency window where the provider supports it. */
  readonly timeRange?: "day" | "week" | "month" | "year"
  /** Provider categories (SearXNG: `general`, `news`, ...). */
  readonly categories?: ReadonlyArray<string>
  /** Deadline of each request to the provider, ms (default: the provider's own). */
  readonly timeoutMs?: number
  /** Cancels the search (graph cancel); providers pass it to every request. */
  readonly signal: AbortSignal
}

/**
 * A web search provider. `search` resolves to hits in the provider's rank order, or rejects with
 * `JobFailure` (`NETWORK_ERROR` when the service is unreachable, `REMOTE_ERROR` for answers it
 * cannot use, `CANCELLED` on abort).
 */
export interface SearchProvider {
  /** The id graphs name in `provider` (`searxng`). */
  readonly id: string
  readonly description: string
  readonly search: (query: string, options: SearchOptions) => Promise<ReadonlyArray<SearchResult>>
}

/** The extension point search providers register into (owned by the `web` plugin). */
export const SearchProviders = ExtensionPoint.make<SearchProvider>({ name: "searchProviders", kind: "search provider", owner: "web", idOf: (p) => p.id })

/** The contributions registering `providers` (return them as `extensions` from `setup`; list `web` in `dependsOn`). */
export const searchProviders = (...providers: ReadonlyArray<SearchProvider>) => ExtensionPoint.extend(SearchProviders, ...providers)

/** What `runSearch` needs of the provider registry (the kernel's `Extensions.registry(SearchProviders)` is one). */
export interface ProviderLookup {
  readonly get: (id: string) => SearchProvider | undefined
  readonly ids: () => ReadonlyArray<string>
}

/**
 * Runs `query` on provider `providerId` and returns at most `options.limit` hits with distinct
 * http(s) URLs (compared normalised: `normaliseUrl`), in the provider's rank order, each URL as
 * the provider gave it. `what` prefixes error messages (the op name).
 *
 * Errors (`JobFailure`): `VALIDATION_ERROR` for an empty query or an unknown provider (the message
 * lists the registered ids); otherwise whatever the provider rejects with.
 */
export const runSearch = async (
  providers: ProviderLookup,
  providerId: string,
  query: string,
  options: SearchOptions,
  what = "search"
): Promise<ReadonlyArray<SearchResult>> => {
  if (query.trim() === "") throw new JobFailure("VALIDATION_ERROR", `${what}: the query is empty`, false)
  const provider = providers.get(providerId)
  if (!provider) {
    const known = providers.ids()
    throw new JobFailure("VALIDATION_ERROR", `${what}: unknown search provider "${providerId}" (registered: ${known.length ? known.join(", ") : "none"})`, false)
  }
  const hits = await provider.search(query.trim(), options)
  const seen = new Set<string>()
  const out: SearchResult[] = []
  for (const h of hits) {
    const key = normaliseUrl(h.url)
    if (key === undefined || seen.has(key)) continue
    seen.add(key)
    out.push(h)
    if (out.length >= options.limit) break
  }
  return out
}

/** Settings of the SearXNG provider. */
export interface SearxngOptions {
  /** Instance base URL (`http://127.0.0.1:8888`); requests go to `{baseUrl}/search`. */
  readonly baseUrl: string
  readonly fetcher: Fetcher
  /** Result pages read at most per search (SearXNG pages hold ~10-20 hits); default 5. */
  readonly maxPages?: number
}

interface SearxngAnswer {
  readonly results?: ReadonlyArray<{ url?: unknown; title?: unknown; content?: unknown }>
}

/**
 * The `searxng` provider: `GET {baseUrl}/search?q=&format=json&pageno=N` (plus `language`,
 * `time_range`, `categories` when given), reading `results[].url/title/content`. Pages are read
 * until `limit` distinct URLs are found, a page adds nothing new, or `maxPages` is reached.
 * A 403 means the instance has the JSON format switched off (`search.formats` in its
 * settings.yml), and the error says so.
 */
export const searxngProvider = (o: SearxngOptions): SearchProvider => {
  const base = o.baseUrl.replace(/\/+$/, "")
  const maxPages = o.maxPages ?? 5
  return {
    id: "searxng",
    description: `SearXNG metasearch (JSON API) at ${base}`,
    search: async (query, opts) => {
      const out: SearchResult[] = []
      const seen = new Set<string>()
      for (let page = 1; page <= maxPages && out.length < opts.limit; page++) {
        const qs = new URLSearchParams({ q: query, format: "json", pageno: String(page) })
        if (opts.language) qs.set("language", opts.language)
        if (opts.timeRange) qs.set("time_range", opts.timeRange)
        if (opts.categories && opts.categories.length > 0) qs.set("categories", opts.categories.join(","))
        const what = `searxng search at ${base}`
        const res = await o.fetcher.request({
          url: `${base}/search?${qs}`,
          what,
          signal: opts.signal,
          ...(opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }),
          headers: { accept: "application/json" },
          accept: (s) => (s >= 200 && s < 300) || s === 403
        })
        if (res.status === 403) {
          throw new JobFailure("REMOTE_ERROR", `${what} answered 403: the instance does not serve format=json (add json to search.formats in its settings.yml)`, false)
        }
        const body = res.json<SearxngAnswer>()
        if (!body || !Array.isArray(body.results)) throw new JobFailure("REMOTE_ERROR", `${what}: the answer has no results list (not a SearXNG JSON answer)`, false)
        let added = 0
        for (const r of body.results) {
          if (typeof r.url !== "string") continue
          const key = normaliseUrl(r.url)
          if (key === undefined || seen.has(key)) continue
          seen.add(key)
          added++
          out.push({ url: r.url, title: typeof r.title === "string" ? r.title : "", snippet: typeof r.content === "string" ? r.content : "" })
        }
        if (added === 0) break
      }
      return out.slice(0, opts.limit)
    }
  }
}
