/**
 * Clients of the two historical archive sources of the `lazarus` job:
 *
 * - `wayback` (`{archive_a}`, the default): the Internet Archive's Wayback Machine. Captures are
 *   listed with the CDX server API (`/cdx/search/cdx?url=&matchType=&from=&to=&limit=
 *   &collapse=digest&filter=statuscode:200&output=json`, a JSON array whose first row names the
 *   fields) and fetched raw with the `id_` flag (`/web/{timestamp}id_/{original}`: the archived
 *   bytes without the replay toolbar or rewritten links).
 * - `commoncrawl` (`{archive_b}`): the Common Crawl index server (pywb CDX API, one index per
 *   crawl, listed by `collinfo.json`; `output=json` gives one JSON object per line) and the
 *   crawl's WARC files, read by byte range (`Range: bytes=offset-(offset+length-1)`, one gzip
 *   member holding one WARC `response` record).
 *
 * Both CDX servers are rate-limited here (the Wayback CDX server tolerates about 60 requests a
 * minute before answering 429 and blocking the address); limiters live for the whole plugin so
 * concurrent jobs share one budget per source.
 */
import { gunzipSync } from "node:zlib"
import { type Fetcher, JobFailure, type RateLimiter, type Route } from "../jobs/Contract.ts"

/** Source identifiers accepted in `sources`. */
export const SOURCES = ["wayback", "commoncrawl"] as const
export type SourceId = (typeof SOURCES)[number]

/** CDX match types (both servers): `exact` URL, `prefix` (path prefix), `host`, `domain` (host and subdomains). */
export type MatchType = "exact" | "prefix" | "host" | "domain"

/** One capture listed by a CDX server. `timestamp` is 14 digits, UTC (`20240301123456`). */
export interface Capture {
  readonly source: SourceId
  readonly urlkey: string
  readonly timestamp: string
  readonly original: string
  readonly mime: string
  readonly status: number | null
  readonly digest: string
  readonly length: number | null
  /** Common Crawl only: where the WARC record lies. */
  readonly warc?: { readonly filename: string; readonly offset: number; readonly length: number }
}

/** What a discovery asks of a source. Dates are `YYYY-MM-DD`, inclusive. */
export interface DiscoverQuery {
  readonly target: string
  readonly matchType: MatchType
  readonly from: string | null
  readonly to: string | null
  readonly limit: number
}

/** A retrieved snapshot: the archived HTTP body and where it was read. */
export interface Snapshot {
  readonly body: Uint8Array
  readonly contentType: string
  readonly archiveUrl: string
  readonly httpStatus: number | null
}

/** Endpoints and limiters of the sources (from the plugin config). */
export interface ArchiveEndpoints {
  readonly waybackCdxUrl: string
  readonly waybackSnapshotUrl: string
  readonly commoncrawlIndexUrl: string
  readonly commoncrawlDataUrl: string
  readonly commoncrawlMaxIndexes: number
  readonly statusFilter: string
  readonly maxSnapshotBytes: number
  readonly limiters: {
    readonly waybackCdx: RateLimiter
    readonly waybackSnapshot: RateLimiter
    readonly commoncrawlIndex: RateLimiter
    readonly commoncrawlData: RateLimiter
  }
}

/** `YYYY-MM-DD` to the CDX 8-digit form (`YYYYMMDD`), which both servers read as a prefix bound. */
const cdxDate = (d: string | null): string | undefined => (d ? d.replaceAll("-", "") : undefined)

/** `20240301123456` to `2024-03-01`. */
export const timestampDate = (ts: string): string => `${ts.slice(0, 4)}-${ts.slice(4, 6)}-${ts.slice(6, 8)}`

/** The archive clients of one plugin instance. */
export class ArchiveClient {
  constructor(readonly fetcher: Fetcher, readonly endpoints: ArchiveEndpoints) {}

