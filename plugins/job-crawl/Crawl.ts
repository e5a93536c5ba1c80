/**
 * The `crawl` job (research-jobs spec, "crawl"): an iterative, relevance-driven web crawl.
 *
 * Seeds come from the search provider. Each batch (one level of `max_depth`, "batch depth") is
 * fetched, reduced to main text, and scored 0..10 for relevance to the query by the model; pages
 * at or above `min_score` are kept, chunked and embedded into a vectl store, and their links,
 * ranked (the parent page's score plus the query terms in the link's URL), feed the next batch,
 * until `max_urls` pages were processed or `max_depth` batches ran. Then a synthesis answers the
 * query from the kept chunks closest to it, and a Markdown report (sources by URL, each page's
 * score) goes to the file store.
 *
 * One mechanism: every step is a registered graph operation called through the kernel's registry
 * (`search`, `filter_urls`, `fetch`, `fetch_batch`, `to_text_batch`, `relevance_filter`, `chunk`,
 * `embed_batch`, `store_vector`, `links`, `semantic_filter`, `integrate`), so a crawl fetches,
 * extracts, scores and embeds through exactly the code paths graphs use, with the same geo
 * routing, size cap, per-host rate limits, redirects (followed by the fetcher), non-HTML skipping
 * and cancellation. What is the crawler's own: the frontier (normalised, de-duplicated, only
 * http(s), ranked), robots.txt (RFC 9309 with `robots-parser`: a 4xx robots.txt allows all, an
 * unreachable or 5xx one disallows the host), per-host concurrency, and the stopping rules.
 *
 * Crawlee was considered for the frontier and queue and not used: its request queue, storage
 * and HTTP/browser crawlers would be a second fetching path beside the graph operations (with
 * its own proxy, retry and size handling), which the issue asks us not to have; the frontier
 * here is a ranked in-memory list per job, which is all a bounded crawl of `max_urls` needs.
 */
import * as Schema from "effect/Schema"
import { createRequire } from "node:module"
import type { GraphLimits, GraphOpContext, OutputFiles } from "../../core/Contribution.ts"
import type { Registry } from "../../core/Registry.ts"
import type { GraphOperation } from "../../core/Contribution.ts"
import { JobFailure, type JobContext, type JobType, GeoField } from "../jobs/Contract.ts"

// robots-parser is CommonJS (`module.exports = function`): required as such.
const robotsParser = createRequire(import.meta.url)("robots-parser") as typeof import("robots-parser").default

/** The `crawl` payload, exactly the spec's fields and defaults. */
export const CrawlPayload = Schema.Struct({
  query: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2000)),
  max_urls: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 10_000)), { default: () => 50 }),
  max_depth: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 50)).annotations({ description: "batch depth: batches of pages, the seeds being the first" }), { default: () => 3 }),
  geo: Schema.optionalWith(GeoField, { default: () => null }),
  ai_model: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }).annotations({ description: "model scoring pages and writing the synthesis; null: the service's default evaluation model" }),
  min_score: Schema.optionalWith(Schema.Number.pipe(Schema.between(0, 10)), { default: () => 6.0 }),
  search_provider: Schema.optional(Schema.String).annotations({ description: "search provider id (default: the configured one, `searxng`)" })
}).annotations({ identifier: "CrawlPayload" })
export type CrawlPayload = typeof CrawlPayload.Type

/** The `crawl` result, exactly the spec's fields. */
export const CrawlResult = Schema.Struct({
  total_urls: Schema.Int.annotations({ description: "distinct URLs discovered (seeds and links)" }),
  urls_processed: Schema.Int.annotations({ description: "pages fetched and scored" }),
  chunks_generated: Schema.Int,
  embeddings_stored: Schema.Boolean,
  synthesis: Schema.String,
  report_url: Schema.String
}).annotations({ identifier: "CrawlResult" })
export type CrawlResult = typeof CrawlResult.Type

/** Crawler settings (plugin config). */
export interface CrawlSettings {
  readonly defaultProvider: string
  readonly store: string
  readonly userAgent: string
  readonly perHostConcurrency: number
  readonly limits: GraphLimits
}

interface Scored {
  readonly url: string
  readonly title: string | null
  readonly text: string
  readonly score: number
  readonly reason: string
  readonly depth: number
}

const TERM = /[\p{L}\p{N}]{3,}/gu
const terms = (s: string) => new Set((s.toLowerCase().match(TERM) ?? []))

/** The registered operations a crawl needs; a missing one is a clear error naming its plugin. */
export const CRAWL_OPS = {
  search: "web",
  filter_urls: "web",
  fetch: "web",
  fetch_batch: "web",
  links: "web",
  to_text_batch: "text",
  relevance_filter: "llm",
  chunk: "job-vectl",
  embed_batch: "job-vectl",
  store_vector: "job-vectl",
  semantic_filter: "job-vectl",
  integrate: "llm"
} as const

