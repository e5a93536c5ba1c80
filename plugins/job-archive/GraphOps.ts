/**
 * Graph operations of the archive plugin (research-jobs spec, "Operations by category"):
 * `archive_discover` (Discover) and `fetch_archive` (Acquire).
 */
import * as Schema from "effect/Schema"
import type { GraphOperation } from "../../core/Contribution.ts"
import { JobFailure, GeoField } from "../jobs/Contract.ts"
import type { ArchiveClient, Capture } from "./Archive.ts"
import { SOURCES, timestampDate } from "./Archive.ts"
import { cdxTarget, IsoDate, retrieveAll } from "./Lazarus.ts"

const Targets = Schema.Union(Schema.String, Schema.Array(Schema.String)).annotations({
  description: "a domain/URL or a list of them"
})

const ArchiveParams = {
  source: Schema.optionalWith(Schema.Literal(...SOURCES), { default: () => "wayback" as const }),
  from_date: Schema.optionalWith(Schema.NullOr(IsoDate), { default: () => null }),
  to_date: Schema.optionalWith(Schema.NullOr(IsoDate), { default: () => null }),
  geo: Schema.optionalWith(GeoField, { default: () => null })
}

/** `archive_discover` params: the source, a date range, `limit` captures listed per input, `match_type`. */
export const DiscoverParams = Schema.Struct({
  ...ArchiveParams,
  limit: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 10_000)), { default: () => 100 }),
  match_type: Schema.optionalWith(Schema.NullOr(Schema.Literal("exact", "prefix", "host", "domain")), { default: () => "domain" as const })
})

/** `fetch_archive` params: the source, a date range, `limit` snapshots per input URL (newest kept). */
export const FetchParams = Schema.Struct({
  ...ArchiveParams,
  limit: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 1_000)), { default: () => 1 })
})

/**
 * One archived snapshot as `fetch_archive` outputs it: a `snapshot`, which is an `html` value, so
 * it carries the Page fields (`core/GraphTypes.ts`) the Transform operations read: `final_url` is
 * the archive URL it was read from, `status` the captured HTTP status (200 when the index has
 * none; the default CDX filter keeps only 200s),
 * `content_type` the captured MIME type and `html` the body decoded as UTF-8; then the capture's
 * own facts (timestamp, date, source, archive_url, file_url, mime).
 */
export const ArchivedPage = Schema.Struct({
  url: Schema.String,
  final_url: Schema.String,
  status: Schema.Int,
  content_type: Schema.String,
  html: Schema.String,
  timestamp: Schema.String,
  date: IsoDate,
  source: Schema.Literal(...SOURCES),
  archive_url: Schema.String,
  file_url: Schema.String,
  mime: Schema.String
}).annotations({ identifier: "ArchivedPage" })

const list = (i: string | ReadonlyArray<string>): ReadonlyArray<string> => (typeof i === "string" ? [i] : i)

/**
 * `archive_discover`: domain(s) or URL(s) → `url[]`, the distinct original URLs the archive holds
 * (CDX `matchType` from params, `domain` by default; a URL input ending in `*` is a prefix).
 */
export const archiveDiscoverOp = (client: ArchiveClient): GraphOperation<typeof DiscoverParams.Type, string | ReadonlyArray<string>, ReadonlyArray<string>> => ({
  name: "archive_discover",
  description: "Lists the distinct URLs a historical archive (Wayback Machine or Common Crawl) captured for domains or URL prefixes.",
  category: "discover",
  inputTypes: ["string", "string[]"],
  outputType: "url[]",
  params: DiscoverParams,
  input: Targets,
  output: Schema.Array(Schema.String),
  handler: async (params, input, ctx) => {
    const route = await client.fetcher.route(params.geo, ctx.signal)
    const urls = new Set<string>()
    for (const t of list(input)) {
      const isUrl = /^https?:\/\//i.test(t) || t.includes("/")
      const q = cdxTarget({ domain: isUrl ? null : t, url: isUrl ? t : null, match_type: params.match_type })
      const caps = await client.discover(params.source, { ...q, from: params.from_date, to: params.to_date, limit: params.limit }, ctx.signal, route)
      for (const c of caps) urls.add(c.original)
    }
    return [...urls]
  }
})

/**
 * `fetch_archive`: URL(s) → `ArchivedPage[]`, the newest `limit` snapshots of each URL in the
 * date range (exact match), bodies stored in the file store. A URL without captures contributes
 * nothing; failing every read fails the operation with the first error.
 */
export const fetchArchiveOp = (client: ArchiveClient): GraphOperation<typeof FetchParams.Type, string | ReadonlyArray<string>, ReadonlyArray<typeof ArchivedPage.Type>> => ({
  name: "fetch_archive",
  description: "Fetches archived snapshots (raw, as captured) of URLs from the Wayback Machine or Common Crawl.",
  category: "acquire",
  inputTypes: ["string", "string[]"],
  outputType: "snapshot[]",
  params: FetchParams,
  input: Targets,
  output: Schema.Array(ArchivedPage),
  handler: async (params, input, ctx) => {
    const route = await client.fetcher.route(params.geo, ctx.signal)
    const chosen: Capture[] = []
    for (const url of list(input)) {
      // CDX lists oldest first and `limit` keeps the head, so list generously and keep the newest.
      const caps = await client.discover(params.source, { target: url, matchType: "exact", from: params.from_date, to: params.to_date, limit: 1_000 }, ctx.signal, route)
      chosen.push(...caps.slice(-params.limit))
    }
    const { entries, failures, bodies } = await retrieveAll(client, chosen, ctx, route, [0, 100], true)
    if (chosen.length > 0 && failures.length === chosen.length) {
      throw new JobFailure(failures[0]!.kind, `fetch_archive: no snapshot could be retrieved: ${failures[0]!.message}`, failures[0]!.retryable)
    }
    const out: Array<typeof ArchivedPage.Type> = []
    for (const [i, e] of entries.entries()) {
      if (e.file_url === null) continue
      const html = new TextDecoder("utf-8", { fatal: false }).decode(bodies[i]!)
      out.push({
        url: e.url,
        final_url: e.archive_url,
        status: e.status ?? 200,
        content_type: e.mime,
        html,
        timestamp: e.timestamp,
        date: timestampDate(chosen[i]!.timestamp),
        source: e.source,
        archive_url: e.archive_url,
        file_url: e.file_url,
        mime: e.mime
      })
    }
    return out
  }
})
