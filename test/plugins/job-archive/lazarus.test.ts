import * as Schema from "effect/Schema"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { Page } from "../../../core/GraphTypes.ts"
import { archiveDiscoverOp, fetchArchiveOp } from "../../../plugins/job-archive/GraphOps.ts"
import { lazarusJob, type LazarusPayload } from "../../../plugins/job-archive/Lazarus.ts"
import { ArchiveConfig, makeArchiveClient } from "../../../plugins/job-archive/plugin.ts"
import { type ArchiveFixture, archiveConfigFor, archiveServer } from "../../fixtures/archive-server.ts"
import { expectJobFailure, jobContexts, type TestJobContext } from "../jobs/net/jobContext.ts"

let fx: ArchiveFixture
let job: ReturnType<typeof lazarusJob>
let client: ReturnType<typeof makeArchiveClient>
const contexts = jobContexts()

beforeAll(async () => {
  fx = await archiveServer()
  client = makeArchiveClient(Schema.decodeUnknownSync(ArchiveConfig)(archiveConfigFor(fx.url)))
  job = lazarusJob(client)
})
afterAll(() => fx.close())
afterEach(() => {
  fx.reset()
  contexts.cleanup()
})

const ctx = () => contexts.make()
const decode = (u: unknown) => Schema.decodeUnknownSync(job.payload)(u) as LazarusPayload
const run = async (payload: unknown, c = ctx()) => ({ result: await job.handler(decode(payload), c), c })
const failure = expectJobFailure
const manifest = (c: TestJobContext, url: string) =>
  c.read(url).toString("utf8").trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>)

describe("lazarus (Wayback)", () => {
  it("lists a domain's captures with the CDX API and stores raw snapshots and a JSONL manifest", async () => {
    const { result, c } = await run({ domain: "example.com" })
    // 200-only filter drops /missing; collapse=digest drops the 2019-06 duplicate.
    expect(result.urls_discovered).toBe(4) // /, /about, blog.example.com/post, /gone
    expect(result.snapshots_retrieved).toBe(5)
    expect(result.date_range).toEqual({ earliest: "2019-01-01", latest: "2023-01-01" })
    const lines = manifest(c, result.output_url)
    expect(lines).toHaveLength(6)
    const gone = lines.find((l) => String(l.url).includes("gone"))!
    expect(gone).toMatchObject({ file_url: null, error: expect.stringMatching(/^REMOTE_ERROR: .*HTTP 404/) })
    const first = lines[0]!
    expect(first).toMatchObject({ source: "wayback", url: "http://example.com/", timestamp: "20190101000000", date: "2019-01-01", status: 200 })
    expect(String(first.archive_url)).toBe(`${fx.url}/wayback/web/20190101000000id_/http://example.com/`)
    expect(c.read(String(first.file_url)).toString()).toContain("captured 20190101000000")
    const cdx = fx.log.find((l) => l.includes("/wayback/cdx"))!
    expect(cdx).toMatch(/matchType=domain/)
    expect(cdx).toMatch(/collapse=digest/)
    expect(cdx).toMatch(/filter=statuscode%3A200/)
    expect(c.progressLog.at(-1)?.percent).toBe(100)
  })

  it("honours url (exact match), from/to dates and limit", async () => {
    const { result } = await run({ url: "http://example.com/", from_date: "2019-06-01", to_date: "2022-12-31", limit: 5 })
    // The range starts at the 2019-06 duplicate, so it is no longer collapsed into 2019-01.
    expect(result).toMatchObject({ urls_discovered: 1, snapshots_retrieved: 2, date_range: { earliest: "2019-06-01", latest: "2020-01-01" } })
    const cdx = fx.log.filter((l) => l.includes("/wayback/cdx")).at(-1)!
    expect(cdx).toMatch(/from=20190601&to=20221231/)
    const limited = await run({ domain: "example.com", limit: 2 })
    expect(limited.result.snapshots_retrieved).toBe(2)
  })

  it("refuses bad input: no target, reversed dates, a bad domain, a non-null geo", async () => {
    expect(() => decode({})).toThrow(/one of `domain` \/ `url` is required/)
    expect(() => decode({ domain: "example.com", from_date: "2021-01-01", to_date: "2020-01-01" })).toThrow(/after/)
    expect(() => decode({ domain: "example.com", sources: ["nowhere"] })).toThrow()
    expect(() => decode({ domain: "example.com", from_date: "2021-13-01" })).toThrow()
    // Made at submit (a 422 there): a domain that is no host name, both targets at once.
    expect(() => decode({ domain: "exa..mple" })).toThrow(/"exa\.\.mple" is not a host name/)
    expect(() => decode({ domain: "example.com", url: "http://example.com/" })).toThrow(/give one of `domain` \/ `url`, not both/)
    const geo = await failure(run({ domain: "example.com", geo: "us:ca" }))
    expect([geo.kind, geo.retryable]).toEqual(["VALIDATION_ERROR", false])
    expect(geo.message).toMatch(/geo routing is not configured/)
  })

  it("backs off on 429 and succeeds; 503 is a retryable NETWORK_ERROR; a silent server is TIMEOUT", async () => {
    const { result } = await run({ domain: "ratelimited.example" })
    expect(result.snapshots_retrieved).toBe(1)
    expect(fx.log.filter((l) => l.includes("ratelimited.example") && l.includes("/cdx")).length).toBe(2)
    const down = await failure(run({ domain: "broken.example" }))
    expect([down.kind, down.retryable]).toEqual(["NETWORK_ERROR", undefined])
    const slow = await failure(run({ domain: "slow.example" }))
    expect(slow.kind).toBe("TIMEOUT")
  })

  it("fails with REMOTE_ERROR when every snapshot is gone (404), completes empty when none exist", async () => {
    const gone = await failure(run({ domain: "allgone.example" }))
    expect([gone.kind, gone.retryable]).toEqual(["REMOTE_ERROR", false])
    expect(gone.message).toMatch(/no snapshot could be retrieved/)
    const { result } = await run({ domain: "nothing-here.example" })
    expect(result).toMatchObject({ urls_discovered: 0, snapshots_retrieved: 0, date_range: { earliest: null, latest: null } })
  })

  it("cancels promptly when the job signal aborts", async () => {
    const c = ctx()
    setTimeout(() => c.controller.abort(), 100)
    const t0 = Date.now()
    const f = await failure(run({ domain: "slow.example" }, c))
    expect(f.kind).toBe("CANCELLED")
    expect(Date.now() - t0).toBeLessThan(800)
  })
})

