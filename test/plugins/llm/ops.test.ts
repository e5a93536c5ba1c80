/**
 * The language-model operations, called directly with a real graph-operation context against
 * the model fixture (a real HTTP server speaking the OpenAI protocol): what each op sends, and
 * what it makes of the answers.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Schema from "effect/Schema"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { EntityStore } from "../../../plugins/llm/Contract.ts"
import { chatOp, compareOp, entitiesOp, integrateOp, llmOps, relevanceFilterOp, summarizeOp, topicsOp, toReportOp } from "../../../plugins/llm/GraphOps.ts"
import { type ModelServer, startModelServer } from "../../fixtures/model-server.ts"
import { jobContexts } from "../jobs/net/jobContext.ts"
import { BLOG, CHUNKS, clientOf, NEWS, userOf } from "./support.ts"

let fx: ModelServer
const contexts = jobContexts()
const ctx = () => contexts.make()

beforeAll(async () => {
  fx = await startModelServer()
})
afterAll(async () => {
  await fx?.close()
})
beforeEach(() => {
  fx.requests.length = 0
})
afterEach(() => contexts.cleanup())

/** Runs `op` the way the engine does: params and input decoded with the op's Schemas first. */
const run = async (op: ReturnType<typeof llmOps>[number], params: unknown, input: unknown, c = ctx()) => {
  const p = Schema.decodeUnknownSync(op.params)(params)
  const i = Schema.decodeUnknownSync(op.input)(input)
  const out = await op.handler(p, i, c)
  return Schema.decodeUnknownSync(op.output)(out)
}

describe("entities", () => {
  it("finds the people, organisations, places, dates and events, merged across inputs with mentions and sources", async () => {
    const got = await run(entitiesOp(clientOf(fx.url)), {}, [NEWS, BLOG])
    const by = (name: string) => got.find((e: any) => e.name === name)
    expect(by("Acme Robotics")).toMatchObject({ type: "organization", mentions: 3, sources: [NEWS.url, BLOG.url] })
    expect(by("Maria Lopez")).toMatchObject({ type: "person", mentions: 2, sources: [NEWS.url] })
    expect(by("Maria Lopez").description).toContain("chief executive")
    expect(by("John Chen")).toMatchObject({ type: "person", mentions: 1, sources: [BLOG.url] })
    expect(by("Bolt Corp")).toMatchObject({ type: "organization", mentions: 2, sources: [BLOG.url] })
    expect(by("Berlin")).toMatchObject({ type: "location", mentions: 2, sources: [NEWS.url, BLOG.url] })
    expect(by("Paris")).toMatchObject({ type: "location", mentions: 1 })
    expect(by("March 3, 2026")).toMatchObject({ type: "date", sources: [NEWS.url] })
    expect(by("2026-05-01")).toMatchObject({ type: "date", sources: [BLOG.url] })
    expect(by("Hannover Robotics Summit")).toMatchObject({ type: "event" })
    // Most mentioned first.
    expect(got[0].name).toBe("Acme Robotics")
    // One call for both inputs; a strict json_schema answer format naming the types asked.
    const chats = fx.chats()
    expect(chats).toHaveLength(1)
    expect(chats[0]).toMatchObject({ model: "model-linear", temperature: 0, response_format: { type: "json_schema", json_schema: { name: "entities", strict: true } } })
    expect(chats[0].response_format.json_schema.schema.properties.entities.items.properties.type.enum).toEqual(["person", "organization", "location", "date", "event"])
    expect(userOf(chats[0])).toContain(`[1] Acme expands — ${NEWS.url}`)
  })

  it("merges the answers of several calls when the inputs do not fit one prompt, and keeps to `types` and `max`", async () => {
    const small = clientOf(fx.url, { maxInputChars: 300 })
    const got = await run(entitiesOp(small), {}, [NEWS, BLOG])
    expect(fx.chats()).toHaveLength(2)
    expect(got.find((e: any) => e.name === "Acme Robotics")).toMatchObject({ mentions: 3, sources: [NEWS.url, BLOG.url] })
    expect(got.find((e: any) => e.name === "Berlin")).toMatchObject({ mentions: 2, sources: [NEWS.url, BLOG.url] })
    fx.requests.length = 0
    const people = await run(entitiesOp(clientOf(fx.url)), { types: ["Person"], max: 1 }, CHUNKS)
    expect(people).toEqual([{ name: "Maria Lopez", type: "person", mentions: 2, sources: [NEWS.url], description: expect.any(String) }])
    expect(fx.chats()[0].response_format.json_schema.schema.properties.entities.items.properties.type.enum).toEqual(["person"])
  })

  it("shortens an input longer than max_input_chars, with a note in the prompt", async () => {
    const long = { ...NEWS, text: `${NEWS.text} ${"Filler words about nothing in particular. ".repeat(100)}` }
    const got = await run(entitiesOp(clientOf(fx.url, { maxInputChars: 500 })), {}, long)
    expect(got.map((e: any) => e.name)).toContain("Maria Lopez")
    const user = userOf(fx.chats()[0])
    expect(user).toMatch(/\[… shortened to fit the context window: \d+ of 4\d{3} characters shown\]/)
    expect(user.length).toBeLessThan(1500)
  })

  it("sends the op's model and base_url params instead of the config's", async () => {
    const other = await startModelServer()
    try {
      await run(entitiesOp(clientOf(fx.url)), { model: "model-big", base_url: other.url }, "Maria Lopez met John Chen.")
      expect(fx.chats()).toHaveLength(0)
      expect(other.chats()[0].model).toBe("model-big")
      expect(other.requests[0]!.headers.authorization).toBe("Bearer test-key")
    } finally {
      await other.close()
    }
  })
})

