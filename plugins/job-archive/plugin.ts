/**
 * Plugin `job-archive`: the `lazarus` job type (historical archive retrieval from the Wayback
 * Machine and Common Crawl) and the `archive_discover` / `fetch_archive` graph operations.
 *
 * Every base URL is configurable so tests (and mirrors) point the plugin at other servers; the
 * rate limits are per worker process and shared by all jobs of that process.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { directOnly, fetchConfigFields, fetcherFor, jobTypes, pluggedGeoResolver, RateLimiter } from "../jobs/Contract.ts"
import { configOption, definePlugin } from "../../core/Plugin.ts"
import { ArchiveClient } from "./Archive.ts"
import { ArchivedPage, archiveDiscoverOp, fetchArchiveOp } from "./GraphOps.ts"
import { LazarusPayload, LazarusResult, lazarusJob } from "./Lazarus.ts"

const Url = Schema.String.pipe(Schema.pattern(/^https?:\/\/\S+[^/]$/), Schema.annotations({ description: "absolute http(s) URL without a trailing slash" }))
const PerMinute = Schema.Number.pipe(Schema.greaterThan(0), Schema.annotations({ description: "requests per minute" }))
const opt = configOption

/** Config of `plugins.job-archive` in platform.yaml. */
export const ArchiveConfig = Schema.Struct({
  wayback_cdx_url: opt(Url, "https://web.archive.org/cdx/search/cdx", "Wayback CDX server endpoint"),
  wayback_snapshot_url: opt(Url, "https://web.archive.org/web", "Wayback snapshot base; snapshots are read at {base}/{timestamp}id_/{url}"),
  commoncrawl_index_url: opt(Url, "https://index.commoncrawl.org", "Common Crawl index server (serves collinfo.json and the per-crawl CDX APIs)"),
  commoncrawl_data_url: opt(Url, "https://data.commoncrawl.org", "Common Crawl data host the WARC files are read from by byte range"),
  commoncrawl_max_indexes: opt(Schema.Int.pipe(Schema.between(1, 200)), 3, "crawl indexes queried per discovery, newest first"),
  status_filter: opt(Schema.String, "200", "CDX status filter, a regex (`200`, `2..`); empty for none"),
  wayback_cdx_per_minute: opt(PerMinute, 60, "Wayback CDX requests per minute per worker process (the server blocks above about 60)"),
  wayback_snapshot_per_minute: opt(PerMinute, 120, "Wayback snapshot requests per minute per worker process"),
  commoncrawl_index_per_minute: opt(PerMinute, 60, "Common Crawl index requests per minute per worker process"),
  commoncrawl_data_per_minute: opt(PerMinute, 300, "Common Crawl WARC range requests per minute per worker process"),
  ...fetchConfigFields,
  max_snapshot_bytes: opt(Schema.Int.pipe(Schema.between(1_024, 1024 * 1024 * 1024)), 20 * 1024 * 1024, "largest snapshot read, bytes")
}).annotations({ identifier: "JobArchiveConfig" })
export type ArchiveConfig = typeof ArchiveConfig.Type

/** Builds the archive client of a decoded config (also used by tests and the graph ops). */
export const makeArchiveClient = (c: ArchiveConfig, geo = directOnly): ArchiveClient =>
  new ArchiveClient(
    fetcherFor(c, geo),
    {
      waybackCdxUrl: c.wayback_cdx_url,
      waybackSnapshotUrl: c.wayback_snapshot_url,
      commoncrawlIndexUrl: c.commoncrawl_index_url,
      commoncrawlDataUrl: c.commoncrawl_data_url,
      commoncrawlMaxIndexes: c.commoncrawl_max_indexes,
      statusFilter: c.status_filter,
      maxSnapshotBytes: c.max_snapshot_bytes,
      // A short burst keeps single small jobs quick; the steady rate is the source's budget.
      limiters: {
        waybackCdx: new RateLimiter({ perMinute: c.wayback_cdx_per_minute, burst: 3 }),
        waybackSnapshot: new RateLimiter({ perMinute: c.wayback_snapshot_per_minute, burst: 5 }),
        commoncrawlIndex: new RateLimiter({ perMinute: c.commoncrawl_index_per_minute, burst: 3 }),
        commoncrawlData: new RateLimiter({ perMinute: c.commoncrawl_data_per_minute, burst: 5 })
      }
    }
  )

export default definePlugin({
  name: "job-archive",
  version: "0.1.0",
  description: "lazarus jobs: historical snapshots from the Wayback Machine (CDX + id_) and Common Crawl (CDX + WARC ranges); archive_discover and fetch_archive graph operations.",
  dependsOn: ["jobs"],
  // No routes of its own; jobs and graph operations are served by the `jobs` listener.
  defaultListener: "jobs",
  config: ArchiveConfig,
  resources: { LazarusPayload, LazarusResult, ArchivedPage },
  setup: (ctx) =>
    Effect.gen(function* () {
      const geo = yield* pluggedGeoResolver
      const client = makeArchiveClient(ctx.config, geo)
      return {
        extensions: jobTypes(lazarusJob(client)),
        graphOps: [archiveDiscoverOp(client), fetchArchiveOp(client)]
      }
    })
})
