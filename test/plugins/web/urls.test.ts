/**
 * `filter_urls` (normalisation, regexes, domains, max) and `links` (link extraction from fetched
 * fixture pages with linkedom), plus properties of `normaliseUrl`.
 */
import fc from "fast-check"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import type { Page } from "../../../core/GraphTypes.ts"
import { filterUrls, normaliseUrl, pageLinks } from "../../../plugins/web/Contract.ts"
import { SITES, WEB_PAGE_BY_PATH, type WebFixture, webServer } from "../../fixtures/web-server.ts"
import { expectJobFailure, jobContexts } from "../jobs/net/jobContext.ts"
import { runOp, webOpsFor } from "./support.ts"

const setup = webOpsFor({ per_host_per_minute: 600_000, per_host_burst: 1000 })
const { ops } = setup
const contexts = jobContexts()
let web: WebFixture

beforeAll(async () => {
  web = await webServer()
})
afterAll(async () => {
  await setup.close()
  await web?.close()
})
afterEach(() => contexts.cleanup())

describe("normaliseUrl", () => {
  it.each([
    ["HTTP://Example.COM:80/a/b?b=2&a=1#frag", "http://example.com/a/b?a=1&b=2"],
    ["https://example.com:443/", "https://example.com/"],
    ["https://example.com:8443/x", "https://example.com:8443/x"],
    ["https://example.com/p?utm_source=news&utm_medium=email&id=7", "https://example.com/p?id=7"],
    ["https://example.com/p?utm_campaign=x", "https://example.com/p"],
    ["https://example.com/p?", "https://example.com/p"],
    ["https://example.com", "https://example.com/"],
    ["https://example.com/p?z=1&a=2&z=0", "https://example.com/p?a=2&z=1&z=0"],
    ["https://EXAMPLE.com/Case/Path", "https://example.com/Case/Path"]
  ])("%s → %s", (raw, normal) => {
    expect(normaliseUrl(raw)).toBe(normal)
  })

  it("refuses what is not an absolute http(s) URL", () => {
    for (const raw of ["ftp://x/y", "mailto:a@b.c", "javascript:alert(1)", "/relative", "", "http://"]) expect(normaliseUrl(raw)).toBeUndefined()
  })

  it("is idempotent", () => {
    fc.assert(
      fc.property(fc.webUrl({ withFragments: true, withQueryParameters: true }), (u) => {
        const once = normaliseUrl(u)
        if (once !== undefined) expect(normaliseUrl(once)).toBe(once)
      }),
      { numRuns: 300 }
    )
  })
})

describe("filter_urls", () => {
  const urls = [
    "https://news.acme.com/2025/ceo?utm_source=x#top",
    "https://NEWS.acme.com:443/2025/ceo",
    "https://www.acme.com/about",
    "https://acme.com.evil.net/phish",
    "http://gazette.example/politics/jane-doe?b=2&a=1",
    "http://gazette.example/politics/jane-doe?a=1&b=2",
    "ftp://files.acme.com/report.pdf",
    "https://energy.example/solar/record",
    "https://energy.example/tag/solar?page=2"
  ]

  it("normalises and de-duplicates by default, dropping non-http(s) URLs", async () => {
    const ctx = contexts.make()
    const out = await runOp<string[]>(ops.filter_urls!, {}, urls, ctx)
    expect(out).toEqual([
      "https://news.acme.com/2025/ceo",
      "https://www.acme.com/about",
      "https://acme.com.evil.net/phish",
      "http://gazette.example/politics/jane-doe?a=1&b=2",
      "https://energy.example/solar/record",
      "https://energy.example/tag/solar?page=2"
    ])
    expect(ctx.progressLog.at(-1)?.message).toBe("kept 6 of 9 URLs (1 not http(s) URLs dropped)")
  })

  it("keeps the URLs as given without dedupe", async () => {
    const out = await runOp<string[]>(ops.filter_urls!, { dedupe: false, domains: ["acme.com"] }, urls, contexts.make())
    expect(out).toEqual(urls.slice(0, 3))
  })

  it("filters by domain and same_domain_as (subdomains included, look-alikes not)", async () => {
    expect(await runOp(ops.filter_urls!, { same_domain_as: "https://acme.com/" }, urls, contexts.make())).toEqual(["https://news.acme.com/2025/ceo", "https://www.acme.com/about"])
    expect(await runOp(ops.filter_urls!, { domains: ["gazette.example", "energy.example"] }, urls, contexts.make())).toEqual([
      "http://gazette.example/politics/jane-doe?a=1&b=2",
      "https://energy.example/solar/record",
      "https://energy.example/tag/solar?page=2"
    ])
  })

  it("applies include and exclude regexes and max", async () => {
    expect(await runOp(ops.filter_urls!, { include: ["solar", "jane-doe"], exclude: ["/tag/"] }, urls, contexts.make())).toEqual([
      "http://gazette.example/politics/jane-doe?a=1&b=2",
      "https://energy.example/solar/record"
    ])
    expect(await runOp(ops.filter_urls!, { max: 2 }, urls, contexts.make())).toEqual(["https://news.acme.com/2025/ceo", "https://www.acme.com/about"])
    expect(await runOp(ops.filter_urls!, { max: 0 }, urls, contexts.make())).toEqual([])
    expect(await runOp(ops.filter_urls!, { max: -3 }, urls, contexts.make())).toEqual([])
  })

  it("drops exclude_urls, compared in normal form (a crawl's visited set)", async () => {
    const visited = ["https://news.acme.com/2025/ceo", "http://GAZETTE.example:80/politics/jane-doe?b=2&a=1#x"]
    expect(await runOp(ops.filter_urls!, { exclude_urls: visited, max: 3 }, urls, contexts.make())).toEqual([
      "https://www.acme.com/about",
      "https://acme.com.evil.net/phish",
      "https://energy.example/solar/record"
    ])
    expect(await runOp(ops.filter_urls!, { exclude_urls: visited, dedupe: false, domains: ["acme.com"] }, urls, contexts.make())).toEqual(["https://www.acme.com/about"])
  })

  it("names an invalid regex (VALIDATION_ERROR)", async () => {
    const f = await expectJobFailure(runOp(ops.filter_urls!, { include: ["ok", "(unclosed"] }, urls, contexts.make()))
    expect(f).toMatchObject({ kind: "VALIDATION_ERROR", message: expect.stringMatching(/^filter_urls: invalid include regex "\(unclosed": /) })
    const g = await expectJobFailure(runOp(ops.filter_urls!, { exclude: ["[z-a]"] }, urls, contexts.make()))
    expect(g.message).toMatch(/^filter_urls: invalid exclude regex "\[z-a\]"/)
    const h = await expectJobFailure(runOp(ops.filter_urls!, { same_domain_as: "acme.com" }, urls, contexts.make()))
    expect(h.message).toBe('filter_urls: same_domain_as "acme.com" is not an absolute http(s) URL')
  })

  it("never outputs more than max, nothing twice when deduping, only http(s) URLs", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.webUrl({ withQueryParameters: true, withFragments: true }), fc.string())), fc.option(fc.nat(20), { nil: null }), (list, max) => {
        const { kept } = filterUrls(list, { dedupe: true, max })
        if (max !== null) expect(kept.length).toBeLessThanOrEqual(max)
        expect(new Set(kept).size).toBe(kept.length)
        for (const u of kept) expect(normaliseUrl(u)).toBe(u)
      }),
      { numRuns: 200 }
    )
  })
})