describe("topics and summarize", () => {
  it("topics: the most frequent themes, weights as shares summing to 1", async () => {
    const got = await run(topicsOp(clientOf(fx.url)), { max_topics: 3 }, [NEWS, BLOG])
    expect(got).toHaveLength(3)
    expect(got.map((t: any) => t.label)).toEqual(expect.arrayContaining(["acme", "robotics"]))
    expect(got.reduce((n: number, t: any) => n + t.weight, 0)).toBeCloseTo(1, 6)
    expect(got[0].weight).toBeGreaterThanOrEqual(got[2].weight)
    expect(got.find((t: any) => t.label === "acme").keywords).toContain("robotics")
    expect(fx.chats()[0].response_format.json_schema.name).toBe("topics")
  })

  it("summarize: keeps to max_words and to the focus", async () => {
    const got = await run(summarizeOp(clientOf(fx.url)), { max_words: 25, focus: "Bolt Corp competition" }, CHUNKS)
    expect(typeof got).toBe("string")
    expect(got.split(/\s+/).length).toBeLessThanOrEqual(25)
    expect(got).toContain("Bolt Corp")
    expect(got).not.toContain("Hannover")
    const user = userOf(fx.chats()[0])
    expect(user).toContain("Focus: Bolt Corp competition")
    expect(user).toContain("at most 25 words")
    expect(fx.chats()[0].response_format).toBeUndefined()
  })
})

describe("integrate", () => {
  it("answers from the chunks only, citing [n] with a numbered list of the cited URLs", async () => {
    const got = await run(integrateOp(clientOf(fx.url)), { query: "When will Bolt Corp enter the market?" }, CHUNKS)
    const [answer, sources] = got.split("\n\nSources:\n")
    expect(answer).toContain("Bolt Corp plans to enter Berlin on 2026-05-01. [2]")
    expect(sources).toBe(`[2] ${BLOG.url}`)
    // Chunks of one page are one numbered source, in index order.
    const user = userOf(fx.chats()[0])
    expect(user).toContain(`[1] ${NEWS.url}\n${CHUNKS[0]!.text}\n\n${CHUNKS[2]!.text}`)
    expect(user).toContain("Question: When will Bolt Corp enter the market?")
  })

  it("lists every source when the answer cites none, and rejects an empty input", async () => {
    const got = await run(integrateOp(clientOf(fx.url)), { query: "xyzzy plugh" }, ["First plain text.", "Second plain text."])
    expect(got).toMatch(/\n\nSources:\n\[1\] text 1 \(no URL\)\n\[2\] text 2 \(no URL\)$/)
    await expect(run(integrateOp(clientOf(fx.url)), { query: "q" }, ["  "])).rejects.toMatchObject({ kind: "VALIDATION_ERROR", message: "integrate: the input holds no text" })
  })
})

