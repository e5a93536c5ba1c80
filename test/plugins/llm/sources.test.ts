/**
 * How inputs become prompt text and what is read back: budgets, rendering of any graph value,
 * URLs, citations, mention counts, word limits.
 */
import { describe, expect, it } from "vitest"
import { citedNumbers, collectUrls, countMentions, fitBudget, limitWords, renderAny, sourcesBlock, toSources } from "../../../plugins/llm/Sources.ts"
import { BLOG, CHUNKS, NEWS } from "./support.ts"

describe("fitBudget", () => {
  it("keeps short texts whole and shares the rest equally among long ones, noting each cut", () => {
    const items = [{ text: "a".repeat(100) }, { text: "word ".repeat(400) }, { text: "long ".repeat(400) }]
    const { items: out, truncated } = fitBudget(items, 1100)
    expect(truncated).toBe(2)
    expect(out[0]!.text).toBe(items[0]!.text)
    for (const t of [out[1]!.text, out[2]!.text]) {
      const [kept, note] = t.split("\n")
      expect(kept!.length).toBeLessThanOrEqual(500)
      expect(kept!.length).toBeGreaterThan(490)
      expect(kept!.endsWith(" ")).toBe(false)
      expect(note).toBe(`[… shortened to fit the context window: ${kept!.length} of 2000 characters shown]`)
    }
    expect(fitBudget(items, 5000)).toEqual({ items, truncated: 0 })
  })
})

describe("rendering inputs", () => {
  it("texts, docs and chunks (grouped by source, in index order) become numbered sources", () => {
    expect(toSources("plain")).toEqual([{ url: null, label: "text 1", text: "plain" }])
    expect(toSources([NEWS, { url: null, title: null, text: "t" }]).map((s) => s.label)).toEqual([`Acme expands — ${NEWS.url}`, "text 2"])
    const grouped = toSources(CHUNKS)
    expect(grouped.map((s) => s.url)).toEqual([NEWS.url, BLOG.url])
    expect(grouped[0]!.text).toBe(`${CHUNKS[0]!.text}\n\n${CHUNKS[2]!.text}`)
    expect(sourcesBlock(grouped)).toMatch(/^SOURCES:\n\n\[1\] https:\/\/news\.example\/acme\nAcme Robotics[\s\S]*\n\n\[2\] https:\/\/blog\.example\/robots\n[\s\S]*\nEND OF SOURCES$/)
  })

  it("any value: several states in order, entity/topic/URL lists one source each, pages without tags, JSON otherwise", () => {
    const entity = { name: "Maria Lopez", type: "person", mentions: 2, sources: [NEWS.url], description: "chief executive" }
    const page = { url: "https://p.example/", final_url: "https://p.example/x", status: 200, content_type: "text/html", html: "<html><script>var x</script><p>Hello <b>page</b></p></html>" }
    const got = renderAny(["synthesis text", [entity], [{ label: "robots", keywords: ["robots", "delivery"], weight: 0.5 }], ["https://a.example/", "https://b.example/"], page, { aspects: [], summary: "s" }, null])
    expect(got.map((s) => s.label)).toEqual(["input 1", "entities", "topics", "URLs", "https://p.example/x", "input 6"])
    expect(got[1]!.text).toBe(`- Maria Lopez (person; 2 mentions; ${NEWS.url}): chief executive`)
    expect(got[2]!.text).toBe("- robots (weight 0.50): robots, delivery")
    expect(got[3]!.text).toBe("https://a.example/\nhttps://b.example/")
    expect(got[4]!.text).toBe("Hello page")
    expect(JSON.parse(got[5]!.text)).toEqual({ aspects: [], summary: "s" })
    expect(renderAny(undefined)).toEqual([])
  })
})

describe("reading back", () => {
  it("collectUrls: every http(s) URL anywhere, first-seen order, no trailing punctuation", () => {
    expect(collectUrls(["See https://a.example/x. And (https://b.example/y), again https://a.example/x", { nested: [{ url: "http://c.example/" }] }, 5]))
      .toEqual(["https://a.example/x", "https://b.example/y", "http://c.example/"])
  })

  it("citedNumbers: [n], [n, m] and [n][m], within range, ascending", () => {
    expect(citedNumbers("A [3]. B [1, 2]. C [2][4]. D [9] and [0].", 4)).toEqual([1, 2, 3, 4])
    expect(citedNumbers("none", 3)).toEqual([])
  })

  it("countMentions: whole phrases, case-insensitive, across line breaks", () => {
    expect(countMentions("Acme Robotics", "acme robotics, ACME\nRobotics and AcmeRobotics; Acme Roboticsy")).toBe(2)
    expect(countMentions("March 3, 2026", "on March 3, 2026 and March 3, 20261")).toBe(1)
    expect(countMentions("  ", "x")).toBe(0)
  })

  it("limitWords: within the limit as is; over it cut at a sentence end, else with an ellipsis", () => {
    expect(limitWords("One two three.", 5)).toBe("One two three.")
    expect(limitWords("One two three. Four five six seven.", 5)).toBe("One two three.")
    expect(limitWords("one two three four five six seven", 4)).toBe("one two three four…")
  })
})
