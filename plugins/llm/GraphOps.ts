/**
 * The language-model graph operations (research-jobs spec, "Operations by category"): Extract
 * `entities`, `topics`, `summarize`; Synthesize `integrate`, `chat`, `compare`, `to_report`;
 * Store `store_entity`. Every model call goes through one `ChatClient` (temperature 0, the op's
 * `model` / `base_url` params over the config's, the job's signal).
 */
import * as Schema from "effect/Schema"
import type { GraphOpContext, GraphOperation } from "../../core/Contribution.ts"
import { Chunk, Entity, Report, Text, Topic } from "../../core/GraphTypes.ts"
import { invalid, JobFailure } from "../jobs/Contract.ts"
import type { CallOverrides, ChatClient } from "./Client.ts"
import { type EntityStore, entityKey, mergeEntities, StoreName } from "./EntityStore.ts"
import * as Prompts from "./Prompts.ts"
import { scoreRelevance } from "./Relevance.ts"
import { citedNumbers, collectUrls, countMentions, fitBudget, limitWords, renderAny, type Source, toSources } from "./Sources.ts"

/** Params every model-calling op takes: `model` and `base_url` override the plugin's config for this op. */
const CallParams = {
  model: Schema.optionalWith(Schema.NullOr(Schema.String.pipe(Schema.minLength(1))), { default: () => null }).annotations({ description: "model id; null: the plugin's `model`" }),
  base_url: Schema.optionalWith(Schema.NullOr(Schema.String.pipe(Schema.pattern(/^https?:\/\/\S+$/))), { default: () => null }).annotations({ description: "OpenAI-compatible API base URL; null: the plugin's (the gateway by default)" })
}
const over = (p: { model: string | null; base_url: string | null }): CallOverrides => ({ model: p.model, baseUrl: p.base_url })

const TextsInput = Schema.Union(Text, Schema.Array(Text), Schema.Array(Chunk)).annotations({ description: "a text, a list of texts, or a list of chunks" })
type TextsInput = typeof TextsInput.Type
const ListInput = Schema.Union(Schema.Array(Text), Schema.Array(Chunk)).annotations({ description: "a list of texts or of chunks" })

const DEFAULT_TYPES = ["person", "organization", "location", "date", "event"]

/** `entities` params: `types` to look for, `max` entities returned. */
export const EntitiesParams = Schema.Struct({
  types: Schema.optionalWith(Schema.Array(Schema.String.pipe(Schema.pattern(/^[A-Za-z][\w -]{0,39}$/))).pipe(Schema.minItems(1), Schema.maxItems(30)), { default: () => DEFAULT_TYPES }),
  max: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 1000)), { default: () => 50 }),
  ...CallParams
})

/** `topics` params. */
export const TopicsParams = Schema.Struct({
  max_topics: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 50)), { default: () => 5 }),
  ...CallParams
})

/** `summarize` params: `max_words` of the summary, an optional `focus`. */
export const SummarizeParams = Schema.Struct({
  max_words: Schema.optionalWith(Schema.Int.pipe(Schema.between(10, 5000)), { default: () => 200 }),
  focus: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  ...CallParams
})

/** `integrate` params: the `query` answered from the input chunks. */
export const IntegrateParams = Schema.Struct({
  query: Schema.String.pipe(Schema.minLength(1)),
  ...CallParams
})

/** `chat` params: the `prompt`, an optional `system` message. */
export const ChatParams = Schema.Struct({
  prompt: Schema.String.pipe(Schema.minLength(1)),
  system: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  ...CallParams
})

/** `compare` params: the `aspects` compared. */
export const CompareParams = Schema.Struct({
  aspects: Schema.Array(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))).pipe(Schema.minItems(1), Schema.maxItems(30)),
  ...CallParams
})

/** `to_report` params: the report's `title` and extra `instructions` for the writer. */
export const ReportParams = Schema.Struct({
  title: Schema.optionalWith(Schema.String.pipe(Schema.minLength(1)), { default: () => "Research report" }),
  instructions: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  ...CallParams
})

/** `store_entity` params: the store's name. */
export const StoreEntityParams = Schema.Struct({
  store: Schema.optionalWith(StoreName, { default: () => "default" })
})

