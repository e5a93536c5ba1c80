/**
 * The `vectl` job type (research-jobs spec, "vectl"): `embed` chunks texts into overlapping
 * word windows, embeds them with the chosen model and adds them to a named store; `search`
 * embeds a query with the store's model and returns the `top_k` most similar chunks.
 *
 * Embed result (the spec leaves it open):
 * `{ operation: "embed", store, model, dimensions: 768, chunk_words, overlap_words,
 *    documents: [{ index, id, words, chunks: [chunk ids] }], chunks_total, chunks_added, store_size }`.
 * Ids are content hashes (`doc_<16 hex>` per text, `doc_<16 hex>#<n>` per chunk), so embedding the
 * same text again, or a retried job, adds nothing twice. Search result: the spec's
 * `{ operation: "search", matches: [{ id, score, text }] }` plus `store` and `model`.
 */
import { createHash } from "node:crypto"
import * as Schema from "effect/Schema"
import { JobFailure, type JobType } from "../jobs/Contract.ts"
import { chunkWords } from "./Chunk.ts"
import { DIMENSIONS, type Embedder } from "./Embedder.ts"
import { STORE_NAME, type VectorStores } from "./VectorStore.ts"

/** Request body of `POST /api/v1/jobs/vectl`. */
export const VectlPayload = Schema.Struct({
  operation: Schema.Literal("embed", "search"),
  texts: Schema.optional(Schema.Array(Schema.String.pipe(Schema.pattern(/\S/, { message: () => "must contain a word" })))
    .pipe(Schema.minItems(1))),
  query: Schema.optional(Schema.String.pipe(Schema.pattern(/\S/, { message: () => "must contain a word" }))),
  model: Schema.optional(Schema.String),
  store: Schema.optionalWith(Schema.String.pipe(Schema.pattern(STORE_NAME, { message: () => "store names are 1-64 of A-Z a-z 0-9 _ . - (starting alphanumeric)" })), { default: () => "default" }),
  top_k: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 1000)), { default: () => 10 })
}).pipe(Schema.filter((p) => {
  if (p.operation === "embed" && !p.texts) return { path: ["texts"], message: "is required when operation is embed" }
  if (p.operation === "search" && p.query === undefined) return { path: ["query"], message: "is required when operation is search" }
  return true
})).annotations({ identifier: "VectlPayload" })
export type VectlPayload = typeof VectlPayload.Type

/** Result of an `embed` job. */
export const EmbedResult = Schema.Struct({
  operation: Schema.Literal("embed"),
  store: Schema.String,
  model: Schema.String,
  dimensions: Schema.Int,
  chunk_words: Schema.Int,
  overlap_words: Schema.Int,
  documents: Schema.Array(Schema.Struct({ index: Schema.Int, id: Schema.String, words: Schema.Int, chunks: Schema.Array(Schema.String) })),
  chunks_total: Schema.Int,
  chunks_added: Schema.Int,
  store_size: Schema.Int
}).annotations({ identifier: "VectlEmbedResult" })

/** Result of a `search` job. */
export const SearchResult = Schema.Struct({
  operation: Schema.Literal("search"),
  store: Schema.String,
  model: Schema.String,
  matches: Schema.Array(Schema.Struct({ id: Schema.String, score: Schema.Number, text: Schema.String }))
}).annotations({ identifier: "VectlSearchResult" })

/** What the job type needs from the plugin. */
export interface VectlOptions {
  readonly models: ReadonlyMap<string, Embedder>
  readonly defaultModel: string
  readonly stores: VectorStores
  readonly chunkWords: number
  readonly overlapWords: number
  /** Chunks embedded per call (`EMBED_BATCH_SIZE`, 32). */
  readonly batchSize: number
}

const sha = (s: string) => createHash("sha256").update(s).digest("hex").slice(0, 16)

/** Builds the `vectl` job type. Failures: VALIDATION_ERROR for unknown models/stores or a model mismatch. */
export const vectlJob = (o: VectlOptions): JobType<VectlPayload, typeof EmbedResult.Type | typeof SearchResult.Type> => ({
  id: "vectl",
  description: "Embeddings (768-d) into named stores and exact cosine search over them.",
  // The configured models are known at submit: an unknown one is a 422 there, not a failed run.
  payload: VectlPayload.pipe(Schema.filter((p) =>
    p.model === undefined || o.models.has(p.model)
      ? undefined
      : { path: ["model"], message: `unknown model "${p.model}" (configured: ${[...o.models.keys()].join(", ")})` }
  )),
  result: Schema.Union(EmbedResult, SearchResult),
  handler: async (p, ctx) => {
    const modelOf = (name: string) => {
      const m = o.models.get(name)
      if (!m) throw new JobFailure("VALIDATION_ERROR", `unknown model "${name}" (configured: ${[...o.models.keys()].join(", ")})`)
      return m
    }
    if (p.operation === "embed") {
      const existing = o.stores.get(p.store)
      const modelName = p.model ?? existing?.meta.model ?? o.defaultModel
      const model = modelOf(modelName)
      if (existing && existing.meta.model !== modelName) {
        throw new JobFailure("VALIDATION_ERROR", `store "${p.store}" holds ${existing.meta.model} vectors; cannot add ${modelName} vectors`)
      }
      const docs = p.texts!.map((text, index) => {
        const id = `doc_${sha(text)}`
        return { index, id, chunks: chunkWords(text, o.chunkWords, o.overlapWords).map((c) => ({ ...c, id: `${id}#${c.index}` })) }
      })
      const all = docs.flatMap((d) => d.chunks.map((c) => ({ ...c, doc: d.id })))
      const store = o.stores.getOrCreate(p.store, modelName)
      const todo = all.filter((c) => !store.has(c.id))
      let added = 0
      for (let i = 0; i < todo.length; i += o.batchSize) {
        const batch = todo.slice(i, i + o.batchSize)
        const vectors = await model.embed(batch.map((c) => c.text), "document", ctx.signal)
        ctx.signal.throwIfAborted()
        added += store.add(batch.map((c, j) => ({ id: c.id, doc: c.doc, text: c.text, vector: vectors[j]! })))
        await ctx.progress(Math.floor((100 * (i + batch.length)) / todo.length), `embedded ${i + batch.length} of ${todo.length} chunks`)
      }
      return {
        operation: "embed" as const,
        store: p.store,
        model: modelName,
        dimensions: DIMENSIONS,
        chunk_words: o.chunkWords,
        overlap_words: o.overlapWords,
        documents: docs.map((d) => ({ index: d.index, id: d.id, words: d.chunks.length ? d.chunks.at(-1)!.start + d.chunks.at(-1)!.words : 0, chunks: d.chunks.map((c) => c.id) })),
        chunks_total: all.length,
        chunks_added: added,
        store_size: store.size
      }
    }
    const store = o.stores.get(p.store)
    if (!store) throw new JobFailure("VALIDATION_ERROR", `no store named "${p.store}" (embed into it first)`)
    if (p.model !== undefined && p.model !== store.meta.model) {
      throw new JobFailure("VALIDATION_ERROR", `store "${p.store}" holds ${store.meta.model} vectors; cannot search it with ${p.model}`)
    }
    const [q] = await modelOf(store.meta.model).embed([p.query!], "query", ctx.signal)
    return { operation: "search" as const, store: p.store, model: store.meta.model, matches: store.search(q!, p.top_k) }
  }
})
