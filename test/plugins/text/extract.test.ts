/**
 * to_markdown, to_text and to_text_batch on realistic pages (test/fixtures/html: an article with
 * a cookie banner, site header, navigation, sidebar and footer; a catalogue page with a <base>,
 * a breadcrumb trail and a consent overlay): the main content survives, the furniture does not,
 * links are absolute against final_url, non-HTML content is refused or skipped with a reason.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import * as Schema from "effect/Schema"
import { afterEach, describe, expect, it } from "vitest"
import { ROOT } from "../../../core/Kernel.ts"
import type { GraphOperation } from "../../../core/Contribution.ts"
import { toMarkdownOp, toTextBatchOp, toTextOp } from "../../../plugins/text/GraphOps.ts"
import { expectJobFailure, jobContexts } from "../jobs/net/jobContext.ts"

const fixture = (name: string) => readFileSync(join(ROOT, "test/fixtures/html", name), "utf8")
const article = fixture("article.html")
const listing = fixture("listing.html")

/** A page as a fetch op outputs it: requested through a tracking redirect, landed on final_url. */
const page = (html: string, over: Partial<{ url: string; final_url: string; content_type: string; status: number }> = {}) => ({
  url: "http://coastal.example/go?id=77&utm_source=feed",
  final_url: "https://coastal.example/features/lighthouse/",
  status: 200,
  content_type: "text/html; charset=utf-8",
  html,
  ...over
})

const contexts = jobContexts()
afterEach(contexts.cleanup)

/** Runs `op` the way the engine does: params and input decoded by the op's Schemas, output checked. */
const run = async <P, I, O>(op: GraphOperation<P, I, O>, params: unknown, input: unknown, ctx = contexts.make()): Promise<O> => {
  const out = await op.handler(Schema.decodeUnknownSync(op.params)(params), Schema.decodeUnknownSync(op.input)(input), ctx)
  return Schema.decodeUnknownSync(op.output)(out)
}

const FURNITURE = ["cookies", "Accept all", "Manage preferences", "Subscribe", "Most read", "ferry timetable", "All rights reserved", "Privacy policy", "Terms of use", "Contact us", "tracking pixel", "font-family", "app.js"]