/** `compare`'s output (`json`): per aspect each source's finding and a verdict, then a summary. */
export const Comparison = Schema.Struct({
  aspects: Schema.Array(Schema.Struct({
    aspect: Schema.String,
    findings: Schema.Array(Schema.Struct({ source: Schema.String, summary: Schema.String })),
    verdict: Schema.String
  })),
  summary: Schema.String
}).annotations({ identifier: "LlmComparison" })
export type Comparison = typeof Comparison.Type

/** `store_entity`'s output (`json`). */
export const StoreEntityResult = Schema.Struct({
  store: Schema.String,
  stored: Schema.Int,
  total: Schema.Int
}).annotations({ identifier: "LlmStoreEntityResult" })

/** The sources of an input, shortened to the client's budget. */
const fitted = (client: ChatClient, sources: ReadonlyArray<Source>) => fitBudget(sources, client.options.maxInputChars).items

/**
 * Packs sources into batches whose texts sum to at most `budget` characters (a longer source is
 * a batch of its own, shortened), so many small texts share one call.
 */
const batches = (sources: ReadonlyArray<Source>, budget: number): Array<Array<Source>> => {
  const out: Array<Array<Source>> = []
  let cur: Array<Source> = []
  let size = 0
  for (const s of sources) {
    if (cur.length > 0 && size + s.text.length > budget) {
      out.push(cur)
      cur = []
      size = 0
    }
    cur.push(s)
    size += s.text.length
  }
  if (cur.length > 0) out.push(cur)
  return out.map((b) => fitBudget(b, budget).items)
}

const nonEmpty = (op: string, sources: ReadonlyArray<Source>) => {
  const kept = sources.filter((s) => s.text.trim().length > 0)
  if (kept.length === 0) throw invalid(`${op}: the input holds no text`)
  return kept
}

/**
 * `entities`: text(s) or chunks → `entity[]`. Inputs are packed into as few calls as fit
 * `max_input_chars`; the model names the entities, the op counts their mentions in the inputs
 * (whole-phrase, case-insensitive) and lists as `sources` the URLs of the inputs naming them.
 * Entities are merged by case-insensitive name and type; the `max` most mentioned are returned.
 */
export const entitiesOp = (client: ChatClient): GraphOperation<typeof EntitiesParams.Type, TextsInput, ReadonlyArray<Entity>> => ({
  name: "entities",
  description: "Extracts named entities (people, organizations, locations, dates, events by default) from texts with a language model; mentions counted and sources listed per entity.",
  category: "extract",
  inputTypes: ["text", "text[]", "chunk[]"],
  outputType: "entity[]",
  params: EntitiesParams,
  input: TextsInput,
  output: Schema.Array(Entity),
  handler: async (params, input, ctx) => {
    const types = [...new Set(params.types.map((t) => t.trim().toLowerCase()))]
    const answer = Prompts.entitiesAnswer(types)
    const groups = batches(nonEmpty("entities", toSources(input)), client.options.maxInputChars)
    let found: Array<Entity> = []
    for (const [i, batch] of groups.entries()) {
      const { system, user } = Prompts.entitiesPrompt(batch, types, params.max)
      const got = await client.json({ op: "entities", system, user, signal: ctx.signal, ...over(params) }, answer)
      // One entity named twice in an answer must not be counted twice.
      const seen = new Set<string>()
      for (const e of got.entities) {
        const name = e.name.trim()
        if (!name || seen.has(entityKey(e))) continue
        seen.add(entityKey(e))
        const counts = batch.map((s) => countMentions(name, s.text))
        const where = batch.filter((_, k) => counts[k]! > 0)
        const mentions = counts.reduce((a, b) => a + b, 0)
        // A name the text does not spell out (the model normalised it) still came from this batch.
        const sources = (where.length > 0 ? where : batch).flatMap((s) => (s.url ? [s.url] : []))
        found = mergeEntities(found, [{ name, type: e.type, mentions: Math.max(1, mentions), sources, ...(e.description.trim() ? { description: e.description.trim() } : {}) }])
      }
      await ctx.progress(Math.round(((i + 1) / groups.length) * 100), `entities: ${i + 1}/${groups.length} calls`)
    }
    return found.sort((a, b) => b.mentions - a.mentions || a.name.localeCompare(b.name)).slice(0, params.max)
  }
})

