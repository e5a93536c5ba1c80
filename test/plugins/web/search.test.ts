/**
 * `search` through the provider extension point with the SearXNG provider against the
 * SearXNG-shaped fixture: rank order, paging, de-duplication, passthrough of language,
 * time_range and categories, the query from input or params, and the errors of a missing
 * provider, a JSON-less instance and an unreachable one.
 */
import * as Effect from "effect/Effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import * as Registry from "../../../core/Registry.ts"
import { runSearch, type SearchProvider } from "../../../plugins/web/Contract.ts"
import type { Fixture } from "../../fixtures/pages-server.ts"
import { serve } from "../../fixtures/pages-server.ts"
import { rank, searxngServer } from "../../fixtures/searxng-server.ts"
import { WEB_PAGES, type WebFixture, webServer } from "../../fixtures/web-server.ts"
import { freePort } from "../jobs/support.ts"
import { expectJobFailure, jobContexts } from "../jobs/net/jobContext.ts"
import { runOp, webOpsFor } from "./support.ts"

let web: WebFixture
let searx: Fixture
let setup: ReturnType<typeof webOpsFor>
const contexts = jobContexts()

beforeAll(async () => {
  web = await webServer()
  searx = await searxngServer(web.url)
  setup = webOpsFor({ searxng_url: searx.url })
})
afterAll(async () => {
  await setup?.close()
  await searx?.close()
  await web?.close()
})
afterEach(() => {
  contexts.cleanup()
  searx.log.length = 0
})

const q = (line: string) => new URL(line.split(" ")[1]!, "http://x").searchParams

