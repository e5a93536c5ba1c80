/**
 * The 14 terminal templates of the research client (research-jobs spec, "Terminal client"), each
 * mapped to a graph job payload: a built-in graph template with params derived from the terminal
 * parameters, or a custom graph YAML shipped beside this module in `graphs/`.
 */
import * as fs from "node:fs"
import * as path from "node:path"

/** A terminal template parameter; `list` values are given comma-separated on the command line. */
export interface TemplateParam {
  readonly name: string
  readonly optional: boolean
  readonly list: boolean
  readonly description: string
}

/** The graph job body (`POST /api/v1/jobs/graph`) a terminal template run submits. */
export type GraphPayload =
  | { readonly template: string; readonly params: Record<string, unknown> }
  | { readonly graph: string; readonly params: Record<string, unknown> }

/** One terminal template. */
export interface TerminalTemplate {
  readonly name: string
  readonly description: string
  readonly params: ReadonlyArray<TemplateParam>
  /** What it runs: `template:<built-in>` or `graph:<file>` (for listings and the README). */
  readonly runs: string
  /** Example inputs as typed after the template name (what `/auto` cycles through). */
  readonly examples: ReadonlyArray<string>
  /** The payload for the given parameter values (required ones present, lists already split). */
  readonly payload: (values: Readonly<Record<string, string | ReadonlyArray<string>>>) => GraphPayload
}

const p = (name: string, description: string, o: { optional?: boolean; list?: boolean } = {}): TemplateParam => ({
  name,
  description,
  optional: o.optional ?? false,
  list: o.list ?? false
})

const GRAPHS_DIR = path.join(import.meta.dirname, "graphs")

/** The YAML of a shipped custom graph (read on use, so listing never touches the disk). */
const graphYaml = (name: string): string => fs.readFileSync(path.join(GRAPHS_DIR, `${name}.yaml`), "utf8")

/** Only the values given: a graph input left out takes its default. */
const defined = (o: Record<string, unknown>): Record<string, unknown> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== ""))

const text = (v: string | ReadonlyArray<string> | undefined): string | undefined => (v === undefined ? undefined : Array.isArray(v) ? v.join(", ") : (v as string))

/** A terminal template over a shipped graph whose inputs are named as the terminal parameters. */
const custom = (name: string, description: string, params: ReadonlyArray<TemplateParam>, examples: ReadonlyArray<string>): TerminalTemplate => ({
  name,
  description,
  params,
  runs: `graph:graphs/${name}.yaml`,
  examples,
  payload: (values) => ({ graph: graphYaml(name), params: defined({ ...values }) })
})

/** The ISO date `days` days before now (UTC). */
const daysAgo = (days: number): string => new Date(Date.now() - days * 86_400_000).toISOString().slice(0, 10)

const positiveInt = (name: string, v: string | undefined, fallback: number): number => {
  if (v === undefined || v === "") return fallback
  const n = Number(v)
  if (!Number.isInteger(n) || n < 1) throw new InputError(`${name} must be a positive whole number, got "${v}"`)
  return n
}

/**
 * A terminal input that does not fit the template (shown to the user as is). A plain `Error`:
 * `platform research` starts without loading Effect (effect/Data alone is about 62 modules).
 */
export class InputError extends Error {
  readonly _tag = "InputError"
}