/** `topics`: texts or chunks → `topic[]`, at most `max_topics`, weights normalised to shares summing to 1. */
export const topicsOp = (client: ChatClient): GraphOperation<typeof TopicsParams.Type, TextsInput, ReadonlyArray<Topic>> => ({
  name: "topics",
  description: "Finds the main topics of a collection of texts with a language model: a label, keywords and a share per topic.",
  category: "extract",
  inputTypes: ["text", "text[]", "chunk[]"],
  outputType: "topic[]",
  params: TopicsParams,
  input: TextsInput,
  output: Schema.Array(Topic),
  handler: async (params, input, ctx) => {
    const sources = fitted(client, nonEmpty("topics", toSources(input)))
    const { system, user } = Prompts.topicsPrompt(sources, params.max_topics)
    const got = await client.json({ op: "topics", system, user, signal: ctx.signal, ...over(params) }, Prompts.TopicsAnswer)
    const topics = got.topics
      .filter((t) => t.label.trim())
      .map((t) => ({ label: t.label.trim(), keywords: [...new Set(t.keywords.map((k) => k.trim()).filter(Boolean))], weight: Number.isFinite(t.weight) ? Math.max(0, t.weight) : 0 }))
      .slice(0, params.max_topics)
    const sum = topics.reduce((n, t) => n + t.weight, 0)
    // Shares: models give raw weights, percentages or nothing; equal shares when nothing usable came.
    return topics
      .map((t) => ({ ...t, weight: sum > 0 ? t.weight / sum : 1 / topics.length }))
      .sort((a, b) => b.weight - a.weight)
  }
})

/** `summarize`: text(s) or chunks → one summary string of at most `max_words` words (cut at a sentence end when the model runs over). */
export const summarizeOp = (client: ChatClient): GraphOperation<typeof SummarizeParams.Type, TextsInput, string> => ({
  name: "summarize",
  description: "Summarizes texts with a language model in at most max_words words, optionally keeping to a focus.",
  category: "extract",
  inputTypes: ["text", "text[]", "chunk[]"],
  outputType: "text",
  params: SummarizeParams,
  input: TextsInput,
  output: Schema.String,
  handler: async (params, input, ctx) => {
    const sources = fitted(client, nonEmpty("summarize", toSources(input)))
    const { system, user } = Prompts.summarizePrompt(sources, params.max_words, params.focus)
    const text = await client.text({ op: "summarize", system, user, signal: ctx.signal, ...over(params) })
    if (!text) throw new JobFailure("REMOTE_ERROR", "summarize: the model answered an empty summary")
    return limitWords(text, params.max_words)
  }
})

/** The numbered source list appended to an answer: the cited sources (all when none is cited). */
const sourceList = (answer: string, sources: ReadonlyArray<Source>): string => {
  const cited = citedNumbers(answer, sources.length)
  const listed = cited.length > 0 ? cited : sources.map((_, i) => i + 1)
  return listed.map((n) => `[${n}] ${sources[n - 1]!.url ?? `${sources[n - 1]!.label} (no URL)`}`).join("\n")
}

/**
 * `integrate`: chunks (or texts) → the answer to `query` from them only, citing sources as [n],
 * followed by `Sources:` and the numbered URLs cited. Chunks of one source share a number.
 */
export const integrateOp = (client: ChatClient): GraphOperation<typeof IntegrateParams.Type, typeof ListInput.Type, string> => ({
  name: "integrate",
  description: "Answers a query from chunks (or texts) with a language model, citing sources as [n] with a numbered list of their URLs.",
  category: "synthesize",
  inputTypes: ["chunk[]", "text[]"],
  outputType: "text",
  params: IntegrateParams,
  input: ListInput,
  output: Schema.String,
  handler: async (params, input, ctx) => {
    const sources = fitted(client, nonEmpty("integrate", toSources(input)))
    const { system, user } = Prompts.integratePrompt(sources, params.query)
    const answer = await client.text({ op: "integrate", system, user, signal: ctx.signal, ...over(params) })
    if (!answer) throw new JobFailure("REMOTE_ERROR", "integrate: the model answered nothing")
    return `${answer}\n\nSources:\n${sourceList(answer, sources)}`
  }
})

/** `chat`: an optional input of any type (rendered as numbered sources) and `prompt` → the model's answer. */
export const chatOp = (client: ChatClient): GraphOperation<typeof ChatParams.Type, unknown, string> => ({
  name: "chat",
  description: "Asks a language model `prompt` (with an optional system message) over the input, rendered as context.",
  category: "synthesize",
  inputTypes: ["any"],
  outputType: "text",
  params: ChatParams,
  input: Schema.Unknown,
  output: Schema.String,
  handler: async (params, input, ctx) => {
    const sources = fitted(client, renderAny(input))
    const { system, user } = Prompts.chatPrompt(sources, params.prompt, params.system)
    return client.text({ op: "chat", system, user, signal: ctx.signal, ...over(params) })
  }
})