describe("search with the searxng provider", () => {
  it("returns result URLs in the provider's rank order (query from the input)", async () => {
    const ctx = contexts.make()
    const urls = await runOp<string[]>(setup.ops.search!, {}, "Maria Chen Acme Robotics", ctx)
    const expected = rank("Maria Chen Acme Robotics").map((r) => `${web.url}${r.page.path}`)
    expect(urls).toEqual(expected.slice(0, 10))
    expect(urls[0]).toBe(`${web.url}/acme-news/acme-names-new-ceo`)
    expect(urls.every((u) => u.includes("/acme-news/") || u.includes("/energy-daily/"))).toBe(true)
    // fewer hits than max_results on page 1: page 2 is read, comes back empty, and ends the search
    expect(urls.length).toBeLessThan(10)
    expect(searx.log.map((l) => Object.fromEntries(q(l)))).toEqual([1, 2].map((n) => ({ q: "Maria Chen Acme Robotics", format: "json", pageno: String(n) })))
    expect(ctx.progressLog.at(-1)?.message).toBe(`search: ${urls.length} results from searxng for "Maria Chen Acme Robotics"`)
  })

  it("takes the query from params, caps max_results, and reads further pages for more", async () => {
    const few = await runOp<string[]>(setup.ops.search!, { query: "solar", max_results: 3 }, null, contexts.make())
    expect(few).toEqual(rank("solar").slice(0, 3).map((r) => `${web.url}${r.page.path}`))
    expect(searx.log).toHaveLength(1)
    searx.log.length = 0
    // "the" matches every article: 12 hits over two pages of 10
    const many = await runOp<string[]>(setup.ops.search!, { query: "the", max_results: 50 }, undefined, contexts.make())
    expect(many).toHaveLength(WEB_PAGES.length)
    expect(new Set(many).size).toBe(many.length)
    expect(searx.log.map((l) => q(l).get("pageno"))).toEqual(["1", "2", "3"])
  })

  it("passes language, time_range and categories through", async () => {
    const recent = await runOp<string[]>(setup.ops.search!, { query: "solar power", time_range: "week", language: "en", categories: ["news"] }, undefined, contexts.make())
    // only the energy articles are dated within the week
    expect(recent.length).toBeGreaterThanOrEqual(4)
    expect(recent.every((u) => u.includes("/energy-daily/"))).toBe(true)
    const sent = q(searx.log[0]!)
    expect([sent.get("language"), sent.get("time_range"), sent.get("categories")]).toEqual(["en", "week", "news"])
    expect(await runOp(setup.ops.search!, { query: "solar", categories: "images" }, undefined, contexts.make())).toEqual([])
  })

  it("refuses an empty query and an unknown provider (VALIDATION_ERROR)", async () => {
    const empty = await expectJobFailure(runOp(setup.ops.search!, {}, "  ", contexts.make()))
    expect(empty).toMatchObject({ kind: "VALIDATION_ERROR", message: "search: no query (give a string input or params.query)" })
    const unknown = await expectJobFailure(runOp(setup.ops.search!, { provider: "bing" }, "solar", contexts.make()))
    expect(unknown).toMatchObject({ kind: "VALIDATION_ERROR", message: 'search: unknown search provider "bing" (registered: searxng)' })
  })

  it("explains a 403 (JSON format disabled) and an unreachable instance", async () => {
    const forbidding = await serve((_req, res) => {
      res.writeHead(403, { "content-type": "text/html" })
      res.end("<h1>403 Forbidden</h1>")
    })
    const port = await freePort()
    const noJson = webOpsFor({ searxng_url: forbidding.url })
    const down = webOpsFor({ searxng_url: `http://127.0.0.1:${port}` })
    try {
      const f = await expectJobFailure(runOp(noJson.ops.search!, {}, "solar", contexts.make()))
      expect(f).toMatchObject({ kind: "REMOTE_ERROR", message: expect.stringContaining("does not serve format=json (add json to search.formats") })
      expect(f.message.startsWith("search: searxng search at")).toBe(true)
      const g = await expectJobFailure(runOp(down.ops.search!, {}, "solar", contexts.make()))
      expect(g.kind).toBe("NETWORK_ERROR")
      expect(g.message).toBe(`search: searxng search at http://127.0.0.1:${port} failed: ECONNREFUSED`)
    } finally {
      await noJson.close()
      await down.close()
      await forbidding.close()
    }
  })

  it("is cancelled within a second while the provider hangs", async () => {
    const hanging = await serve(() => undefined)
    const slow = webOpsFor({ searxng_url: hanging.url })
    try {
      const ctx = contexts.make()
      const started = Date.now()
      const p = runOp(slow.ops.search!, {}, "solar", ctx)
      setTimeout(() => ctx.controller.abort(new Error("stop")), 200)
      expect((await expectJobFailure(p)).kind).toBe("CANCELLED")
      expect(Date.now() - started).toBeLessThan(1200)
    } finally {
      await slow.close()
      await hanging.close()
    }
  })
})

describe("runSearch (the contract's search by provider id)", () => {
  it("uses any contributed provider, keeps rank order, drops repeats and non-http URLs, caps the count", async () => {
    const calls: Array<{ query: string; limit: number }> = []
    const fake: SearchProvider = {
      id: "fixed",
      description: "a provider with fixed answers",
      search: async (query, o) => {
        calls.push({ query, limit: o.limit })
        return [
          { url: "https://b.example/1#x", title: "B1", snippet: "" },
          { url: "https://B.example/1", title: "B1 again", snippet: "" },
          { url: "ftp://c.example/f", title: "ftp", snippet: "" },
          { url: "https://a.example/2", title: "A2", snippet: "s" },
          { url: "https://a.example/3", title: "A3", snippet: "s" }
        ]
      }
    }
    const registry = Registry.make<SearchProvider>("search provider")
    Effect.runSync(registry.register("test", fake.id, fake))
    const hits = await runSearch(registry, "fixed", "  anything ", { limit: 2, signal: new AbortController().signal })
    expect(hits.map((h) => h.title)).toEqual(["B1", "A2"])
    expect(calls).toEqual([{ query: "anything", limit: 2 }])
  })
})
