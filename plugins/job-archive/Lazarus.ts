/**
 * The `lazarus` job type (research-jobs spec, "lazarus"): historical archive retrieval.
 *
 * Flow: resolve `geo` (refused until geographic routing exists) → list captures per source
 * (CDX) → fetch each capture's archived body, up to `limit` in all → store every body and a
 * JSONL manifest in the file store → result `{urls_discovered, snapshots_retrieved, date_range,
 * output_url}` where `output_url` is the manifest's URL.
 *
 * Manifest: one JSON object per line and capture, in retrieval order:
 * `{source, url, timestamp, date, status, mime, digest, length, archive_url, file_url, bytes,
 * error}`; `file_url` is null and `error` set for a capture that could not be read (a snapshot
 * answering 404 does not fail the job; if every read fails the job fails with the first error).
 */
import * as Schema from "effect/Schema"
import { invalid, type JobContext, JobFailure, type JobType, GeoField } from "../jobs/Contract.ts"
import type { ArchiveClient, Capture, MatchType, SourceId } from "./Archive.ts"
import { SOURCES, timestampDate } from "./Archive.ts"

/** `YYYY-MM-DD` (a calendar date; CDX bounds are inclusive). */
export const IsoDate = Schema.String.pipe(
  Schema.pattern(/^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/),
  Schema.annotations({ description: "date, YYYY-MM-DD", examples: ["2020-01-31"] })
)

const Target = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2048), Schema.pattern(/^\S+$/))

/** A DNS host name (RFC 1123 labels, 253 characters at most), lower-case. */
const HOST_NAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/

/** `domain` as written, reduced to its host (a scheme and a path are forgiven). */
const bareHost = (domain: string): string => domain.replace(/^https?:\/\//i, "").replace(/\/.*$/, "").toLowerCase()

/** The lazarus payload. `match_type` and `geo` extend the spec (documented in the README). */
export const LazarusPayload = Schema.Struct({
  domain: Schema.optionalWith(Schema.NullOr(Target), { default: () => null }).annotations({
    description: "a host name; captures of the host and its subdomains (CDX matchType=domain)"
  }),
  url: Schema.optionalWith(Schema.NullOr(Target), { default: () => null }).annotations({
    description: "a URL; captures of exactly that URL (matchType=exact), or of every URL under it when it ends in `*` (prefix)"
  }),
  from_date: Schema.optionalWith(Schema.NullOr(IsoDate), { default: () => null }),
  to_date: Schema.optionalWith(Schema.NullOr(IsoDate), { default: () => null }),
  sources: Schema.optionalWith(Schema.Array(Schema.Literal(...SOURCES)).pipe(Schema.minItems(1)), { default: () => ["wayback" as const] }).annotations({
    description: "`wayback` (the Wayback Machine, default) and/or `commoncrawl` (the Common Crawl index)"
  }),
  limit: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 10_000)), { default: () => 100 }).annotations({
    description: "most captures listed per source and most snapshots retrieved in all"
  }),
  match_type: Schema.optionalWith(Schema.NullOr(Schema.Literal("exact", "prefix", "host", "domain")), { default: () => null }).annotations({
    description: "overrides the CDX match type derived from domain/url"
  }),
  geo: Schema.optionalWith(GeoField, { default: () => null }).annotations({
    description: "geographic routing filter; any non-null value fails until geo routing is configured"
  })
}).pipe(
  // The spec's "one of `domain` / `url`": exactly one, each checked here so a bad one is a 422 at submit.
  Schema.filter((p) =>
    p.domain && p.url
      ? "give one of `domain` / `url`, not both"
      : !p.domain && !p.url
      ? "one of `domain` / `url` is required"
      : p.domain && !HOST_NAME.test(bareHost(p.domain))
      ? { path: ["domain"], message: `"${p.domain}" is not a host name` }
      : undefined
  ),
  Schema.filter((p) => (p.from_date && p.to_date && p.from_date > p.to_date ? "`from_date` is after `to_date`" : undefined))
).annotations({ identifier: "LazarusPayload" })
export type LazarusPayload = typeof LazarusPayload.Type

/** The lazarus result (spec). `date_range` members are null when no snapshot was retrieved. */
export const LazarusResult = Schema.Struct({
  urls_discovered: Schema.Int,
  snapshots_retrieved: Schema.Int,
  date_range: Schema.Struct({ earliest: Schema.NullOr(IsoDate), latest: Schema.NullOr(IsoDate) }),
  output_url: Schema.String
}).annotations({ identifier: "LazarusResult" })
export type LazarusResult = typeof LazarusResult.Type

/** One manifest line (see the module comment). */
export interface ManifestEntry {
  readonly source: SourceId
  readonly url: string
  readonly timestamp: string
  readonly date: string
  readonly status: number | null
  readonly mime: string
  readonly digest: string
  readonly length: number | null
  readonly archive_url: string
  readonly file_url: string | null
  readonly bytes: number | null
  readonly error: string | null
}

/**
 * The CDX target and match type of a payload: `domain` → the bare host with `domain`;
 * `url` → `exact`, or `prefix` when it ends in `*` (the star removed). Throws `VALIDATION_ERROR`
 * for a domain that is not a host name.
 */