describe("chat and compare", () => {
  it("chat renders any input as context and passes the system message", async () => {
    const entities = await run(entitiesOp(clientOf(fx.url)), {}, [NEWS, BLOG])
    fx.requests.length = 0
    const got = await run(chatOp(clientOf(fx.url)), { prompt: "Who is the chief executive of Acme Robotics?", system: "Answer in one line." }, [entities, NEWS])
    expect(got).toContain("Maria Lopez")
    const body = fx.chats()[0]
    expect(body.messages[0]).toEqual({ role: "system", content: "Answer in one line." })
    expect(userOf(body)).toMatch(/\[1\] entities\n- Acme Robotics \(organization; 3 mentions; https:\/\/news\.example\/acme, https:\/\/blog\.example\/robots\)/)
    const bare = await run(chatOp(clientOf(fx.url)), { prompt: "Say hello" }, undefined)
    expect(bare).toContain("Say hello")
    expect(userOf(fx.chats()[1])).toBe("Question: Say hello")
  })

  it("compare: per aspect each source's finding (by URL) and a verdict", async () => {
    const got = await run(compareOp(clientOf(fx.url)), { aspects: ["Berlin", "workers"] }, CHUNKS) as any
    expect(got.aspects.map((a: any) => a.aspect)).toEqual(["Berlin", "workers"])
    const berlin = got.aspects[0]
    expect(berlin.findings).toEqual([
      { source: NEWS.url, summary: "Acme Robotics opened a new factory in Berlin on March 3, 2026." },
      { source: BLOG.url, summary: "Bolt Corp plans to enter Berlin on 2026-05-01." }
    ])
    expect(berlin.verdict).toBe("All sources discuss Berlin.")
    expect(got.aspects[1].findings[0].summary).toBe("The factory employs 400 workers.")
    expect(got.aspects[1].verdict).toBe("Only [1] discuss workers.")
    expect(got.summary).toContain("Compared 2 sources")
    expect(fx.chats()[0].response_format.json_schema.schema.properties.aspects.items.properties.aspect.enum).toEqual(["Berlin", "workers"])
    // Two versions of one page: told apart by number and title.
    const versions = await run(compareOp(clientOf(fx.url)), { aspects: ["workers"] }, [{ ...NEWS, title: "2025" }, { ...NEWS, title: "2026", text: "The factory employs 900 workers." }]) as any
    expect(versions.aspects[0].findings.map((f: any) => f.source)).toEqual([`[1] 2025 — ${NEWS.url}`, `[2] 2026 — ${NEWS.url}`])
    expect(versions.aspects[0].findings[1].summary).toBe("The factory employs 900 workers.")
    await expect(run(compareOp(clientOf(fx.url)), { aspects: ["x"] }, [NEWS])).rejects.toMatchObject({ kind: "VALIDATION_ERROR", message: "compare: needs at least 2 sources to compare, got 1" })
  })
})

describe("to_report", () => {
  it("writes the Markdown body with the model, appends every input URL under Sources and stores report.md", async () => {
    const c = ctx()
    const synthesis = await run(integrateOp(clientOf(fx.url)), { query: "What did Acme Robotics open in Berlin?" }, CHUNKS)
    const entities = await run(entitiesOp(clientOf(fx.url)), {}, [NEWS, BLOG])
    fx.requests.length = 0
    const report = await run(toReportOp(clientOf(fx.url)), { title: "Delivery robots in Europe", instructions: "Focus on the Berlin factory." }, [synthesis, entities, ["https://extra.example/page"]], c) as any
    expect(report.title).toBe("Delivery robots in Europe")
    const md: string = report.markdown
    expect(md.startsWith("# Delivery robots in Europe\n\n## Findings\n\n- ")).toBe(true)
    expect(md).toContain("Acme Robotics opened a new factory in Berlin")
    const sources = md.split("\n## Sources\n\n")[1]!
    expect(sources.trim().split("\n")).toEqual([`1. <${NEWS.url}>`, `2. <${BLOG.url}>`, "3. <https://extra.example/page>"])
    // Stored as report.md (text/markdown), with exactly the returned Markdown.
    expect(c.stored).toEqual([{ name: "report.md", contentType: "text/markdown; charset=utf-8", url: report.file_url, size: Buffer.byteLength(md) }])
    expect(c.read(report.file_url).toString("utf8")).toBe(md)
    expect(userOf(fx.chats()[0])).toContain("Instructions: Focus on the Berlin factory.")
  })
})

