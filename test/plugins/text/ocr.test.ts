/**
 * ocr through Debian's tesseract: images of known text rendered by headless Chromium are read
 * back from the file store (file://) and over HTTP from a loopback image server; the words come
 * back, Docs carry the page URL when the input names one. A missing tesseract names its package,
 * a non-image answer is refused, file:// is refused unless allowed, and a cancel kills the
 * tesseract process at once.
 */
import { execFileSync } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import * as Schema from "effect/Schema"
import { chromium } from "playwright-core"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { ocrOp, type OcrOptions } from "../../../plugins/text/GraphOps.ts"
import { expectJobFailure, jobContexts, type TestJobContext } from "../jobs/net/jobContext.ts"

const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"]

/** PNGs of known text, rendered by Chromium in a plain sans-serif at a size tesseract reads reliably. */
const render = async (paragraphs: ReadonlyArray<string>, size = { width: 900, height: 300 }, fontPx = 32): Promise<Buffer> => {
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_ARGS })
  try {
    const page = await browser.newPage({ viewport: size })
    await page.setContent(`<html><body style="margin:30px;background:#fff;color:#000;font:${fontPx}px 'DejaVu Sans',sans-serif">${paragraphs.map((p) => `<p>${p}</p>`).join("")}</body></html>`)
    return await page.screenshot({ type: "png" })
  } finally {
    await browser.close()
  }
}

const SIGN = ["Harbour lighthouse restored", "Guided tours every Saturday"]
let sign: Buffer
let big: Buffer
let server: Server
let base: string

beforeAll(async () => {
  sign = await render(SIGN)
  // A dense page big enough that tesseract works on it for seconds: the cancel test's target.
  big = await render(Array.from({ length: 60 }, (_, i) => `Line ${i} of the keeper's logbook records wind, tide and visibility`), { width: 2400, height: 3200 }, 22)
  server = createServer((req, res) => {
    if (req.url === "/sign.png") return res.writeHead(200, { "content-type": "image/png" }).end(sign)
    if (req.url === "/page.html") return res.writeHead(200, { "content-type": "text/html" }).end("<p>not an image</p>")
    res.writeHead(404).end()
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}, 60_000)
afterAll(async () => {
  await new Promise((r) => server?.close(r))
})

const contexts = jobContexts()
afterEach(contexts.cleanup)

const options = (over: Partial<OcrOptions["tesseract"]> = {}, allowFileUrls = true): OcrOptions => ({
  tesseract: { path: "tesseract", languages: "eng", timeoutMs: 60_000, ...over },
  images: { maxBytes: 20 * 1024 * 1024, allowFileUrls }
})

const run = async (o: OcrOptions, input: unknown, ctx: TestJobContext = contexts.make(), params: unknown = {}) => {
  const op = ocrOp(o)
  const out = await op.handler(Schema.decodeUnknownSync(op.params)(params), Schema.decodeUnknownSync(op.input)(input), ctx)
  return Schema.decodeUnknownSync(op.output)(out)
}

/** Children of this process running tesseract. */
const tesseractChildren = (): Array<number> =>
  readdirSync("/proc").filter((d) => /^\d+$/.test(d)).flatMap((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"))
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
      return comm === "tesseract" && ppid === process.pid ? [Number(pid)] : []
    } catch {
      return []
    }
  })

describe("ocr", () => {
  it("tesseract is installed here (scripts/setup.sh installs tesseract-ocr)", () => {
    expect(execFileSync("tesseract", ["--list-langs"], { encoding: "utf8" })).toMatch(/^eng$/m)
  })

  it("reads a screenshot from the file store and an image URL over HTTP, in order, with the page URL when known", async () => {
    const ctx = contexts.make()
    const stored = await ctx.files.put("sign.png", sign, "image/png")
    const docs = await run(options(), [
      { url: "https://harbour.example/news", file_url: stored.url, width: 900, height: 300 },
      `${base}/sign.png`
    ], ctx)
    expect(docs).toHaveLength(2)
    expect(docs[0]!.url).toBe("https://harbour.example/news")
    expect(docs[1]!.url).toBe(`${base}/sign.png`)
    for (const d of docs) {
      expect(d.title).toBeNull()
      // Two paragraphs on the image, two paragraphs of text.
      expect(d.text.split("\n\n")).toEqual(SIGN)
    }
    expect(ctx.progressLog.at(-1)).toEqual({ percent: 100, message: "read text in 2 of 2 images" })
  })

  it("leaves out an image that fails when others succeed, and says why", async () => {
    const ctx = contexts.make()
    const docs = await run(options(), [`${base}/page.html`, `${base}/sign.png`, `${base}/missing.png`], ctx)
    expect(docs.map((d) => d.url)).toEqual([`${base}/sign.png`])
    expect(ctx.progressLog.at(-1)!.message).toBe(`read text in 1 of 3 images; 2 failed (ocr: ${base}/page.html is text/html, not an image)`)
  })

  it("fails with the first error when every image fails", async () => {
    const f = await expectJobFailure(run(options(), [`${base}/missing.png`]))
    expect(f).toMatchObject({ kind: "REMOTE_ERROR", message: `ocr: ${base}/missing.png answered 404` })
  })

  it("refuses file:// unless allow_file_urls, and other schemes", async () => {
    const ctx = contexts.make()
    const stored = await ctx.files.put("sign.png", sign, "image/png")
    const f = await expectJobFailure(run(options({}, false), [stored.url], ctx))
    expect(f.kind).toBe("VALIDATION_ERROR")
    expect(f.message).toMatch(/^ocr: file:\/\/ URLs are not allowed .*allow_file_urls/)
    expect((await expectJobFailure(run(options(), ["ftp://x.example/a.png"]))).message).toBe("ocr: cannot read ftp: URLs (ftp://x.example/a.png)")
  })

  it("names the Debian package when tesseract is missing", async () => {
    const f = await expectJobFailure(run(options({ path: "/nonexistent/tesseract" }), [`${base}/sign.png`]))
    expect(f.kind).toBe("INTERNAL_ERROR")
    expect(f.message).toMatch(/^ocr: tesseract is not installed .*apt-get install tesseract-ocr tesseract-ocr-eng/)
  })

  it("names the language package when tesseract lacks the language data", async () => {
    const f = await expectJobFailure(run(options(), [`${base}/sign.png`], contexts.make(), { language: "zzz" }))
    expect(f.kind).toBe("INTERNAL_ERROR")
    expect(f.message).toMatch(/^ocr: tesseract has no "zzz" language data: .*tesseract-ocr-<lang>/)
  })

  it("kills tesseract within a second of a cancel", async () => {
    const ctx = contexts.make()
    const stored = await ctx.files.put("big.png", big, "image/png")
    const p = run(options(), [stored.url], ctx)
    // Wait until tesseract is running on it.
    const t0 = Date.now()
    while (tesseractChildren().length === 0 && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 20))
    expect(tesseractChildren()).toHaveLength(1)
    const cancelledAt = Date.now()
    ctx.controller.abort()
    const f = await expectJobFailure(p)
    expect(f.kind).toBe("CANCELLED")
    expect(Date.now() - cancelledAt).toBeLessThan(1000)
    await new Promise((r) => setTimeout(r, 100))
    expect(tesseractChildren()).toEqual([])
  })
})
