/**
 * Graph operations of the vectl plugin (research-jobs spec, "Operations by category"):
 * Transform `chunk`; Process `embed`, `embed_batch`; Store `store_vector`; Filter
 * `semantic_filter`; and `vector_search` (a query over a stored store, for retrieval stages and
 * the workspaces' search). They use the plugin's configured embedders and its named stores, so vectors
 * stored by a graph are found by a `vectl` search job and the reverse.
 *
 * Vector ids are stable: `vec_` + the first 16 hex digits of SHA-256 over model, source, chunk
 * index and text, so re-embedding the same chunk yields the same id and storing it twice adds it
 * once.
 */
import { createHash } from "node:crypto"
import * as Schema from "effect/Schema"
import type { GraphOpContext, GraphOperation } from "../../core/Contribution.ts"
import { Chunk, sourceOf, Text, textOf, Vector } from "../../core/GraphTypes.ts"
import { JobFailure } from "../jobs/Contract.ts"
import { chunkWords } from "./Chunk.ts"
import { DIMENSIONS, type EmbedRole, type Embedder } from "./Embedder.ts"
import { STORE_NAME, type VectorStores } from "./VectorStore.ts"

/** What the operations need from the plugin. */
export interface VectlGraphOptions {
  readonly models: ReadonlyMap<string, Embedder>
  readonly defaultModel: string
  readonly stores: VectorStores
  /** Default window size and overlap of `chunk` (the plugin's chunk_words, overlap_words). */
  readonly chunkWords: number
  readonly overlapWords: number
}

/** The stable id of an embedded chunk (module comment). */
export const vectorId = (model: string, source: string | null, index: number, text: string): string =>
  `vec_${createHash("sha256").update(JSON.stringify([model, source, index, text])).digest("hex").slice(0, 16)}`

const modelOf = (o: VectlGraphOptions, op: string, name: string | null): Embedder => {
  const m = o.models.get(name ?? o.defaultModel)
  if (!m) throw new JobFailure("VALIDATION_ERROR", `${op}: unknown model "${name}" (configured: ${[...o.models.keys()].join(", ")})`, false)
  return m
}

/**
 * Embeds `texts` in batches of `ctx.limits.embedBatchSize`, reporting progress after each batch
 * (`embedded 64 of 100 chunks (batch 2 of 4)`); the vectors are unit length, in order.
 */
const embedBatched = async (op: string, model: Embedder, texts: ReadonlyArray<string>, role: EmbedRole, ctx: GraphOpContext, span: [number, number] = [0, 100]): Promise<Array<Float32Array>> => {
  const size = Math.max(1, ctx.limits.embedBatchSize)
  const batches = Math.ceil(texts.length / size)
  const out: Array<Float32Array> = []
  for (let b = 0; b < batches; b++) {
    if (ctx.signal.aborted) throw new JobFailure("CANCELLED", `${op}: cancelled`, false)
    const batch = texts.slice(b * size, (b + 1) * size)
    const vectors = await model.embed(batch, role, ctx.signal)
    if (vectors.length !== batch.length) throw new JobFailure("REMOTE_ERROR", `${op}: model ${model.name} returned ${vectors.length} vectors for ${batch.length} texts`, false)
    out.push(...vectors)
    await ctx.progress(span[0] + Math.floor(((span[1] - span[0]) * (b + 1)) / batches), `${op}: embedded ${out.length} of ${texts.length} texts (batch ${b + 1} of ${batches})`)
  }
  return out
}

const ModelParam = Schema.optionalWith(Schema.NullOr(Schema.String).annotations({ description: "embedding model, a key of the job-vectl models; null: the plugin's default_model" }), { default: () => null })