/** The 14 terminal templates, in the spec's order. */
export const TERMINAL_TEMPLATES: ReadonlyArray<TerminalTemplate> = [
  {
    name: "simple_search",
    description: "Search the web and answer the query from the best passages, with cited sources.",
    params: [p("query", "the question")],
    runs: "template:basic_research (max_urls 10)",
    examples: ["solar power record output", "Acme Robotics chief executive", "Jane Doe Senate campaign"],
    payload: (v) => ({ template: "basic_research", params: { query: text(v.query), max_urls: 10 } })
  },
  {
    name: "person_deep_research",
    description: "Deep research on a person: link expansion, entities, a vector index, a synthesis and a report.",
    params: [p("person_name", "who"), p("context", "what about them (added to the query)", { optional: true })],
    runs: "template:deep_research (query = person_name + context, max_urls 30)",
    examples: ["Jane Doe", "person_name=\"Maria Chen\" context=\"Acme Robotics\""],
    payload: (v) => ({ template: "deep_research", params: { query: [text(v.person_name), text(v.context)].filter(Boolean).join(" "), max_urls: 30 } })
  },
  {
    name: "opponent_deep_dive",
    description: "Opposition research: web, archived pages and video transcripts; entities, a dated timeline, a report.",
    params: [p("opponent_name", "the opponent"), p("geo_focus", "a place that narrows every search (appended to the name)", { optional: true })],
    runs: "template:opposition_research (subject_name = opponent_name + geo_focus, archives and video on)",
    examples: ["Jane Doe"],
    payload: (v) => ({
      template: "opposition_research",
      params: { subject_name: [text(v.opponent_name), text(v.geo_focus)].filter(Boolean).join(" "), include_archives: true, include_video: true }
    })
  },
  custom(
    "corporate_intelligence",
    "A company from the web and its news, widened by its ticker and industry: entities, executives, synthesis, report.",
    [p("company_name", "the company"), p("ticker", "stock ticker", { optional: true }), p("industry", "its industry", { optional: true })],
    ["Acme Robotics", "company_name=\"Acme Robotics\" industry=robotics"]
  ),
  custom("news_50_states", "How the news story at a URL is covered in each of the 50 US states.", [p("url", "the story's page")], []),
  custom(
    "geo_news_comparison",
    "How the news of several regions covers the story at a URL: per-region news searches, compared by aspect.",
    [p("url", "the story's page"), p("regions", "region codes, comma-separated (us,gb,de)", { list: true })],
    []
  ),
  {
    name: "recent_website_changes",
    description: "What changed on a page lately: archived snapshots of the last days, compared, a timeline and a report.",
    params: [p("url", "the page"), p("days_back", "how far back, days (default 30)", { optional: true })],
    runs: "template:temporal_analysis (start_date = today - days_back, end_date = today)",
    examples: ["http://example.com/"],
    payload: (v) => ({
      template: "temporal_analysis",
      params: { url: text(v.url), start_date: daysAgo(positiveInt("days_back", text(v.days_back), 30)), end_date: daysAgo(0) }
    })
  },
  custom(
    "historical_change_tracker",
    "Archived versions of several pages between two dates, their changes, a timeline and a report.",
    [p("target_urls", "the pages, comma-separated", { list: true }), p("date_from", "YYYY-MM-DD (default 2020-01-01)", { optional: true }), p("date_to", "YYYY-MM-DD (default today)", { optional: true })],
    ["http://example.com/"]
  ),
  custom("position_tracker", "A person's stated positions on a topic over time, dated, with a synthesis.", [p("person_name", "who"), p("topic", "on what")], [
    "person_name=\"Jane Doe\" topic=energy"
  ]),
  custom("competitor_comparison", "Several companies researched one by one, then compared aspect by aspect.", [
    p("companies", "company names, comma-separated", { list: true })
  ], ["Acme Robotics, Globex"]),
  custom(
    "topic_sentiment_tracker",
    "Recent coverage of a topic and its subtopics: themes, sentiment per subject, a synthesis.",
    [p("topic", "the topic"), p("subtopics", "comma-separated", { optional: true, list: true })],
    ["solar power", "topic=\"solar power\" subtopics=storage,prices"]
  ),
  {
    name: "media_coverage_analysis",
    description: "News coverage of a subject over the last month in the US and UK: articles, sources, a synthesis.",
    params: [p("subject", "the subject")],
    runs: "template:news_aggregation (topic = subject, regions us, gb, days 30)",
    examples: ["solar power", "Acme Robotics"],
    payload: (v) => ({ template: "news_aggregation", params: { topic: text(v.subject), regions: ["us", "gb"], days: 30 } })
  },
  {
    name: "autonomous_research_agent",
    description: "Research that follows links from its search results as deep as asked: entities, synthesis, report.",
    params: [p("query", "the question"), p("depth", "1 to 10 (default 3): 10 pages per level", { optional: true })],
    runs: "template:deep_research (max_urls = 10 x depth)",
    examples: ["solar power storage", "query=\"Jane Doe town hall\" depth=2"],
    payload: (v) => {
      const depth = positiveInt("depth", text(v.depth), 3)
      if (depth > 10) throw new InputError(`depth must be 1 to 10, got ${depth}`)
      return { template: "deep_research", params: { query: text(v.query), max_urls: 10 * depth } }
    }
  },
  custom("tor_search_crawl", "Search results fetched through Tor, with entities and an answer.", [p("query", "the question")], [
    "Acme Robotics credentials"
  ])
]