describe("to_text", () => {
  it("keeps the article's paragraphs, drops banner, header, nav, sidebar, footer, scripts and styles", async () => {
    const d = await run(toTextOp, {}, page(article))
    expect(d.url).toBe("https://coastal.example/features/lighthouse/")
    expect(d.title).toBe("Restoring the Harbour Lighthouse")
    for (const junk of FURNITURE) expect(d.text).not.toContain(junk)
    const paragraphs = d.text.split("\n\n")
    expect(paragraphs[0]).toBe(
      "The harbour lighthouse at Port Ellen has guided fishing boats past the Otter Rock since 1832. After two decades of neglect its lantern room leaked, its iron gallery had rusted through in places and the keeper's cottage stood empty. This spring a volunteer trust finished a four-year restoration that returned the tower to working order."
    )
    expect(paragraphs).toContain("Surveying the damage")
    expect(paragraphs).toContain("Lighting the lantern again")
    // Link text stays in the sentence; whitespace inside a paragraph is one space.
    expect(d.text).toContain("published in the 2020 condition report, found that salt spray")
    expect(d.text).not.toMatch(/\n{3,}/)
    for (const p of paragraphs.filter((p) => !p.startsWith("lantern:"))) expect(p).not.toMatch(/\s{2,}|^\s|\s$/)
    // Preformatted lines keep their line breaks.
    expect(d.text).toContain("lantern:\n  on_at: sunset\n  off_at: sunrise")
    expect(paragraphs.at(-1)).toMatch(/^On the first night .* museum of local maritime history\.$/)
    // 5 paragraphs, 2 headings, 1 code block
    expect(paragraphs).toHaveLength(8)
  })

  it("main_content: false reads the whole cleaned <body>: byline and headline too, still no furniture", async () => {
    const d = await run(toTextOp, { main_content: false }, page(article))
    expect(d.text.split("\n\n").slice(0, 2)).toEqual(["Restoring the Harbour Lighthouse", "By Morag Lindsay, 12 March 2024"])
    for (const junk of FURNITURE) expect(d.text).not.toContain(junk)
    const main = await run(toTextOp, {}, page(article))
    expect(main.text).not.toContain("Morag Lindsay")
  })

  it("reads table rows as lines with cells separated by |, and drops a consent overlay and breadcrumbs", async () => {
    const d = await run(toTextOp, {}, page(listing, { final_url: "https://shop.example/catalogue/tools.html" }))
    expect(d.title).toBe("Garden tools")
    expect(d.text).toContain("Border spade | £42")
    expect(d.text).toContain("Digging fork | £39")
    expect(d.text).toContain("Hand tools for the allotment, forged in Sheffield and fitted with ash handles.")
    for (const junk of ["cookies", "Cookie settings", "Home", "»", "registered in England", "ItemList"]) expect(d.text).not.toContain(junk)
  })

  it("removes a cookie notice by name but not a <body> or headline header that carries such names", async () => {
    const html = `<html><body class="cookie-consent-pending has-gdpr-banner">
      <header><h1>Tide tables for May</h1><p>High and low water at Port Ellen, corrected for summer time.</p></header>
      <div id="cookie-notice">We use cookies. Accept or reject optional cookies.</div>
      <p>High water on the first of May is at 06:12 and 18:40; the range is largest around the new moon on the eighth.</p>
    </body></html>`
    for (const main_content of [true, false]) {
      const d = await run(toTextOp, { main_content }, page(html))
      expect(d.title).toBe("Tide tables for May")
      expect(d.text).toContain("High water on the first of May is at 06:12 and 18:40")
      expect(d.text).not.toContain("cookies")
    }
    expect((await run(toTextOp, { main_content: false }, page(html))).text.split("\n\n").slice(0, 2)).toEqual([
      "Tide tables for May", "High and low water at Port Ellen, corrected for summer time."
    ])
  })

  it("reads fragments, bare text and documents without <body> (linkedom builds none for them)", async () => {
    const text = async (html: string) => (await run(toTextOp, {}, page(html))).text
    expect(await text("<p>Low water at <a href='tides'>noon</a>.</p><p>Second paragraph.</p>")).toBe("Low water at noon.\n\nSecond paragraph.")
    expect(await text("bare words without markup")).toBe("bare words without markup")
    expect(await run(toTextOp, {}, page("<html><head><title>Tides</title></head><p>Low water at noon.</p></html>"))).toMatchObject({ title: "Tides", text: "Low water at noon." })
    expect(await text("")).toBe("")
    expect((await run(toMarkdownOp, {}, page("<p>See <a href='tides'>the tables</a>.</p>"))).text).toBe("See [the tables](https://coastal.example/features/lighthouse/tides).")
    expect((await run(toMarkdownOp, {}, page("<html><head><title>Empty</title></head><body></body></html>"))).text).toBe("# Empty")
  })

  it("passes text/plain through with whitespace normalised; refuses PDF with a clear VALIDATION_ERROR", async () => {
    const d = await run(toTextOp, {}, page("  First   line\nof a paragraph.\n\n\n  Second\tparagraph.  ", { content_type: "text/plain; charset=us-ascii" }))
    expect(d).toEqual({ url: "https://coastal.example/features/lighthouse/", title: null, text: "First line of a paragraph.\n\nSecond paragraph." })
    const f = await expectJobFailure(run(toTextOp, {}, page("%PDF-1.7 ...", { content_type: "application/pdf" })))
    expect(f.kind).toBe("VALIDATION_ERROR")
    expect(f.message).toBe("to_text: https://coastal.example/features/lighthouse/ is application/pdf, not HTML or plain text")
  })

  it("reads archived snapshots (html values with capture fields), links against the original URL", async () => {
    const snapshot = {
      ...page(article, { url: "http://coastal.example/features/lighthouse/", final_url: "https://web.archive.org/web/20240312000000id_/http://coastal.example/features/lighthouse/" }),
      timestamp: "20240312000000", date: "2024-03-12", source: "wayback", archive_url: "https://web.archive.org/web/20240312000000id_/http://coastal.example/features/lighthouse/",
      file_url: "http://127.0.0.1:1/files/x/snap.html", mime: "text/html"
    }
    const d = await run(toTextOp, {}, snapshot)
    expect(d.url).toBe(snapshot.archive_url)
    expect(d.text).toContain("clockmaker from Bowmore")
    // Raw snapshots keep the site's own links: they resolve against the original URL, not the archive's.
    const md = await run(toMarkdownOp, {}, snapshot)
    expect(md.url).toBe(snapshot.archive_url)
    expect(md.text).toContain("[2020 condition report](http://coastal.example/reports/2020-survey.pdf)")
  })
})