  /**
   * Lists captures of `q.target` on `source`, at most `q.limit`, oldest first (the servers'
   * order). Wayback collapses adjacent identical digests on the server (`collapse=digest`);
   * Common Crawl, whose server has no digest collapse, is de-duplicated by digest here.
   * Errors: `JobFailure` from the fetch layer (`NETWORK_ERROR` on 5xx or persistent 429,
   * `TIMEOUT`, `REMOTE_ERROR` on other statuses or an unreadable answer).
   */
  discover(source: SourceId, q: DiscoverQuery, signal: AbortSignal, route: Route): Promise<ReadonlyArray<Capture>> {
    return source === "wayback" ? this.waybackCdx(q, signal, route) : this.commoncrawlCdx(q, signal, route)
  }

  /** Fetches the archived body of `c`. Errors as `discover`; a 404 is `REMOTE_ERROR`. */
  retrieve(c: Capture, signal: AbortSignal, route: Route): Promise<Snapshot> {
    return c.source === "wayback" ? this.waybackSnapshot(c, signal, route) : this.commoncrawlRecord(c, signal, route)
  }

  /** The URL a capture can be read at (Wayback `id_` URL, or the WARC file with its range). */
  archiveUrl(c: Capture): string {
    if (c.source === "wayback") return `${this.endpoints.waybackSnapshotUrl}/${c.timestamp}id_/${c.original}`
    const w = c.warc!
    return `${this.endpoints.commoncrawlDataUrl}/${w.filename}#bytes=${w.offset}-${w.offset + w.length - 1}`
  }

  private async waybackCdx(q: DiscoverQuery, signal: AbortSignal, route: Route): Promise<ReadonlyArray<Capture>> {
    const params = new URLSearchParams({
      url: q.target,
      matchType: q.matchType,
      output: "json",
      fl: "urlkey,timestamp,original,mimetype,statuscode,digest,length",
      collapse: "digest",
      limit: String(q.limit)
    })
    if (this.endpoints.statusFilter) params.set("filter", `statuscode:${this.endpoints.statusFilter}`)
    const from = cdxDate(q.from)
    const to = cdxDate(q.to)
    if (from) params.set("from", from)
    if (to) params.set("to", to)
    const rows = await this.fetcher.json<unknown>({
      url: `${this.endpoints.waybackCdxUrl}?${params}`,
      signal,
      route,
      limiter: this.endpoints.limiters.waybackCdx,
      what: "Wayback CDX query"
    })
    if (!Array.isArray(rows)) throw new JobFailure("REMOTE_ERROR", "Wayback CDX query: expected a JSON array", false)
    if (rows.length === 0) return []
    // The first row names the fields; reading by name survives a server that reorders `fl`.
    const header = rows[0] as string[]
    const col = (name: string) => header.indexOf(name)
    const [iKey, iTs, iOrig, iMime, iStatus, iDigest, iLen] = ["urlkey", "timestamp", "original", "mimetype", "statuscode", "digest", "length"].map(col)
    if (iTs! < 0 || iOrig! < 0) throw new JobFailure("REMOTE_ERROR", "Wayback CDX query: header row lacks timestamp/original", false)
    return rows.slice(1, 1 + q.limit).map((r) => {
      const row = r as string[]
      return {
        source: "wayback" as const,
        urlkey: row[iKey!] ?? "",
        timestamp: row[iTs!]!,
        original: row[iOrig!]!,
        mime: row[iMime!] ?? "",
        status: toInt(row[iStatus!]),
        digest: row[iDigest!] ?? "",
        length: toInt(row[iLen!])
      }
    })
  }

  private async waybackSnapshot(c: Capture, signal: AbortSignal, route: Route): Promise<Snapshot> {
    const url = this.archiveUrl(c)
    const res = await this.fetcher.request({
      url,
      signal,
      route,
      limiter: this.endpoints.limiters.waybackSnapshot,
      what: `Wayback snapshot ${c.timestamp} of ${c.original}`,
      maxBytes: this.endpoints.maxSnapshotBytes
    })
    // `res.url`: Wayback redirects to the nearest capture when the exact timestamp is missing.
    return { body: res.body, contentType: res.headers.get("content-type") ?? (c.mime || "application/octet-stream"), archiveUrl: res.url, httpStatus: res.status }
  }