describe("store_entity", () => {
  it("merges by case-insensitive name and type, sums mentions, unites sources, and persists across re-opens", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "llm-store-"))
    try {
      const op = llmOps(clientOf(fx.url), new EntityStore(dir)).find((o) => o.name === "store_entity")!
      const first = await run(op, { store: "acme" }, [
        { name: "Maria Lopez", type: "person", mentions: 2, sources: [NEWS.url], description: "chief executive" },
        { name: "Berlin", type: "location", mentions: 1, sources: [NEWS.url] }
      ])
      expect(first).toEqual({ store: "acme", stored: 2, total: 2 })
      const second = await run(op, { store: "acme" }, [
        { name: "maria lopez", type: "Person", mentions: 3, sources: [BLOG.url, NEWS.url] },
        { name: "Berlin", type: "organization", mentions: 1, sources: [] }
      ])
      expect(second).toEqual({ store: "acme", stored: 2, total: 3 })
      // A new store object over the same directory reads what was written.
      const reopened = new EntityStore(dir)
      const acme = await reopened.get("acme")
      expect(acme!.entities).toEqual([
        { name: "Maria Lopez", type: "person", mentions: 5, sources: [NEWS.url, BLOG.url], description: "chief executive" },
        { name: "Berlin", type: "location", mentions: 1, sources: [NEWS.url] },
        { name: "Berlin", type: "organization", mentions: 1, sources: [] }
      ])
      expect(await reopened.list()).toEqual([{ name: "acme", total: 3, updated_at: acme!.updated_at }])
      expect(await reopened.get("other")).toBeUndefined()
      // Concurrent writers of one store lose nothing (the lock file serialises them).
      await Promise.all(Array.from({ length: 8 }, (_, i) => run(op, { store: "busy" }, [{ name: "Shared", type: "event", mentions: 1, sources: [`https://s.example/${i}`] }])))
      const busy = await reopened.get("busy")
      expect(busy!.entities).toHaveLength(1)
      expect(busy!.entities[0]!.mentions).toBe(8)
      expect(busy!.entities[0]!.sources).toHaveLength(8)
      expect(fs.readdirSync(dir).sort()).toEqual(["acme.json", "busy.json"])
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it("refuses unsafe store names", () => {
    const op = llmOps(clientOf(fx.url), new EntityStore(os.tmpdir())).find((o) => o.name === "store_entity")!
    for (const bad of ["../x", "a/b", "", ".hidden", "x.lock", "a..b"]) expect(() => Schema.decodeUnknownSync(op.params)({ store: bad })).toThrow()
    expect(Schema.decodeUnknownSync(op.params)({})).toEqual({ store: "default" })
  })
})

describe("relevance_filter", () => {
  it("scores each text 0..10 against the query and keeps those at or above min_score, in input order", async () => {
    const off = { url: "https://example.org/recipes", title: "Soup", text: "A tomato soup recipe with basil, garlic and olive oil, simmered for twenty minutes." }
    const c = ctx()
    const all = (await run(relevanceFilterOp(clientOf(fx.url)), { query: "Acme Robotics Berlin factory" }, [NEWS, off, BLOG], c)) as Array<{ url: string; score: number; reason: string }>
    expect(all.map((d) => d.url)).toEqual([NEWS.url, off.url, BLOG.url])
    expect(all.every((d) => d.score >= 0 && d.score <= 10 && d.reason.length > 0)).toBe(true)
    const soup = all.find((d) => d.url === off.url)!
    const news = all.find((d) => d.url === NEWS.url)!
    expect(news.score).toBeGreaterThan(soup.score)
    expect(c.progressLog.at(-1)!.message).toBe("3/3 scored")
    const kept = (await run(relevanceFilterOp(clientOf(fx.url)), { query: "Acme Robotics Berlin factory", min_score: news.score }, [NEWS, off, BLOG])) as Array<{ url: string }>
    expect(kept.map((d) => d.url)).not.toContain(off.url)
    expect(kept.map((d) => d.url)).toContain(NEWS.url)
  })
})
