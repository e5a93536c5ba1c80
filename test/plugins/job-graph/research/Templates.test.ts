/**
 * The terminal templates' input parsing and payloads, and the prompt's Tab completions (pure;
 * the payloads are validated by the real kernel in terminal.test.ts).
 */
import { describe, expect, it } from "vitest"
import { completions } from "../../../../plugins/job-graph/research/Session.ts"
import { findTemplate, InputError, parseInput, payloadFor, TERMINAL_TEMPLATES } from "../../../../plugins/job-graph/research/Templates.ts"

const t = (name: string) => findTemplate(name)!

describe("terminal templates", () => {
  it("are the spec's 14 with its parameters", () => {
    expect(TERMINAL_TEMPLATES.map((x) => `${x.name} (${x.params.map((p) => `${p.name}${p.optional ? "?" : ""}`).join(", ")})`)).toEqual([
      "simple_search (query)", "person_deep_research (person_name, context?)", "opponent_deep_dive (opponent_name, geo_focus?)",
      "corporate_intelligence (company_name, ticker?, industry?)", "news_50_states (url)", "geo_news_comparison (url, regions)",
      "recent_website_changes (url, days_back?)", "historical_change_tracker (target_urls, date_from?, date_to?)", "position_tracker (person_name, topic)",
      "competitor_comparison (companies)", "topic_sentiment_tracker (topic, subtopics?)", "media_coverage_analysis (subject)",
      "autonomous_research_agent (query, depth?)", "tor_search_crawl (query)"
    ])
  })

  it("input: free text is the first parameter; name=value words with quotes; JSON; lists split on commas", () => {
    expect(parseInput(t("simple_search"), "  solar power  ")).toEqual({ query: "solar power" })
    expect(parseInput(t("position_tracker"), `person_name="Jane Doe" topic=energy`)).toEqual({ person_name: "Jane Doe", topic: "energy" })
    expect(parseInput(t("position_tracker"), `Jane Doe topic="clean energy"`)).toEqual({ person_name: "Jane Doe", topic: "clean energy" })
    expect(parseInput(t("geo_news_comparison"), `{"url": "http://x.test/a", "regions": ["us", "gb"]}`)).toEqual({ url: "http://x.test/a", regions: ["us", "gb"] })
    expect(parseInput(t("competitor_comparison"), "Acme Robotics, Globex ,")).toEqual({ companies: ["Acme Robotics", "Globex"] })
    expect(() => parseInput(t("position_tracker"), "topic=energy")).toThrow(new InputError("missing person_name: position_tracker (person_name, topic)"))
    expect(() => parseInput(t("simple_search"), "query=x colour=red")).toThrow(/unknown parameter "colour"/)
    expect(() => parseInput(t("simple_search"), "{nope")).toThrow(/not valid JSON/)
  })

  it("payloads: built-in templates with derived params, or the shipped graph YAML", () => {
    expect(payloadFor(t("person_deep_research"), `person_name="Maria Chen" context=Acme`)).toEqual({ template: "deep_research", params: { query: "Maria Chen Acme", max_urls: 30 } })
    expect(payloadFor(t("autonomous_research_agent"), "query=x depth=2")).toEqual({ template: "deep_research", params: { query: "x", max_urls: 20 } })
    expect(() => payloadFor(t("autonomous_research_agent"), "query=x depth=0")).toThrow(/depth must be a positive whole number/)
    const changes = payloadFor(t("recent_website_changes"), "url=http://example.com/ days_back=7") as { template: string; params: Record<string, string> }
    expect(changes.template).toBe("temporal_analysis")
    expect(Date.parse(changes.params.end_date!) - Date.parse(changes.params.start_date!)).toBe(7 * 86_400_000)
    const graph = payloadFor(t("competitor_comparison"), "Acme, Globex") as { graph: string; params: unknown }
    expect(graph.graph).toMatch(/^name: competitor_comparison$/m)
    expect(graph.params).toEqual({ companies: ["Acme", "Globex"] })
  })

  it("Tab completes commands, subcommands and template names", () => {
    expect(completions("/te")).toEqual([["/templates"], "/te"])
    expect(completions("/u")).toEqual([["/use "], "/u"])
    expect(completions("/use news")).toEqual([["news_50_states"], "news"])
    expect(completions("/run geo")).toEqual([["geo_news_comparison"], "geo"])
    expect(completions("/workspace c")).toEqual([["create", "clear"], "c"])
    expect(completions("/auto s")).toEqual([["stats", "stop"], "s"])
    expect(completions("plain query")[0]).toEqual([])
  })
})