/** `chunk` params with the plugin's defaults. */
export const chunkParams = (o: Pick<VectlGraphOptions, "chunkWords" | "overlapWords">) =>
  Schema.Struct({
    size: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 8192)).annotations({ description: `words per chunk (default ${o.chunkWords}, the plugin's chunk_words)` }), { default: () => o.chunkWords }),
    overlap: Schema.optionalWith(Schema.NullOr(Schema.Int.pipe(Schema.nonNegative())).annotations({ description: `words shared by neighbouring chunks, smaller than size (null: the plugin's overlap_words, ${o.overlapWords}, or size/8 when that is not smaller than size)` }), { default: () => null })
  }).pipe(Schema.filter((p) => p.overlap === null || p.overlap < p.size || { path: ["overlap"], message: "must be smaller than size" }))

/**
 * `chunk`: `text` or `text[]` (Markdown too) → `chunk[]`: overlapping word windows of each text
 * (`Chunk.ts` chunkWords: `size` words, stride `size - overlap`, the last window ends at the last
 * word), `source` the text's URL (null for a bare string), `index` counting up per source across
 * all the texts of that source, in input order. Texts without words give no chunks.
 */
export const chunkOp = (o: VectlGraphOptions) => {
  const params = chunkParams(o)
  const op: GraphOperation<typeof params.Type, Text | ReadonlyArray<Text>, ReadonlyArray<Chunk>> = {
    name: "chunk",
    description: "Splits texts into overlapping word windows (size/overlap words), keeping each text's source URL and a running index per source.",
    category: "transform",
    inputTypes: ["text", "text[]"],
    outputType: "chunk[]",
    params,
    input: Schema.Union(Text, Schema.Array(Text)),
    output: Schema.Array(Chunk),
    handler: async (p, input) => {
      const overlap = p.overlap ?? (o.overlapWords < p.size ? o.overlapWords : Math.floor(p.size / 8))
      const texts: ReadonlyArray<Text> = Array.isArray(input) ? input : [input as Text]
      const next = new Map<string | null, number>()
      const out: Array<Chunk> = []
      for (const t of texts) {
        const source = sourceOf(t)
        let index = next.get(source) ?? 0
        for (const c of chunkWords(textOf(t), p.size, overlap)) out.push({ text: c.text, source, index: index++ })
        next.set(source, index)
      }
      return out
    }
  }
  return op
}

/** `embed` and `embed_batch` params. */
export const EmbedParams = Schema.Struct({ model: ModelParam })

/** What `embed` takes: a text, or a chunk (whose source and index the vector keeps). */
const Embeddable = Schema.Union(Text, Chunk)

/**
 * `embed`: `text` (or one `chunk`) → `vector`, the whole text embedded as a document with
 * `model`. Unknown model: VALIDATION_ERROR; embedder failures pass through.
 */
export const embedOp = (o: VectlGraphOptions): GraphOperation<typeof EmbedParams.Type, typeof Embeddable.Type, Vector> => ({
  name: "embed",
  description: "Embeds one text as a 768-d unit vector with a configured model.",
  category: "process",
  inputTypes: ["text", "chunk"],
  outputType: "vector",
  params: EmbedParams,
  input: Embeddable,
  output: Vector,
  handler: async (p, input, ctx) => {
    const model = modelOf(o, "embed", p.model)
    const [text, source, index] = typeof input === "string" ? [input, null, 0] : "index" in input ? [input.text, input.source, input.index] : [input.text, input.url, 0]
    const [v] = await embedBatched("embed", model, [text], "document", ctx)
    return { id: vectorId(model.name, source, index, text), model: model.name, text, source, vector: Array.from(v!) }
  }
})

/**
 * `embed_batch`: `chunk[]` → `vector[]`, one vector per chunk in order, embedded in batches of
 * EMBED_BATCH_SIZE (`ctx.limits.embedBatchSize`) with progress after each batch.
 */
export const embedBatchOp = (o: VectlGraphOptions): GraphOperation<typeof EmbedParams.Type, ReadonlyArray<Chunk>, ReadonlyArray<Vector>> => ({
  name: "embed_batch",
  description: "Embeds chunks as 768-d unit vectors in batches of EMBED_BATCH_SIZE.",
  category: "process",
  inputTypes: ["chunk[]"],
  outputType: "vector[]",
  params: EmbedParams,
  input: Schema.Array(Chunk),
  output: Schema.Array(Vector),
  handler: async (p, chunks, ctx) => {
    const model = modelOf(o, "embed_batch", p.model)
    const vectors = await embedBatched("embed_batch", model, chunks.map((c) => c.text), "document", ctx)
    return chunks.map((c, i) => ({ id: vectorId(model.name, c.source, c.index, c.text), model: model.name, text: c.text, source: c.source, vector: Array.from(vectors[i]!) }))
  }
})