describe("source rate limits", () => {
  it("spaces CDX queries of concurrent jobs at the configured rate (one budget per worker process)", async () => {
    // 600 a minute = one per 100 ms after a burst of 3: five jobs need at least 200 ms of spacing.
    const limited = lazarusJob(makeArchiveClient(Schema.decodeUnknownSync(ArchiveConfig)({ ...archiveConfigFor(fx.url), wayback_cdx_per_minute: 600 })))
    const t0 = Date.now()
    const results = await Promise.all(Array.from({ length: 5 }, () => limited.handler(decode({ url: "http://example.com/about" }), ctx())))
    expect(results.every((r) => r.snapshots_retrieved === 1)).toBe(true)
    expect(Date.now() - t0).toBeGreaterThanOrEqual(190)
    // The default budget is the Wayback CDX server's: 60 a minute.
    expect(Schema.decodeUnknownSync(ArchiveConfig)({}).wayback_cdx_per_minute).toBe(60)
  })
})

describe("lazarus (Common Crawl)", () => {
  it("queries the crawl indexes and reads WARC records by byte range", async () => {
    const { result, c } = await run({ domain: "example.com", sources: ["commoncrawl"] })
    // The 2021 crawl holds two captures with one digest: de-duplicated.
    expect(result).toMatchObject({ urls_discovered: 2, snapshots_retrieved: 3, date_range: { earliest: "2021-01-20", latest: "2023-12-06" } })
    const lines = manifest(c, result.output_url)
    expect(lines.every((l) => l.source === "commoncrawl" && l.error === null)).toBe(true)
    expect(c.read(String(lines[0]!.file_url)).toString()).toMatch(/^<!doctype html>.*captured 2023120510101/)
    expect(String(lines[0]!.archive_url)).toMatch(/\/ccdata\/crawl-data\/.*\.warc\.gz#bytes=\d+-\d+$/)
  })

  it("narrows crawls to the date range and combines sources", async () => {
    const before = fx.log.length
    const { result } = await run({ url: "http://example.com/", sources: ["wayback", "commoncrawl"], from_date: "2023-01-01" })
    expect(result).toMatchObject({ urls_discovered: 1, snapshots_retrieved: 2, date_range: { earliest: "2023-01-01", latest: "2023-12-05" } })
    expect(fx.log.slice(before).some((l) => l.includes("CC-MAIN-2021-04-index"))).toBe(false)
  })
})

describe("archive graph operations", () => {
  it("archive_discover lists distinct URLs; fetch_archive returns newest snapshots as pages (html)", async () => {
    const c = ctx()
    const urls = await archiveDiscoverOp(client).handler(Schema.decodeUnknownSync(archiveDiscoverOp(client).params)({}), "example.com", c)
    expect(new Set(urls)).toEqual(new Set(["http://example.com/", "http://example.com/about", "http://blog.example.com/post", "http://example.com/gone"]))
    const op = fetchArchiveOp(client)
    const pages = await op.handler(Schema.decodeUnknownSync(op.params)({ limit: 1 }), ["http://example.com/"], c)
    expect(pages).toHaveLength(1)
    expect(pages[0]).toMatchObject({ url: "http://example.com/", timestamp: "20230101000000", date: "2023-01-01", source: "wayback" })
    // A snapshot is an `html` value: the Page fields the Transform operations read.
    expect(Schema.decodeUnknownSync(Page)(pages[0])).toMatchObject({ url: "http://example.com/", final_url: pages[0]!.archive_url, status: 200, content_type: pages[0]!.mime })
    expect(pages[0]!.final_url).toMatch(/\/20230101000000id_\/http:\/\/example\.com\/$/)
    expect(pages[0]!.content_type).toMatch(/^text\/html/)
    expect(pages[0]!.html).toContain("captured 20230101000000")
    expect(pages[0]).not.toHaveProperty("content")
    expect(() => Schema.decodeUnknownSync(op.params)({ source: "elsewhere" })).toThrow()
  })
})