export const cdxTarget = (p: { domain: string | null; url: string | null; match_type: MatchType | null }): { target: string; matchType: MatchType } => {
  if (p.domain) {
    const host = bareHost(p.domain)
    if (!HOST_NAME.test(host)) {
      throw invalid(`domain "${p.domain}" is not a host name`)
    }
    return { target: host, matchType: p.match_type ?? "domain" }
  }
  const url = p.url!
  if (url.endsWith("*")) return { target: url.slice(0, -1), matchType: p.match_type ?? "prefix" }
  return { target: url, matchType: p.match_type ?? "exact" }
}

const EXT: Record<string, string> = {
  "text/html": "html", "application/xhtml+xml": "html", "text/plain": "txt", "application/json": "json",
  "text/css": "css", "application/javascript": "js", "text/javascript": "js", "application/pdf": "pdf",
  "image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp", "text/xml": "xml", "application/xml": "xml"
}

/** A file-store name for a capture: `{source}-{timestamp}-{url slug}.{ext}`. */
export const snapshotName = (c: Capture, contentType: string): string => {
  const ext = EXT[contentType.split(";")[0]!.trim().toLowerCase()] ?? "bin"
  const slug = c.original.replace(/^https?:\/\//, "").replace(/[^A-Za-z0-9.-]+/g, "_").slice(0, 80)
  return `${c.source}-${c.timestamp}-${slug}.${ext}`
}

/**
 * Reads captures (in order) and stores each body; returns the manifest entries. A capture whose
 * read fails with anything but a cancel is recorded with its error. Rejects with `CANCELLED`
 * (or the abort's failure) as soon as the signal aborts.
 */
export const retrieveAll = async (
  client: ArchiveClient,
  captures: ReadonlyArray<Capture>,
  ctx: { signal: AbortSignal; files: JobContext["files"]; progress: JobContext["progress"] },
  route: Awaited<ReturnType<ArchiveClient["fetcher"]["route"]>>,
  progressSpan: [number, number],
  keepBodies = false
): Promise<{ entries: ManifestEntry[]; failures: JobFailure[]; bodies: Array<Uint8Array | null> }> => {
  const entries: ManifestEntry[] = []
  // Bodies are kept only for graph operations, which pass them on; a lazarus job may read hundreds.
  const bodies: Array<Uint8Array | null> = []
  const failures: JobFailure[] = []
  for (const [i, c] of captures.entries()) {
    const base = {
      source: c.source, url: c.original, timestamp: c.timestamp, date: timestampDate(c.timestamp), status: c.status,
      mime: c.mime, digest: c.digest, length: c.length, archive_url: client.archiveUrl(c)
    }
    try {
      const snap = await client.retrieve(c, ctx.signal, route)
      const stored = await ctx.files.put(snapshotName(c, snap.contentType), snap.body, snap.contentType)
      entries.push({ ...base, archive_url: snap.archiveUrl, file_url: stored.url, bytes: snap.body.byteLength, error: null })
      bodies.push(keepBodies ? snap.body : null)
    } catch (e) {
      const f = e instanceof JobFailure ? e : new JobFailure("INTERNAL_ERROR", String(e), false)
      if (f.kind === "CANCELLED" || ctx.signal.aborted) throw f
      failures.push(f)
      entries.push({ ...base, file_url: null, bytes: null, error: `${f.kind}: ${f.message}` })
      bodies.push(null)
    }
    const [lo, hi] = progressSpan
    await ctx.progress(Math.round(lo + ((hi - lo) * (i + 1)) / captures.length), `retrieved ${i + 1}/${captures.length} snapshots`)
  }
  return { entries, failures, bodies }
}

/** Builds the `lazarus` job type over `client`. */
export const lazarusJob = (client: ArchiveClient): JobType<LazarusPayload, LazarusResult> => ({
  id: "lazarus",
  description: "Historical archive retrieval: lists captures of a domain or URL in the Wayback Machine and/or Common Crawl, stores the snapshots and a JSONL manifest.",
  payload: LazarusPayload,
  result: LazarusResult,
  handler: async (p, ctx) => {
    const route = await client.fetcher.route(p.geo, ctx.signal)
    const { target, matchType } = cdxTarget(p)
    await ctx.progress(2, `listing captures of ${target} (${matchType})`)
    const captures: Capture[] = []
    for (const source of p.sources) {
      captures.push(...(await client.discover(source, { target, matchType, from: p.from_date, to: p.to_date, limit: p.limit }, ctx.signal, route)))
    }
    const urls = new Set(captures.map((c) => c.original))
    const chosen = captures.slice(0, p.limit)
    await ctx.progress(10, `${captures.length} captures of ${urls.size} URLs; retrieving ${chosen.length}`)
    const { entries, failures } = await retrieveAll(client, chosen, ctx, route, [10, 95])
    if (chosen.length > 0 && failures.length === chosen.length) {
      // Nothing readable: surface the first failure so its kind decides retrying (a source outage retries).
      const first = failures[0]!
      throw new JobFailure(first.kind, `no snapshot could be retrieved (${failures.length} tried): ${first.message}`, first.retryable)
    }
    const manifest = entries.map((e) => JSON.stringify(e)).join("\n") + (entries.length ? "\n" : "")
    const stored = await ctx.files.put("manifest.jsonl", manifest, "application/x-ndjson")
    const dates = entries.filter((e) => e.file_url !== null).map((e) => e.date).sort()
    await ctx.progress(100, `retrieved ${dates.length} snapshots`)
    return {
      urls_discovered: urls.size,
      snapshots_retrieved: dates.length,
      date_range: { earliest: dates[0] ?? null, latest: dates[dates.length - 1] ?? null },
      output_url: stored.url
    }
  }
})