/** `store_vector` params. */
export const StoreParams = Schema.Struct({
  store: Schema.optionalWith(Schema.String.pipe(Schema.pattern(STORE_NAME, { message: () => "store names are 1-64 of A-Z a-z 0-9 _ . - (starting alphanumeric)" })).annotations({ description: "the vectl store to add to (created for the vectors' model when missing)" }), { default: () => "default" })
})

/** `store_vector` result: the store, its model, how many vectors were new, and the store's size after. */
export const StoreResult = Schema.Struct({
  store: Schema.String,
  model: Schema.NullOr(Schema.String),
  stored: Schema.Int,
  total: Schema.Int
}).annotations({ identifier: "VectlStoreResult" })

/**
 * `store_vector`: `vector[]` → `json` `{store, model, stored, total}`: adds the vectors to the
 * named vectl store (created for their model when missing; a vector already stored under its id
 * is not added again). `stored` counts the vectors added, `total` the store's size afterwards.
 * VALIDATION_ERROR when the vectors come from several models, from a model other than the
 * store's, or are not 768-dimensional.
 */
export const storeVectorOp = (o: VectlGraphOptions): GraphOperation<typeof StoreParams.Type, ReadonlyArray<Vector>, typeof StoreResult.Type> => ({
  name: "store_vector",
  description: "Adds vectors to a named, persisted vectl store (searchable by vectl search jobs).",
  category: "store",
  inputTypes: ["vector[]"],
  outputType: "json",
  params: StoreParams,
  input: Schema.Array(Vector),
  output: StoreResult,
  handler: async (p, vectors, ctx) => {
    const models = [...new Set(vectors.map((v) => v.model))]
    if (models.length > 1) throw new JobFailure("VALIDATION_ERROR", `store_vector: the vectors come from several models (${models.join(", ")}); a store holds one model's vectors`, false)
    const bad = vectors.find((v) => v.vector.length !== DIMENSIONS)
    if (bad) throw new JobFailure("VALIDATION_ERROR", `store_vector: vector ${bad.id} has ${bad.vector.length} dimensions; vectl stores ${DIMENSIONS}`, false)
    const existing = o.stores.get(p.store)
    if (models.length === 0) return { store: p.store, model: existing?.meta.model ?? null, stored: 0, total: existing?.size ?? 0 }
    const model = models[0]!
    if (existing && existing.meta.model !== model) {
      throw new JobFailure("VALIDATION_ERROR", `store_vector: store "${p.store}" holds ${existing.meta.model} vectors; cannot add ${model} vectors`, false)
    }
    if (ctx.signal.aborted) throw new JobFailure("CANCELLED", "store_vector: cancelled", false)
    const store = existing ?? o.stores.getOrCreate(p.store, model)
    const stored = store.add(vectors.map((v) => ({ id: v.id, doc: v.source ?? "", text: v.text, vector: Float32Array.from(v.vector) })))
    await ctx.progress(100, `store_vector: added ${stored} of ${vectors.length} vectors to "${p.store}" (${store.size} in all)`)
    return { store: p.store, model, stored, total: store.size }
  }
})

/** `semantic_filter` params. */
export const SemanticParams = Schema.Struct({
  query: Schema.String.pipe(Schema.pattern(/\S/, { message: () => "must contain a word" })).annotations({ description: "what the kept chunks should be about" }),
  top_k: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 10_000)).annotations({ description: "most chunks kept" }), { default: () => 20 }),
  min_score: Schema.optionalWith(Schema.Number.pipe(Schema.between(-1, 1)).annotations({ description: "least cosine similarity to the query kept" }), { default: () => 0 }),
  model: ModelParam
})