/**
 * `compare`: ≥2 texts (or chunks, grouped by source) → a `Comparison` of `aspects`: per aspect
 * each source's finding (the source by URL, else its label) and a verdict, then a summary. An
 * aspect the model left out is listed with no findings and says so. Sources sharing a URL
 * (versions of one page) are named `[n] label` instead.
 */
export const compareOp = (client: ChatClient): GraphOperation<typeof CompareParams.Type, typeof ListInput.Type, Comparison> => ({
  name: "compare",
  description: "Compares two or more texts (or chunks grouped by source) aspect by aspect with a language model.",
  category: "synthesize",
  inputTypes: ["text[]", "chunk[]"],
  outputType: "json",
  params: CompareParams,
  input: ListInput,
  output: Comparison,
  handler: async (params, input, ctx) => {
    const sources = fitted(client, nonEmpty("compare", toSources(input)))
    if (sources.length < 2) throw invalid(`compare: needs at least 2 sources to compare, got ${sources.length}`)
    const aspects = [...new Set(params.aspects.map((a) => a.trim()))]
    const { system, user } = Prompts.comparePrompt(sources, aspects)
    const got = await client.json({ op: "compare", system, user, signal: ctx.signal, ...over(params) }, Prompts.comparisonAnswer(aspects))
    // Versions of one page (archived snapshots) share a URL: those are told apart by number.
    const shared = new Set(sources.map((s) => s.url).filter((u, i, all) => u !== null && all.indexOf(u) !== i))
    const named = (n: number) => {
      const s = sources[Math.round(n) - 1]
      if (!s) return `source ${n}`
      return s.url !== null && !shared.has(s.url) ? s.url : `[${Math.round(n)}] ${s.label}`
    }
    return {
      aspects: aspects.map((aspect) => {
        const a = got.aspects.find((x) => x.aspect === aspect)
        if (!a) return { aspect, findings: [], verdict: "The model gave no finding on this aspect." }
        return { aspect, findings: a.findings.map((f) => ({ source: named(f.source), summary: f.summary.trim() })), verdict: a.verdict.trim() }
      }),
      summary: got.summary.trim()
    }
  }
})

/**
 * `to_report`: any input (several states welcome) → a `report`: the model writes the Markdown
 * body, the op puts `# title` above it and a `## Sources` section listing every URL found in
 * the inputs below it, stores `report.md` in the file store and returns its URL.
 */
export const toReportOp = (client: ChatClient): GraphOperation<typeof ReportParams.Type, unknown, Report> => ({
  name: "to_report",
  description: "Writes a Markdown report of the inputs with a language model, with a Sources section of every URL in the inputs; stored as report.md.",
  category: "synthesize",
  inputTypes: ["any"],
  outputType: "report",
  params: ReportParams,
  // Not optional (unlike chat's): a graph giving to_report no input is rejected before it runs.
  input: Schema.Unknown.pipe(Schema.filter((v) => (v !== null && v !== undefined) || "to_report needs an input: the material of the report")),
  output: Report,
  handler: async (params, input, ctx) => reportOf(client, params, input, ctx)
})