/** Runs a crawl; `ops` is the kernel's graph operation registry. */
export const crawl = async (ops: Registry<GraphOperation>, s: CrawlSettings, p: CrawlPayload, ctx: JobContext): Promise<CrawlResult> => {
  const opCtx = (progress?: (pc: number, m?: string) => Promise<void>): GraphOpContext => ({
    signal: ctx.signal,
    files: ctx.files as OutputFiles,
    limits: s.limits,
    progress: progress ?? (async () => {})
  })
  const call = async <O>(name: keyof typeof CRAWL_OPS, input: unknown, params: Record<string, unknown> = {}): Promise<O> => {
    const op = ops.get(name)
    if (!op) throw new JobFailure("INTERNAL_ERROR", `crawl needs the graph operation "${name}" (plugin ${CRAWL_OPS[name]} is not enabled in this worker)`, false)
    const pa = Schema.decodeUnknownSync(op.params)(params)
    const inp = Schema.decodeUnknownSync(op.input)(input)
    return (await op.handler(pa, inp, opCtx())) as O
  }
  const model = p.ai_model === null ? {} : { model: p.ai_model }
  const report = async (pct: number, message: string) => ctx.progress(Math.min(99, Math.max(0, Math.round(pct))), message)

  // Seeds from the search provider.
  await report(1, `searching "${p.query}"`)
  const found = await call<Array<string>>("search", null, { query: p.query, provider: p.search_provider ?? s.defaultProvider, max_results: Math.min(50, p.max_urls) })
  const discovered = new Set<string>()
  const normalise = async (urls: ReadonlyArray<string>, exclude: ReadonlyArray<string>) =>
    urls.length === 0 ? [] : call<Array<string>>("filter_urls", urls, { include: ["^https?://"], dedupe: true, exclude_urls: exclude })
  let frontier: Array<{ url: string; rank: number }> = (await normalise(found, [])).map((url, i) => ({ url, rank: 100 - i }))
  for (const f of frontier) discovered.add(f.url)

  // robots.txt per origin, through the same `fetch` operation.
  const robots = new Map<string, (url: string) => boolean>()
  const allowed = async (url: string): Promise<boolean> => {
    const origin = new URL(url).origin
    let rule = robots.get(origin)
    if (rule === undefined) {
      const robotsUrl = `${origin}/robots.txt`
      try {
        const page = await call<{ html: string }>("fetch", null, { url: robotsUrl, geo: p.geo })
        const parsed = robotsParser(robotsUrl, page.html)
        rule = (u) => parsed.isAllowed(u, s.userAgent) !== false
      } catch (e) {
        if (ctx.signal.aborted) throw e
        // RFC 9309 2.3.1: a robots.txt answered 4xx allows everything; unreachable (5xx, network) disallows the host.
        const kind = e instanceof JobFailure ? e.kind : "NETWORK_ERROR"
        rule = kind === "REMOTE_ERROR" ? () => true : () => false
      }
      robots.set(origin, rule)
    }
    return rule(url)
  }

  const visited = new Set<string>()
  const kept: Array<Scored> = []
  const processed: Array<Scored> = []
  let blocked = 0
  let attempted = 0
  let chunksGenerated = 0
  let vectorsStored = 0
  let depth = 0
  for (; depth < p.max_depth && frontier.length > 0 && attempted < p.max_urls; depth++) {
    // The batch: the best-ranked unvisited URLs robots.txt allows, within the URL budget.
    frontier.sort((a, b) => b.rank - a.rank)
    const batch: Array<string> = []
    for (const f of frontier) {
      if (batch.length >= p.max_urls - attempted) break
      if (visited.has(f.url)) continue
      if (!(await allowed(f.url))) {
        blocked++
        visited.add(f.url)
        continue
      }
      batch.push(f.url)
    }
    if (batch.length === 0) break
    for (const u of batch) visited.add(u)
    attempted += batch.length
    const base = (100 * depth) / p.max_depth
    await report(base, `batch ${depth + 1}/${p.max_depth}: fetching ${batch.length} page(s)`)

    // Per-host concurrency: one fetch_batch per host, the hosts in parallel.
    const byHost = new Map<string, Array<string>>()
    for (const u of batch) byHost.set(new URL(u).host, [...(byHost.get(new URL(u).host) ?? []), u])
    const pages = (await Promise.all([...byHost.values()].map((urls) =>
      call<Array<{ url: string; final_url: string; html: string }>>("fetch_batch", urls, { geo: p.geo, concurrency: s.perHostConcurrency, skip_failed: true }).catch((e: unknown) => {
        if (ctx.signal.aborted) throw e
        return [] // every URL of this host failed; the others go on
      })
    ))).flat()
    const texts = pages.length === 0 ? [] : await call<Array<{ url: string | null; title: string | null; text: string }>>("to_text_batch", pages)
    const scored = texts.length === 0 ? [] : await call<Array<{ url: string | null; title: string | null; text: string; score: number; reason: string }>>("relevance_filter", texts, { query: p.query, min_score: 0, concurrency: 4, ...model })
    const batchScored: Array<Scored> = scored.map((d) => ({ url: d.url ?? "", title: d.title, text: d.text, score: d.score, reason: d.reason, depth }))
    processed.push(...batchScored)
    const good = batchScored.filter((d) => d.score >= p.min_score)
    kept.push(...good)

    // Kept pages: chunked, embedded and stored.
    if (good.length > 0) {
      const chunks = await call<Array<unknown>>("chunk", good.map((d) => ({ url: d.url, title: d.title, text: d.text })))
      chunksGenerated += chunks.length
      if (chunks.length > 0) {
        const vectors = await call<Array<unknown>>("embed_batch", chunks)
        const stored = await call<{ stored: number; total: number }>("store_vector", vectors, { store: s.store })
        vectorsStored += vectors.length
        void stored
      }
    }

    // Next batch: links of the kept pages, ranked by their page's score and the query terms in them.
    const q = terms(p.query)
    const next = new Map<string, number>()
    for (const d of good) {
      const page = pages.find((pg) => pg.final_url === d.url || pg.url === d.url)
      if (!page) continue
      const links = await call<Array<string>>("links", page)
      for (const l of links) {
        const overlap = [...terms(decodeURIComponent(new URL(l).pathname))].filter((t) => q.has(t)).length
        next.set(l, Math.max(next.get(l) ?? -1, d.score + overlap))
      }
    }
    const fresh = await normalise([...next.keys()], [...visited])
    for (const u of fresh) discovered.add(u)
    frontier = [...frontier.filter((f) => !visited.has(f.url)), ...fresh.map((url) => ({ url, rank: next.get(url) ?? 0 }))]
    await report((100 * (depth + 1)) / p.max_depth, `batch ${depth + 1}/${p.max_depth}: ${pages.length} fetched, ${good.length} kept (score ≥ ${p.min_score}); ${attempted}/${p.max_urls} URLs tried, ${frontier.length} in the frontier${blocked ? `, ${blocked} disallowed by robots.txt` : ""}`)
  }

  // Synthesis from the kept chunks closest to the query.
  let synthesis = ""
  if (kept.length > 0) {
    await report(96, "synthesizing")
    const chunks = await call<Array<unknown>>("chunk", kept.map((d) => ({ url: d.url, title: d.title, text: d.text })))
    const best = await call<Array<unknown>>("semantic_filter", chunks, { query: p.query, top_k: 20 })
    synthesis = await call<string>("integrate", best, { query: p.query, ...model })
  } else {
    synthesis = `No page scored at or above ${p.min_score} for "${p.query}" among the ${processed.length} processed.`
  }

  // The report: synthesis, kept sources with their scores, the other pages processed.
  const byScore = [...kept].sort((a, b) => b.score - a.score)
  const cell = (s: string | null) => (s ?? "").replace(/\|/g, "\\|").replace(/\s+/g, " ").trim()
  const md = [
    `# Crawl report: ${p.query}`,
    "",
    `${processed.length} page(s) processed in ${depth} batch(es) (max_urls ${p.max_urls}, max_depth ${p.max_depth}); ${kept.length} kept at min_score ${p.min_score}; ${discovered.size} URL(s) discovered${blocked ? `; ${blocked} disallowed by robots.txt` : ""}.`,
    "",
    "## Synthesis",
    "",
    synthesis,
    "",
    "## Sources",
    "",
    "| # | score | URL | title |",
    "|---|---|---|---|",
    ...byScore.map((d, i) => `| ${i + 1} | ${d.score.toFixed(1)} | ${d.url} | ${cell(d.title)} |`),
    "",
    "## Pages below min_score",
    "",
    ...(processed.filter((d) => d.score < p.min_score).map((d) => `- ${d.score.toFixed(1)} ${d.url}`)),
    ""
  ].join("\n")
  const stored = await ctx.files.put("crawl-report.md", md, "text/markdown")
  await report(100, `${kept.length} of ${processed.length} page(s) kept; report stored`)
  return {
    total_urls: discovered.size,
    urls_processed: processed.length,
    chunks_generated: chunksGenerated,
    embeddings_stored: vectorsStored > 0,
    synthesis,
    report_url: stored.url
  }
}

/** The `crawl` job type over the kernel's operation registry. */
export const crawlJob = (ops: Registry<GraphOperation>, s: CrawlSettings): JobType<CrawlPayload, CrawlResult> => ({
  id: "crawl",
  description: "Iterative, relevance-driven web crawl: search seeds, fetch, score pages with the model, keep and embed the relevant ones, follow their links; synthesis and report.",
  payload: CrawlPayload,
  result: CrawlResult,
  handler: (p, ctx) => crawl(ops, s, p, ctx)
})
