/**
 * The prompts of the language-model operations and the Schemas of their structured answers.
 *
 * Every prompt puts the input in one numbered `SOURCES:` block (`Sources.ts`) and the request
 * on labelled lines (`Question:`, `Focus:`, `Query:`, `Aspects:`), so any model (and the test
 * fixture, which reads the same labels) sees the material apart from the task. Structured
 * answers are sent as strict JSON Schemas named after the answer (`entities`, `topics`,
 * `relevance`, `comparison`); numbers the op can compute itself (mentions, URLs) are not asked.
 */
import * as Schema from "effect/Schema"
import { type Source, sourcesBlock } from "./Sources.ts"

const GROUNDED = "Use only the sources given; when they do not contain the answer, say so. Do not invent facts, names, numbers or URLs."

/** The entities answer for `types` (each a schema enum value). */
export const entitiesAnswer = (types: ReadonlyArray<string>) => {
  const [first, ...rest] = types
  return {
    name: "entities",
    what: "a list of entities",
    schema: Schema.Struct({
      entities: Schema.Array(Schema.Struct({
        name: Schema.String.annotations({ description: "the name as written in the text" }),
        type: Schema.Literal(first!, ...rest),
        description: Schema.String.annotations({ description: "one short sentence on who or what it is, from the text" })
      }))
    })
  }
}

/** The `entities` prompt over one batch of sources. */
export const entitiesPrompt = (sources: ReadonlyArray<Source>, types: ReadonlyArray<string>, max: number) => ({
  system: `You extract named entities from text. Entity types: ${types.join(", ")}. Report each distinct entity once, with its name spelled as in the text. ${GROUNDED} Answer with JSON only.`,
  user: `${sourcesBlock(sources)}\n\nTask: list the named entities (types: ${types.join(", ")}) that occur in the sources above, at most ${max}, the most mentioned first.`
})

/** The topics answer. */
export const TopicsAnswer = {
  name: "topics",
  what: "a list of topics",
  schema: Schema.Struct({
    topics: Schema.Array(Schema.Struct({
      label: Schema.String.annotations({ description: "a short name of the topic" }),
      keywords: Schema.Array(Schema.String),
      weight: Schema.Number.annotations({ description: "the topic's share of the texts, 0 to 1" })
    }))
  })
}

/** The `topics` prompt. */
export const topicsPrompt = (sources: ReadonlyArray<Source>, maxTopics: number) => ({
  system: `You find the main topics of a collection of texts. ${GROUNDED} Answer with JSON only.`,
  user: `${sourcesBlock(sources)}\n\nTask: name at most ${maxTopics} main topics of the sources above, each with up to 6 keywords found in the texts and its share of the texts (weights sum to 1).`
})

/** The `summarize` prompt. */
export const summarizePrompt = (sources: ReadonlyArray<Source>, maxWords: number, focus: string | null) => ({
  system: `You write faithful, concise summaries in plain prose. ${GROUNDED}`,
  user: `${sourcesBlock(sources)}\n\n${focus ? `Focus: ${focus}\n` : ""}Task: summarize the sources above in at most ${maxWords} words${focus ? ", keeping to the focus" : ""}. Answer with the summary only.`
})

/** The `integrate` prompt: an answer to `query` citing the sources as [n]. */
export const integratePrompt = (sources: ReadonlyArray<Source>, query: string) => ({
  system: `You answer research questions from the numbered sources given, and nothing else. Cite sources as [n] after each statement they support. ${GROUNDED} Do not write a list of sources; one is appended to your answer.`,
  user: `${sourcesBlock(sources)}\n\nQuestion: ${query}\nTask: answer the question from the sources above. Cite sources as [n].`
})

/** The `chat` prompt: `prompt` over an optional context. */
export const chatPrompt = (sources: ReadonlyArray<Source>, prompt: string, system: string | null) => ({
  system: system ?? "You are a careful research assistant. Base your answer on the sources given when there are any.",
  user: sources.length > 0 ? `${sourcesBlock(sources)}\n\nQuestion: ${prompt}` : `Question: ${prompt}`
})

/** The comparison answer for `aspects` (each a schema enum value); `source` is a source number. */
export const comparisonAnswer = (aspects: ReadonlyArray<string>) => {
  const [first, ...rest] = aspects
  return {
    name: "comparison",
    what: "a comparison",
    schema: Schema.Struct({
      aspects: Schema.Array(Schema.Struct({
        aspect: Schema.Literal(first!, ...rest),
        findings: Schema.Array(Schema.Struct({
          source: Schema.Number.annotations({ description: "the source number n of [n]" }),
          summary: Schema.String.annotations({ description: "what this source says about the aspect" })
        })),
        verdict: Schema.String.annotations({ description: "how the sources agree or differ on the aspect" })
      })),
      summary: Schema.String
    })
  }
}

/** The `compare` prompt. */
export const comparePrompt = (sources: ReadonlyArray<Source>, aspects: ReadonlyArray<string>) => ({
  system: `You compare sources aspect by aspect. ${GROUNDED} Answer with JSON only.`,
  user: `${sourcesBlock(sources)}\n\nAspects: ${aspects.join("; ")}\nTask: for each aspect, say what each source above says about it (by source number), then how they agree or differ; end with an overall summary.`
})

/** The `to_report` prompt: the Markdown body of a report. */
export const reportPrompt = (sources: ReadonlyArray<Source>, title: string, instructions: string | null) => ({
  system: `You write research reports in Markdown: short sections with ## headings, plain statements, names and dates as found. ${GROUNDED} Do not write a title or a list of sources; both are added to your text.`,
  user: `${sourcesBlock(sources)}\n\nTitle: ${title}\n${instructions ? `Instructions: ${instructions}\n` : ""}Task: write the body of the report from the material above. Mention sources by their URL or title where it matters.`
})

/** The relevance answer: a 0..10 score and why. */
export const RelevanceAnswer = {
  name: "relevance",
  what: "a relevance score",
  schema: Schema.Struct({
    score: Schema.Number.annotations({ description: "0 (unrelated) to 10 (exactly on the query)" }),
    reason: Schema.String
  })
}

/** The relevance prompt of `scoreRelevance`. */
export const relevancePrompt = (query: string, text: string) => ({
  system: "You judge how relevant a text is to a research query, on a scale of 0 (unrelated) to 10 (exactly on the query). Answer with JSON only.",
  user: `${sourcesBlock([{ url: null, label: "text", text }])}\n\nQuery: ${query}\nTask: score the relevance of the source above to the query and give a one-sentence reason.`
})