describe("links", () => {
  it("extracts an article's links resolved against the final URL, normalised, in page order", async () => {
    const page = await runOp<Page>(ops.fetch!, { url: `${web.url}/old/acme-ceo` }, undefined, contexts.make())
    const links = await runOp<string[]>(ops.links!, {}, page, contexts.make())
    const site = Object.keys(SITES).map((s) => `${web.url}/${s}/`)
    const article = WEB_PAGE_BY_PATH.get("/acme-news/acme-names-new-ceo")!
    expect(links).toEqual([
      `${web.url}/acme-news/`,
      `${web.url}/`,
      ...site.slice(1),
      `${web.url}/private/members`,
      ...article.related.map((p) => `${web.url}${p}`)
    ])
  })

  it("merges the links of several pages without repeats, with same_domain and max", async () => {
    const pages = await runOp<Page[]>(ops.fetch_batch!, {}, [`${web.url}/energy-daily/`, `${web.url}/gen/7`], contexts.make())
    const all = await runOp<string[]>(ops.links!, {}, pages, contexts.make())
    expect(all.filter((u) => u.includes("/energy-daily/") && u !== `${web.url}/energy-daily/`)).toHaveLength(4)
    expect(all.slice(-3)).toEqual([`${web.url}/gen/1`, `${web.url}/gen/8`, `${web.url}/gen/9`])
    expect(new Set(all).size).toBe(all.length)
    expect(await runOp(ops.links!, { max: 2 }, pages, contexts.make())).toEqual(all.slice(0, 2))
  })

  it("resolves against <base href>, skips non-http and fragment-only links, and reads no links from non-HTML", () => {
    const page: Page = {
      url: "https://a.example/dir/page",
      final_url: "https://a.example/dir/page",
      status: 200,
      content_type: "text/html",
      html: `<html><head><base href="https://cdn.example/root/"></head><body>
        <a href="x.html">x</a> <a href="#top">top</a> <a href="mailto:a@b.c">m</a> <a href="javascript:void(0)">j</a>
        <a href="https://a.example/y?utm_source=z&amp;b=1">y</a> <area href="/map"> <a>no href</a> <a href="x.html#again">x again</a></body></html>`
    }
    expect(pageLinks(page)).toEqual(["https://cdn.example/root/x.html", "https://a.example/y?b=1", "https://cdn.example/map"])
    expect(pageLinks(page, true)).toEqual(["https://cdn.example/root/x.html", "https://cdn.example/map"])
    expect(pageLinks({ ...page, content_type: "application/json" })).toEqual([])
  })
})