describe("to_markdown", () => {
  it("gives ATX headings, fenced code and links resolved against final_url (not the requested url)", async () => {
    const d = await run(toMarkdownOp, {}, page(article))
    const md = d.text
    expect(d.url).toBe("https://coastal.example/features/lighthouse/")
    expect(md.startsWith("# Restoring the Harbour Lighthouse\n\nThe harbour lighthouse at Port Ellen")).toBe(true)
    expect(md).toContain("\n\n## Surveying the damage\n\n")
    expect(md).toContain("\n\n## Lighting the lantern again\n\n")
    expect(md).toContain("[2020 condition report](https://coastal.example/reports/2020-survey.pdf)")
    expect(md).toContain("[Maritime Buildings Trust](https://example.org/maritime-trust)")
    expect(md).toContain("```\nlantern:\n  on_at: sunset\n  off_at: sunrise\n  period_seconds: 30\n```")
    expect(md).not.toMatch(/^[=-]{3,}$/m) // no setext headings
    for (const junk of FURNITURE) expect(md).not.toContain(junk)
  })

  it("resolves relative links and images against <base href>", async () => {
    const d = await run(toMarkdownOp, {}, page(listing, { final_url: "https://shop.example/old/tools.html" }))
    expect(d.text).toMatch(/^# Garden tools\n/)
    expect(d.text).toContain("[Border spade](https://shop.example/catalogue/spade.html)")
    expect(d.text).toContain("![delivery van](https://shop.example/catalogue/images/van.png)")
    expect(d.text).not.toContain("Cookie settings")
  })

  it("main_content: false keeps the page's own h1 and adds no second one", async () => {
    const d = await run(toMarkdownOp, { main_content: false }, page(article))
    expect(d.text.match(/^# /gm)).toHaveLength(1)
    expect(d.text).toMatch(/^# Restoring the Harbour Lighthouse\n\nBy Morag Lindsay/)
  })

  it("refuses non-HTML content", async () => {
    const f = await expectJobFailure(run(toMarkdownOp, {}, page("\x89PNG", { content_type: "image/png" })))
    expect(f).toMatchObject({ kind: "VALIDATION_ERROR", message: expect.stringMatching(/^to_markdown: .* is image\/png, not HTML or plain text$/) })
  })
})

describe("to_text_batch", () => {
  it("extracts every page in order, leaves out non-HTML and empty pages and says so in progress", async () => {
    const ctx = contexts.make()
    const pages = [
      page(article, { final_url: "https://a.example/1" }),
      page("%PDF-1.4", { final_url: "https://a.example/report.pdf", content_type: "application/pdf" }),
      page(listing, { final_url: "https://a.example/2" }),
      page("<html><head><title>Empty</title><script>var x = 1</script></head><body><nav><a href='/'>Home</a></nav></body></html>", { final_url: "https://a.example/3" }),
      page("plain words here", { final_url: "https://a.example/4", content_type: "text/plain" })
    ]
    const docs = await run(toTextBatchOp, {}, pages, ctx)
    expect(docs.map((d) => d.url)).toEqual(["https://a.example/1", "https://a.example/2", "https://a.example/4"])
    expect(docs[0]!.text).toContain("lime mortar")
    expect(docs[1]!.text).toContain("Border spade | £42")
    expect(docs[2]).toEqual({ url: "https://a.example/4", title: null, text: "plain words here" })
    const last = ctx.progressLog.at(-1)!
    expect(last.percent).toBe(100)
    expect(last.message).toBe("extracted text from 3 of 5 pages; skipped 1 not HTML or text (https://a.example/report.pdf is application/pdf, not HTML or plain text), 1 without text")
  })

  it("stops between pages when cancelled", async () => {
    const ctx = contexts.make()
    ctx.controller.abort()
    const f = await expectJobFailure(run(toTextBatchOp, {}, [page(article)], ctx))
    expect(f.kind).toBe("CANCELLED")
  })
})