const reportOf = async (client: ChatClient, params: typeof ReportParams.Type, input: unknown, ctx: GraphOpContext): Promise<Report> => {
  const sources = fitted(client, nonEmpty("to_report", renderAny(input)))
  const { system, user } = Prompts.reportPrompt(sources, params.title, params.instructions)
  const body = await client.text({ op: "to_report", system, user, signal: ctx.signal, ...over(params) })
  if (!body) throw new JobFailure("REMOTE_ERROR", "to_report: the model answered an empty report")
  // Models add a title and a source list despite being asked not to; the op writes both itself.
  const trimmed = body.replace(/^\s*#\s+[^\n]*\n+/, "").replace(/\n#{1,3}\s*(sources|references)\s*\n[\s\S]*$/i, "").trim()
  const urls = collectUrls(input)
  const list = urls.length > 0 ? urls.map((u, i) => `${i + 1}. <${u}>`).join("\n") : "No source URLs were found in the inputs."
  const markdown = `# ${params.title}\n\n${trimmed}\n\n## Sources\n\n${list}\n`
  const file = await ctx.files.put("report.md", markdown, "text/markdown; charset=utf-8")
  return { title: params.title, markdown, file_url: file.url }
}

/** `store_entity`: `entity[]` → merged into the named store; `{store, stored, total}`. */
export const storeEntityOp = (store: EntityStore): GraphOperation<typeof StoreEntityParams.Type, ReadonlyArray<Entity>, typeof StoreEntityResult.Type> => ({
  name: "store_entity",
  description: "Merges entities into a named, persisted entity store (by case-insensitive name and type: mentions added, sources united).",
  category: "store",
  inputTypes: ["entity[]"],
  outputType: "json",
  params: StoreEntityParams,
  input: Schema.Array(Entity),
  output: StoreEntityResult,
  handler: async (params, input, ctx) => {
    try {
      const r = await store.merge(params.store, input, ctx.signal)
      return { store: params.store, ...r }
    } catch (e) {
      if (e instanceof JobFailure) throw e
      if (ctx.signal.aborted) throw new JobFailure("CANCELLED", `store_entity: cancelled`, false)
      throw new JobFailure("INTERNAL_ERROR", `store_entity: cannot write store ${params.store}: ${(e as Error).message}`)
    }
  }
})

/** `relevance_filter` params: the `query`, the `min_score` kept (0..10), `concurrency` of model calls. */
export const RelevanceParams = Schema.Struct({
  query: Schema.String.pipe(Schema.minLength(1)),
  min_score: Schema.optionalWith(Schema.Number.pipe(Schema.between(0, 10)), { default: () => 0 }),
  concurrency: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 64)), { default: () => 4 }),
  ...CallParams
})

/** A text scored for relevance: the Doc with `score` (0..10) and the model's one-sentence `reason`. */
export const ScoredDoc = Schema.Struct({
  url: Schema.NullOr(Schema.String),
  title: Schema.NullOr(Schema.String),
  text: Schema.String,
  score: Schema.Number,
  reason: Schema.String
}).annotations({ identifier: "ScoredDoc" })

/**
 * `relevance_filter` (Filter): `text[]` → `text[]`: each text scored 0..10 for relevance to
 * `query` by the model (structured output, `scoreRelevance`), those under `min_score` dropped,
 * the rest in input order with `score` and `reason`. Model calls run `concurrency` at a time.
 */
export const relevanceFilterOp = (client: ChatClient): GraphOperation<typeof RelevanceParams.Type, ReadonlyArray<Text>, ReadonlyArray<typeof ScoredDoc.Type>> => ({
  name: "relevance_filter",
  description: "Scores texts 0-10 for relevance to a query with the model and keeps those at or above min_score, with score and reason.",
  category: "filter",
  params: RelevanceParams,
  inputTypes: ["text[]"],
  outputType: "text[]",
  input: Schema.Array(Text),
  output: Schema.Array(ScoredDoc),
  handler: async (params, texts, ctx) => {
    const scored: Array<typeof ScoredDoc.Type | undefined> = new Array(texts.length)
    let next = 0
    let done = 0
    const worker = async () => {
      for (let i = next++; i < texts.length; i = next++) {
        const t = texts[i]!
        const doc = typeof t === "string" ? { url: null, title: null, text: t } : { url: t.url, title: t.title, text: t.text }
        const r = await scoreRelevance(client, params.query, doc.text, ctx.signal, { ...over(params), op: "relevance_filter" })
        scored[i] = { ...doc, score: r.score, reason: r.reason }
        done++
        await ctx.progress(Math.round((100 * done) / texts.length), `${done}/${texts.length} scored`)
      }
    }
    await Promise.all(Array.from({ length: Math.min(params.concurrency, texts.length) }, worker))
    return scored.filter((d): d is typeof ScoredDoc.Type => d !== undefined && d.score >= params.min_score)
  }
})

/** Every operation of the plugin. */
export const llmOps = (client: ChatClient, store: EntityStore): ReadonlyArray<GraphOperation> => [
  relevanceFilterOp(client),
  entitiesOp(client),
  topicsOp(client),
  summarizeOp(client),
  integrateOp(client),
  chatOp(client),
  compareOp(client),
  toReportOp(client),
  storeEntityOp(store)
]
