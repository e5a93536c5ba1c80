/**
 * Plugin `job-crawl`: the `crawl` job type (research-jobs spec, "crawl"), an iterative,
 * relevance-driven crawl built from the graph operations of the `web`, `text`, `job-vectl` and
 * `llm` plugins (see `Crawl.ts`).
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { configOption, definePlugin } from "../../core/Plugin.ts"
import { GraphOpRegistry } from "../../core/Services.ts"
import { jobTypes } from "../jobs/Contract.ts"
import { CrawlPayload, CrawlResult, crawlJob } from "./Crawl.ts"

const opt = configOption

/** Config of `plugins.job-crawl`. */
export const CrawlConfig = Schema.Struct({
  search_provider: opt(Schema.String, "searxng", "the {search_default}: search provider of seeds when a payload names none"),
  store: opt(Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/)), "crawl", "vectl store receiving the kept pages' embeddings"),
  user_agent: opt(Schema.String.pipe(Schema.minLength(1)), "PlatformCrawler", "product token matched against robots.txt groups"),
  per_host_concurrency: opt(Schema.Int.pipe(Schema.between(1, 32)), 2, "pages fetched at once from one host (the web plugin's per-host rate limit paces them too)"),
  max_parallel: opt(Schema.Int.pipe(Schema.between(1, 256)), 10, "operations' parallelism (GRAPH_MAX_PARALLEL)"),
  fetch_timeout_s: opt(Schema.Number.pipe(Schema.between(1, 600)), 30, "FETCH_TIMEOUT of one page, seconds"),
  embed_batch_size: opt(Schema.Int.pipe(Schema.between(1, 2048)), 32, "EMBED_BATCH_SIZE")
}).annotations({ identifier: "JobCrawlConfig" })

export default definePlugin({
  name: "job-crawl",
  version: "0.1.0",
  description: "crawl jobs: search seeds, fetch, model relevance scores, kept pages chunked and embedded, ranked links followed; synthesis and Markdown report.",
  // The operations it runs come from these plugins (set up first, in every worker).
  dependsOn: ["jobs", "web", "text", "job-vectl", "llm"],
  defaultListener: "jobs",
  config: CrawlConfig,
  resources: { CrawlPayload, CrawlResult },
  setup: (ctx) =>
    Effect.gen(function*() {
      const ops = yield* GraphOpRegistry
      const c = ctx.config
      return {
        extensions: jobTypes(crawlJob(ops, {
          defaultProvider: c.search_provider,
          store: c.store,
          userAgent: c.user_agent,
          perHostConcurrency: c.per_host_concurrency,
          limits: { maxParallel: c.max_parallel, fetchTimeoutMs: c.fetch_timeout_s * 1000, embedBatchSize: c.embed_batch_size }
        }))
      }
    })
})