  /**
   * Picks the crawl indexes to query: those whose `from`/`to` (present in current
   * `collinfo.json`) overlap the date range, newest first, at most `commoncrawlMaxIndexes`.
   */
  private async commoncrawlIndexes(q: DiscoverQuery, signal: AbortSignal, route: Route): Promise<string[]> {
    const list = await this.fetcher.json<unknown>({
      url: `${this.endpoints.commoncrawlIndexUrl}/collinfo.json`,
      signal,
      route,
      limiter: this.endpoints.limiters.commoncrawlIndex,
      what: "Common Crawl collection list"
    })
    if (!Array.isArray(list)) throw new JobFailure("REMOTE_ERROR", "Common Crawl collinfo.json: expected a JSON array", false)
    const lo = q.from ?? "0000-00-00"
    const hi = q.to ? `${q.to}T23:59:59` : "9999-99-99"
    return (list as Array<Record<string, string>>)
      .filter((c) => typeof c["cdx-api"] === "string")
      .filter((c) => !c.from || !c.to || (c.to >= lo && c.from <= hi))
      .slice(0, this.endpoints.commoncrawlMaxIndexes)
      .map((c) => c["cdx-api"]!)
  }

  private async commoncrawlCdx(q: DiscoverQuery, signal: AbortSignal, route: Route): Promise<ReadonlyArray<Capture>> {
    const apis = await this.commoncrawlIndexes(q, signal, route)
    const seen = new Set<string>()
    const out: Capture[] = []
    for (const api of apis) {
      if (out.length >= q.limit) break
      const params = new URLSearchParams({ url: q.target, matchType: q.matchType, output: "json", limit: String(q.limit - out.length) })
      if (this.endpoints.statusFilter) params.set("filter", `status:${this.endpoints.statusFilter}`)
      const from = cdxDate(q.from)
      const to = cdxDate(q.to)
      if (from) params.set("from", from)
      if (to) params.set("to", to)
      const res = await this.fetcher.request({
        url: `${api}?${params}`,
        signal,
        route,
        limiter: this.endpoints.limiters.commoncrawlIndex,
        what: "Common Crawl index query",
        // pywb answers 404 "No Captures found" for an empty result.
        accept: (s) => (s >= 200 && s < 300) || s === 404
      })
      if (res.status === 404) continue
      for (const line of res.text().split("\n")) {
        if (!line.trim()) continue
        let rec: Record<string, string>
        try {
          rec = JSON.parse(line)
        } catch {
          throw new JobFailure("REMOTE_ERROR", "Common Crawl index query: a line is not JSON", false)
        }
        if (!rec.filename || rec.offset === undefined || rec.length === undefined) continue
        if (rec.digest && seen.has(rec.digest)) continue
        if (rec.digest) seen.add(rec.digest)
        out.push({
          source: "commoncrawl",
          urlkey: rec.urlkey ?? "",
          timestamp: rec.timestamp ?? "",
          original: rec.url ?? "",
          mime: rec.mime ?? rec["mime-detected"] ?? "",
          status: toInt(rec.status),
          digest: rec.digest ?? "",
          length: toInt(rec.length),
          warc: { filename: rec.filename, offset: Number(rec.offset), length: Number(rec.length) }
        })
        if (out.length >= q.limit) break
      }
    }
    return out
  }

