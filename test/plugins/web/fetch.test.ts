/**
 * `fetch` and `fetch_batch` against the web fixture: pages with their final URL and content
 * type, redirects, non-HTML bodies, charsets, status failures, the size cap, cancel, and a batch
 * with failing URLs (input order kept, failures reported and left out).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import type { Page } from "../../../core/GraphTypes.ts"
import { pageBytes } from "../../../plugins/web/Contract.ts"
import { ACME_STATS, PDF_TEXT, WEB_PAGES, type WebFixture, webServer } from "../../fixtures/web-server.ts"
import { expectJobFailure, jobContexts } from "../jobs/net/jobContext.ts"
import { runOp, webOpsFor } from "./support.ts"

let web: WebFixture
// A high per-host rate: every fixture page is on one host, and the default (600/min) would pace the batches.
const setup = webOpsFor({ max_page_bytes: 64 * 1024, per_host_per_minute: 600_000, per_host_burst: 1000 })
const { ops } = setup
const contexts = jobContexts()

beforeAll(async () => {
  web = await webServer()
})
afterAll(async () => {
  await setup.close()
  await web?.close()
})
afterEach(() => contexts.cleanup())

describe("fetch", () => {
  it("returns the page with status, content type and the article's text", async () => {
    const article = WEB_PAGES.find((p) => p.path === "/acme-news/acme-names-new-ceo")!
    const ctx = contexts.make()
    const page = await runOp<Page>(ops.fetch!, { url: `${web.url}${article.path}` }, undefined, ctx)
    expect(page).toMatchObject({ url: `${web.url}${article.path}`, final_url: `${web.url}${article.path}`, status: 200, content_type: "text/html; charset=utf-8" })
    expect(page.html).toContain(`<h1>${article.title}</h1>`)
    expect(page.html).toContain("Maria Chen, its president of industrial systems")
    expect(ctx.progressLog.at(-1)).toMatchObject({ percent: 100, message: expect.stringContaining("HTTP 200") })
  })

  it("follows redirects and reports the final URL", async () => {
    const page = await runOp<Page>(ops.fetch!, { url: `${web.url}/old/acme-ceo` }, undefined, contexts.make())
    expect(page.url).toBe(`${web.url}/old/acme-ceo`)
    expect(page.final_url).toBe(`${web.url}/acme-news/acme-names-new-ceo`)
    expect(page.html).toContain("Acme Robotics names Maria Chen chief executive")
  })

  it("returns non-HTML content with its content type: JSON as text, a PDF as base64 bytes", async () => {
    const json = await runOp<Page>(ops.fetch!, { url: `${web.url}/api/acme-stats.json` }, undefined, contexts.make())
    expect(json.content_type).toBe("application/json")
    expect(JSON.parse(json.html)).toEqual(ACME_STATS)
    const pdf = await runOp<Page>(ops.fetch!, { url: `${web.url}/files/acme-annual-report-2024.pdf` }, undefined, contexts.make())
    expect(pdf.content_type).toBe("application/pdf")
    const bytes = Buffer.from(pageBytes(pdf))
    expect(bytes.subarray(0, 8).toString("latin1")).toBe("%PDF-1.4")
    expect(bytes.toString("latin1")).toContain(PDF_TEXT)
    expect(bytes.toString("latin1").trimEnd().endsWith("%%EOF")).toBe(true)
  })

  it("decodes a body with its declared charset", async () => {
    const page = await runOp<Page>(ops.fetch!, { url: `${web.url}/charset/latin1` }, undefined, contexts.make())
    expect(page.html).toContain("Café Münster")
  })

  it("fails non-2xx answers with the status in the message (404 REMOTE_ERROR, 500 NETWORK_ERROR)", async () => {
    const missing = await expectJobFailure(runOp(ops.fetch!, { url: `${web.url}/no/such/page` }, undefined, contexts.make()))
    expect(missing.kind).toBe("REMOTE_ERROR")
    expect(missing.message).toBe(`fetch: ${web.url}/no/such/page failed: HTTP 404`)
    const broken = await expectJobFailure(runOp(ops.fetch!, { url: `${web.url}/error` }, undefined, contexts.make()))
    expect(broken.kind).toBe("NETWORK_ERROR")
    expect(broken.message).toMatch(/^fetch: .*\/error failed: HTTP 500$/)
  })

  it("refuses URLs that are not http(s) and unroutable or ill-formed geos", async () => {
    for (const url of ["ftp://example.com/x", "file:///etc/passwd", "not a url", "/relative/path"]) {
      const f = await expectJobFailure(runOp(ops.fetch!, { url }, undefined, contexts.make()))
      expect(f.kind).toBe("VALIDATION_ERROR")
      expect(f.message).toContain("is not an absolute http(s) URL")
    }
    const geo = await expectJobFailure(runOp(ops.fetch!, { url: `${web.url}/`, geo: "us:ca" }, undefined, contexts.make()))
    expect(geo).toMatchObject({ kind: "VALIDATION_ERROR", message: expect.stringMatching(/^fetch: geo routing is not configured: cannot route through "us:ca"/) })
    // Outside the grammar the params themselves are refused (a graph naming it fails validation, 422).
    await expect(runOp(ops.fetch!, { url: `${web.url}/`, geo: "nowhere-land" }, undefined, contexts.make())).rejects.toThrow(/invalid geo "nowhere-land"/)
  })

  it("refuses a body over max_page_bytes with a clear error, and takes one under it", async () => {
    const ok = await runOp<Page>(ops.fetch!, { url: `${web.url}/big?kb=60` }, undefined, contexts.make())
    expect(ok.html.length).toBeGreaterThan(60 * 1024)
    const f = await expectJobFailure(runOp(ops.fetch!, { url: `${web.url}/big?kb=65` }, undefined, contexts.make()))
    expect(f.kind).toBe("REMOTE_ERROR")
    expect(f.message).toMatch(/^fetch: .*\/big\?kb=65: response (of \d+ bytes )?exceeds the 65536-byte limit \(max_page_bytes\)$/)
  })

  it("stops a slow fetch within a second of cancel, and the server sees the client go away", async () => {
    const ctx = contexts.make()
    const before = web.stats.slowClosedEarly
    const started = Date.now()
    const p = runOp(ops.fetch!, { url: `${web.url}/slow?ms=10000` }, undefined, ctx)
    setTimeout(() => ctx.controller.abort(new Error("user cancelled")), 300)
    const f = await expectJobFailure(p)
    expect(f.kind).toBe("CANCELLED")
    expect(Date.now() - started).toBeLessThan(1300)
    await new Promise((r) => setTimeout(r, 200))
    expect(web.stats.slowClosedEarly).toBe(before + 1)
  })

  it("applies the graph's FETCH_TIMEOUT (ctx.limits.fetchTimeoutMs) as the deadline", async () => {
    const ctx = { ...contexts.make(), limits: { fetchTimeoutMs: 300, embedBatchSize: 32, maxParallel: 10 } }
    const started = Date.now()
    const f = await expectJobFailure(runOp(ops.fetch!, { url: `${web.url}/slow?ms=5000` }, undefined, ctx))
    expect(f.kind).toBe("TIMEOUT")
    expect(f.message).toContain("timed out after 300 ms")
    expect(Date.now() - started).toBeLessThan(1500)
  })
})

describe("fetch_batch", () => {
  it("fetches in input order, leaves failed URLs out and reports them in progress", async () => {
    const good = WEB_PAGES.slice(0, 6).map((p) => `${web.url}${p.path}`)
    const urls = [good[0]!, `${web.url}/fail/1`, good[1]!, good[2]!, `${web.url}/missing-page`, good[3]!, "mailto:someone@example.com", good[4]!, `${web.url}/fail/2`, good[5]!]
    const ctx = contexts.make()
    const pages = await runOp<Page[]>(ops.fetch_batch!, { concurrency: 3 }, urls, ctx)
    expect(pages.map((p) => p.url)).toEqual(good)
    pages.forEach((p, i) => expect(p.html).toContain(WEB_PAGES[i]!.title))
    const failed = ctx.progressLog.filter((e) => e.message?.startsWith("failed"))
    expect(failed).toHaveLength(4)
    expect(failed.map((e) => e.message).join("\n")).toMatch(/fail\/1 failed: HTTP 500[\s\S]*/)
    expect(failed.some((e) => e.message!.includes("missing-page failed: HTTP 404"))).toBe(true)
    expect(failed.some((e) => e.message!.includes("mailto:someone@example.com") && e.message!.includes("not an absolute http(s) URL"))).toBe(true)
    expect(ctx.progressLog.at(-1)).toMatchObject({ percent: 100, message: "fetched 6/10 URLs, 4 failed" })
    // progress moved per URL, never backwards
    const percents = ctx.progressLog.map((e) => e.percent)
    expect(percents).toEqual([...percents].sort((a, b) => a - b))
    expect(ctx.progressLog.length).toBeGreaterThanOrEqual(10)
  })

  it("fails with the first error when every URL fails", async () => {
    const f = await expectJobFailure(runOp(ops.fetch_batch!, { concurrency: 1 }, [`${web.url}/fail/1`, `${web.url}/fail/2`, `${web.url}/fail/3`], contexts.make()))
    expect(f.kind).toBe("NETWORK_ERROR")
    expect(f.message).toBe(`fetch_batch: all 3 URLs failed; the first: ${web.url}/fail/1 failed: HTTP 500`)
  })

  it("with skip_failed: false fails on the first failure and cancels the requests in flight", async () => {
    const before = web.stats.slowClosedEarly
    const started = Date.now()
    const f = await expectJobFailure(
      runOp(ops.fetch_batch!, { skip_failed: false, concurrency: 4 }, [`${web.url}/slow?ms=5000`, `${web.url}/slow?ms=5000`, `${web.url}/fail/9`, `${web.url}/gen/1`], contexts.make())
    )
    expect(f).toMatchObject({ kind: "NETWORK_ERROR", message: `fetch_batch: ${web.url}/fail/9 failed: HTTP 500` })
    expect(Date.now() - started).toBeLessThan(2000)
    await new Promise((r) => setTimeout(r, 200))
    expect(web.stats.slowClosedEarly - before).toBe(2)
  })

  it("keeps at most `concurrency` requests in flight", async () => {
    const urls = Array.from({ length: 8 }, (_, i) => `${web.url}/slow?ms=200&i=${i}`)
    const started = Date.now()
    const pages = await runOp<Page[]>(ops.fetch_batch!, { concurrency: 2 }, urls, contexts.make())
    expect(pages.map((p) => p.url)).toEqual(urls)
    // 8 requests of ~200 ms, 2 at a time: at least 4 rounds
    expect(Date.now() - started).toBeGreaterThanOrEqual(750)
  })

  it("is cancelled as a whole within a second", async () => {
    const ctx = contexts.make()
    const started = Date.now()
    const p = runOp(ops.fetch_batch!, {}, Array.from({ length: 5 }, (_, i) => `${web.url}/slow?ms=8000&i=${i}`), ctx)
    setTimeout(() => ctx.controller.abort(new Error("cancelled by test")), 200)
    const f = await expectJobFailure(p)
    expect(f.kind).toBe("CANCELLED")
    expect(Date.now() - started).toBeLessThan(1200)
  })

  it("paces requests to one host by per_host_per_minute after the burst", async () => {
    const paced = webOpsFor({ per_host_per_minute: 600, per_host_burst: 2 })
    try {
      const started = Date.now()
      const pages = await runOp<Page[]>(paced.ops.fetch_batch!, {}, [1, 2, 3, 4, 5].map((n) => `${web.url}/gen/${n}`), contexts.make())
      expect(pages).toHaveLength(5)
      // 2 at once, then one every 100 ms
      expect(Date.now() - started).toBeGreaterThanOrEqual(280)
    } finally {
      await paced.close()
    }
  })

  it("returns [] for no URLs and fetches 200 generated pages", async () => {
    expect(await runOp(ops.fetch_batch!, {}, [], contexts.make())).toEqual([])
    const urls = Array.from({ length: 200 }, (_, i) => `${web.url}/gen/${i + 1}`)
    const pages = await runOp<Page[]>(ops.fetch_batch!, {}, urls, contexts.make())
    expect(pages).toHaveLength(200)
    pages.forEach((p, i) => expect(p.html).toContain(`gen-marker-${i + 1}.`))
  })
})