/** The terminal template named `name`, or undefined. */
export const findTemplate = (name: string): TerminalTemplate | undefined => TERMINAL_TEMPLATES.find((t) => t.name === name)

/** `name (a, b?, c[])`: the spec's notation of a template's parameters. */
export const signature = (t: TerminalTemplate): string => `${t.name} (${t.params.map((x) => `${x.name}${x.list ? "[]" : ""}${x.optional ? "?" : ""}`).join(", ")})`

/** Splits `text` into words, keeping `"quoted phrases"` and `key="quoted values"` whole (quotes removed). */
const words = (text: string): Array<string> => {
  const out: Array<string> = []
  const re = /(\S*?)"([^"]*)"|(\S+)/g
  for (let m = re.exec(text); m !== null; m = re.exec(text)) out.push(m[3] ?? `${m[1]}${m[2]}`)
  return out
}

/**
 * The parameter values of `input` for `t`:
 * - a JSON object (`{"person_name": "Jane Doe", "topic": "energy"}`) gives them by name;
 * - `name=value` words (quote values with spaces: `topic="solar power"`) give them by name, and
 *   any other words form the first parameter not named;
 * - otherwise the whole input is the first parameter.
 * List parameters split on commas. Throws `InputError` for an unknown name or a missing
 * required parameter (naming the template's signature).
 */
export const parseInput = (t: TerminalTemplate, input: string): Record<string, string | ReadonlyArray<string>> => {
  const raw: Record<string, string> = {}
  const trimmed = input.trim()
  if (trimmed.startsWith("{")) {
    let parsed: unknown
    try {
      parsed = JSON.parse(trimmed)
    } catch (e) {
      throw new InputError(`input is not valid JSON: ${(e as Error).message}`)
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new InputError("input JSON must be an object of parameters")
    for (const [k, v] of Object.entries(parsed)) raw[k] = Array.isArray(v) ? v.map(String).join(",") : String(v)
  } else if (/(^|\s)[a-z_]+=/.test(trimmed)) {
    const free: Array<string> = []
    for (const w of words(trimmed)) {
      const m = /^([a-z_]+)=(.*)$/s.exec(w)
      if (m) raw[m[1]!] = m[2]!
      else free.push(w)
    }
    const first = t.params.find((x) => raw[x.name] === undefined)
    if (free.length > 0 && first) raw[first.name] = free.join(" ")
    else if (free.length > 0) throw new InputError(`unexpected text "${free.join(" ")}": every parameter of ${signature(t)} is already given`)
  } else if (trimmed !== "") {
    raw[t.params[0]!.name] = trimmed
  }
  const unknown = Object.keys(raw).filter((k) => !t.params.some((x) => x.name === k))
  if (unknown.length > 0) throw new InputError(`unknown parameter ${unknown.map((k) => `"${k}"`).join(", ")}: ${signature(t)}`)
  const missing = t.params.filter((x) => !x.optional && (raw[x.name] === undefined || raw[x.name]!.trim() === ""))
  if (missing.length > 0) throw new InputError(`missing ${missing.map((x) => x.name).join(", ")}: ${signature(t)}`)
  const values: Record<string, string | ReadonlyArray<string>> = {}
  for (const x of t.params) {
    const v = raw[x.name]?.trim()
    if (v === undefined || v === "") continue
    values[x.name] = x.list ? v.split(",").map((s) => s.trim()).filter(Boolean) : v
  }
  return values
}

/** The graph payload for `input` typed after template `t` (see `parseInput`); throws `InputError`. */
export const payloadFor = (t: TerminalTemplate, input: string): GraphPayload => t.payload(parseInput(t, input))