  private async commoncrawlRecord(c: Capture, signal: AbortSignal, route: Route): Promise<Snapshot> {
    const w = c.warc!
    const res = await this.fetcher.request({
      url: `${this.endpoints.commoncrawlDataUrl}/${w.filename}`,
      headers: { range: `bytes=${w.offset}-${w.offset + w.length - 1}` },
      signal,
      route,
      limiter: this.endpoints.limiters.commoncrawlData,
      what: `Common Crawl WARC record of ${c.original}`,
      // Only a partial answer is the record; a 200 would be the whole multi-GB file.
      accept: (s) => s === 206,
      maxBytes: this.endpoints.maxSnapshotBytes
    })
    let record: Buffer
    try {
      record = gunzipSync(res.body)
    } catch {
      throw new JobFailure("REMOTE_ERROR", `Common Crawl WARC record of ${c.original}: not a gzip member`, false)
    }
    const parsed = parseWarcResponse(record)
    return { body: parsed.body, contentType: parsed.contentType ?? (c.mime || "application/octet-stream"), archiveUrl: this.archiveUrl(c), httpStatus: parsed.status }
  }
}

const toInt = (s: string | undefined): number | null => {
  const n = Number(s)
  return s === undefined || s === "" || s === "-" || !Number.isFinite(n) ? null : Math.trunc(n)
}

/** The HTTP response held by a WARC `response` record. */
export interface WarcHttp {
  readonly warcType: string
  readonly targetUri: string | null
  readonly status: number | null
  readonly contentType: string | null
  readonly body: Uint8Array
}

const CRLF2 = Buffer.from("\r\n\r\n")

const headerMap = (block: string): Map<string, string> => {
  const m = new Map<string, string>()
  for (const line of block.split("\r\n").slice(1)) {
    const i = line.indexOf(":")
    if (i > 0) m.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim())
  }
  return m
}

/**
 * Parses one uncompressed WARC record (`WARC/1.0` headers, blank line, block) holding an HTTP
 * response, and returns the HTTP status, content type and body. A `Transfer-Encoding: chunked`
 * body is de-chunked (Common Crawl usually stores payloads de-chunked and renames the header,
 * older crawls did not). Throws `JobFailure` `REMOTE_ERROR` on a record that is not
 * `WARC-Type: response`.
 */
export const parseWarcResponse = (record: Buffer): WarcHttp => {
  const end = record.indexOf(CRLF2)
  if (end < 0 || !record.subarray(0, 5).toString("latin1").startsWith("WARC/")) {
    throw new JobFailure("REMOTE_ERROR", "WARC record: missing WARC header block", false)
  }
  const warc = headerMap(record.subarray(0, end).toString("latin1"))
  const warcType = warc.get("warc-type") ?? ""
  if (warcType !== "response") throw new JobFailure("REMOTE_ERROR", `WARC record: type "${warcType}" is not a response`, false)
  const blockLen = Number(warc.get("content-length") ?? NaN)
  const block = record.subarray(end + 4, Number.isFinite(blockLen) ? end + 4 + blockLen : undefined)
  const hEnd = block.indexOf(CRLF2)
  if (hEnd < 0) throw new JobFailure("REMOTE_ERROR", "WARC record: HTTP response has no header end", false)
  const head = block.subarray(0, hEnd).toString("latin1")
  const http = headerMap(head)
  const status = Number(/^HTTP\/\S+\s+(\d{3})/.exec(head)?.[1] ?? NaN)
  let body: Uint8Array = block.subarray(hEnd + 4)
  if ((http.get("transfer-encoding") ?? "").toLowerCase().includes("chunked")) body = dechunk(Buffer.from(body))
  return { warcType, targetUri: warc.get("warc-target-uri") ?? null, status: Number.isFinite(status) ? status : null, contentType: http.get("content-type") ?? null, body }
}

const dechunk = (b: Buffer): Uint8Array => {
  const parts: Buffer[] = []
  let at = 0
  while (at < b.length) {
    const lineEnd = b.indexOf("\r\n", at)
    if (lineEnd < 0) break
    const size = parseInt(b.subarray(at, lineEnd).toString("latin1"), 16)
    if (!Number.isFinite(size) || size === 0) break
    parts.push(b.subarray(lineEnd + 2, lineEnd + 2 + size))
    at = lineEnd + 2 + size + 2
  }
  return Buffer.concat(parts)
}