/**
 * `semantic_filter`: `chunk[]` → `chunk[]`: embeds the query (as a query) and the chunks (as
 * documents, in batches of EMBED_BATCH_SIZE), keeps the `top_k` chunks whose cosine similarity
 * is at least `min_score`, best first (ties in input order), each with `score` set (rounded to 6
 * decimals).
 */
export const semanticFilterOp = (o: VectlGraphOptions): GraphOperation<typeof SemanticParams.Type, ReadonlyArray<Chunk>, ReadonlyArray<Chunk>> => ({
  name: "semantic_filter",
  description: "Keeps the chunks most similar to a query (cosine of embeddings), best first, with their score.",
  category: "filter",
  inputTypes: ["chunk[]"],
  outputType: "chunk[]",
  params: SemanticParams,
  input: Schema.Array(Chunk),
  output: Schema.Array(Chunk),
  handler: async (p, chunks, ctx) => {
    const model = modelOf(o, "semantic_filter", p.model)
    if (chunks.length === 0) return []
    const [q] = await model.embed([p.query], "query", ctx.signal)
    const vectors = await embedBatched("semantic_filter", model, chunks.map((c) => c.text), "document", ctx, [0, 99])
    const scored = chunks.map((c, i) => {
      let s = 0
      const v = vectors[i]!
      for (let d = 0; d < v.length; d++) s += q![d]! * v[d]!
      return { c, i, s }
    })
    const kept = scored.filter((x) => x.s >= p.min_score).sort((a, b) => b.s - a.s || a.i - b.i).slice(0, p.top_k)
    await ctx.progress(100, `semantic_filter: kept ${kept.length} of ${chunks.length} chunks (top_k ${p.top_k}, min_score ${p.min_score})`)
    return kept.map(({ c, s }) => ({ ...c, score: Math.round(s * 1e6) / 1e6 }))
  }
})

/** `vector_search` params. */
export const VectorSearchParams = Schema.Struct({
  store: StoreParams.fields.store,
  query: SemanticParams.fields.query,
  top_k: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 1000)).annotations({ description: "most chunks returned" }), { default: () => 10 }),
  missing_ok: Schema.optionalWith(Schema.Boolean.annotations({ description: "a store never created answers no chunks instead of failing" }), { default: () => false })
})

/**
 * `vector_search`: no input → `chunk[]`: embeds `query` with the store's own model and returns
 * the `top_k` most similar stored chunks, best first, `score` their cosine similarity, `source`
 * the document they were stored from (null when none), `index` their rank (0 = best).
 * VALIDATION_ERROR for a store never created (unless `missing_ok`).
 */
export const vectorSearchOp = (o: VectlGraphOptions): GraphOperation<typeof VectorSearchParams.Type, unknown, ReadonlyArray<Chunk>> => ({
  name: "vector_search",
  description: "Searches a named vectl store: the stored chunks most similar to a query, best first, with their score and source.",
  category: "discover",
  inputTypes: [],
  outputType: "chunk[]",
  params: VectorSearchParams,
  input: Schema.Unknown,
  output: Schema.Array(Chunk),
  handler: async (p, _input, ctx) => {
    const store = o.stores.get(p.store)
    if (!store) {
      if (p.missing_ok) return []
      throw new JobFailure("VALIDATION_ERROR", `vector_search: no store named "${p.store}" (store vectors into it first)`, false)
    }
    const [q] = await modelOf(o, "vector_search", store.meta.model).embed([p.query], "query", ctx.signal)
    return store.search(q!, p.top_k).map((m, index) => ({ text: m.text, source: m.doc ?? null, index, score: m.score }))
  }
})

/** Every graph operation of the plugin. */
export const vectlGraphOps = (o: VectlGraphOptions): ReadonlyArray<GraphOperation> => [chunkOp(o), embedOp(o), embedBatchOp(o), storeVectorOp(o), semanticFilterOp(o), vectorSearchOp(o)]
