/**
 * Embedders: text to 768-dimensional unit vectors (the spec's dimension). Three kinds:
 * - `hashing`: deterministic feature hashing of word unigrams and bigrams (signed, sublinear term
 *   frequency, English stopwords dropped). Lexical only, no model, always available: the
 *   embedded default.
 * - `openai`: any OpenAI-compatible `POST {base_url}/embeddings` endpoint, in batches of
 *   `EMBED_BATCH_SIZE` (32); asks for 768 dimensions and refuses other lengths.
 * - `llama-cpp`: a GGUF embedding model run in-process by node-llama-cpp (nomic-embed-text v1.5
 *   is 768-dimensional; its `search_document: ` / `search_query: ` prefixes are the defaults).
 * Every vector is L2-normalised, so cosine similarity is a dot product.
 */
import { createHash } from "node:crypto"
import * as Schema from "effect/Schema"
import { JobFailure } from "../jobs/Contract.ts"

/** The dimension of every vector vectl stores. */
export const DIMENSIONS = 768

/** Whether a text is stored (document) or searched for (query): some models embed them differently. */
export type EmbedRole = "document" | "query"

/** A configured embedding model. */
export interface Embedder {
  /** The model name as used in payloads and store metadata. */
  readonly name: string
  readonly kind: "hashing" | "openai" | "llama-cpp"
  /** Unit vectors of length 768, one per text, in order. Rejects with `JobFailure`. */
  readonly embed: (texts: ReadonlyArray<string>, role: EmbedRole, signal: AbortSignal) => Promise<Array<Float32Array>>
  /** Releases native resources. */
  readonly close?: () => Promise<void>
}

/** Config of one model under `job-vectl.models`. */
export const ModelConfig = Schema.Union(
  Schema.Struct({ kind: Schema.Literal("hashing") }),
  Schema.Struct({
    kind: Schema.Literal("openai"),
    /** e.g. `https://api.openai.com/v1` or the platform's own gateway `http://127.0.0.1:9001/v1`. */
    base_url: Schema.String,
    /** Model id sent upstream; default the entry's name. */
    model: Schema.optional(Schema.String),
    api_key: Schema.optional(Schema.String),
    /** Send `dimensions: 768` (models that cannot shorten their output refuse it). */
    send_dimensions: Schema.optionalWith(Schema.Boolean, { default: () => true }),
    timeout_s: Schema.optionalWith(Schema.Number.pipe(Schema.positive()), { default: () => 60 })
  }),
  Schema.Struct({
    kind: Schema.Literal("llama-cpp"),
    /** Path of the GGUF file; relative paths resolve against the config directory. */
    model_path: Schema.String,
    document_prefix: Schema.optionalWith(Schema.String, { default: () => "search_document: " }),
    query_prefix: Schema.optionalWith(Schema.String, { default: () => "search_query: " }),
    /** CPU threads (0: node-llama-cpp's choice). */
    threads: Schema.optionalWith(Schema.Int.pipe(Schema.nonNegative()), { default: () => 0 }),
    context_size: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { default: () => 2048 })
  })
)
export type ModelConfig = typeof ModelConfig.Type

/** Scales `v` to unit length in place (a zero vector stays zero); returns it. */
export const normalize = (v: Float32Array): Float32Array => {
  let s = 0
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!
  const n = Math.sqrt(s)
  if (n > 0) for (let i = 0; i < v.length; i++) v[i]! /= n
  return v
}

/**
 * English function words the hashing embedder ignores: without IDF weights they would dominate
 * the similarity of short texts ("the" in a query matching every sentence).
 */
export const STOPWORDS: ReadonlySet<string> = new Set((
  "a an and are as at be been but by can could did do does for from had has have he her his how i if in into is it its " +
  "me my no not of on or our she so than that the their them then there these they this those to was we were what when " +
  "where which who why will with would you your many much"
).split(" "))

/** Lower-cased word tokens (letters and digits of any script), stopwords removed. */
export const tokens = (text: string): Array<string> =>
  (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((t) => !STOPWORDS.has(t))

/**
 * The hashing embedding of one text: each unigram (weight 1) and bigram (weight 0.5) is hashed
 * (SHA-1, first 4 bytes: bucket; 5th byte: sign) into 768 buckets; counts are dampened with
 * 1 + ln(tf) and the vector normalised. Deterministic across processes and machines.
 */
export const hashingVector = (text: string): Float32Array => {
  const counts = new Map<string, number>()
  const t = tokens(text)
  for (let i = 0; i < t.length; i++) {
    counts.set(t[i]!, (counts.get(t[i]!) ?? 0) + 1)
    if (i + 1 < t.length) {
      const bg = `${t[i]} ${t[i + 1]}`
      counts.set(bg, (counts.get(bg) ?? 0) + 1)
    }
  }
  const v = new Float32Array(DIMENSIONS)
  for (const [feature, tf] of counts) {
    const h = createHash("sha1").update(feature).digest()
    const bucket = h.readUInt32LE(0) % DIMENSIONS
    const sign = h[4]! & 1 ? 1 : -1
    const weight = (feature.includes(" ") ? 0.5 : 1) * (1 + Math.log(tf))
    v[bucket]! += sign * weight
  }
  return normalize(v)
}

/** The `hashing` embedder. */
export const hashingEmbedder = (name: string): Embedder => ({
  name,
  kind: "hashing",
  embed: async (texts) => texts.map(hashingVector)
})

const checkDims = (name: string, v: ArrayLike<number>): Float32Array => {
  if (v.length !== DIMENSIONS) throw new JobFailure("REMOTE_ERROR", `model ${name} returned ${v.length}-dimensional vectors; vectl stores ${DIMENSIONS}`, false)
  return normalize(Float32Array.from(v))
}

/** The `openai` embedder: `POST {base_url}/embeddings` in batches of `batchSize`. */
export const openaiEmbedder = (name: string, c: Extract<ModelConfig, { kind: "openai" }>, batchSize: number): Embedder => ({
  name,
  kind: "openai",
  embed: async (texts, _role, signal) => {
    const out: Array<Float32Array> = []
    for (let i = 0; i < texts.length; i += batchSize) {
      const batch = texts.slice(i, i + batchSize)
      const r = await fetch(`${c.base_url.replace(/\/+$/, "")}/embeddings`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(c.api_key ? { authorization: `Bearer ${c.api_key}` } : {}) },
        body: JSON.stringify({ model: c.model ?? name, input: batch, ...(c.send_dimensions ? { dimensions: DIMENSIONS } : {}) }),
        signal: AbortSignal.any([signal, AbortSignal.timeout(c.timeout_s * 1000)])
      })
      if (!r.ok) {
        const detail = (await r.text().catch(() => "")).slice(0, 300)
        // 429 and 5xx are the upstream's transient trouble: worth a retry; 4xx is ours to fix.
        throw new JobFailure("REMOTE_ERROR", `embeddings endpoint answered HTTP ${r.status}: ${detail}`, r.status === 429 || r.status >= 500)
      }
      const body = (await r.json()) as { data?: Array<{ index?: number; embedding?: Array<number> }> }
      const data = [...(body.data ?? [])].sort((a, b) => (a.index ?? 0) - (b.index ?? 0))
      if (data.length !== batch.length) throw new JobFailure("REMOTE_ERROR", `embeddings endpoint returned ${data.length} vectors for ${batch.length} inputs`, false)
      for (const d of data) out.push(checkDims(name, d.embedding ?? []))
    }
    return out
  }
})

/** The `llama-cpp` embedder; the model loads on first use and stays loaded. */
export const llamaCppEmbedder = (name: string, c: Extract<ModelConfig, { kind: "llama-cpp" }>, modelPath: string): Embedder => {
  type Ctx = { getEmbeddingFor(text: string): Promise<{ vector: ReadonlyArray<number> }>; dispose(): Promise<void> }
  let ctx: Promise<{ context: Ctx; dispose: () => Promise<void> }> | undefined
  const load = () => {
    ctx ??= (async () => {
      const { getLlama, LlamaLogLevel } = await import("node-llama-cpp")
      const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error, ...(c.threads ? { maxThreads: c.threads } : {}) })
      const model = await llama.loadModel({ modelPath })
      const context = await model.createEmbeddingContext({ contextSize: c.context_size, ...(c.threads ? { threads: c.threads } : {}) })
      return { context, dispose: async () => { await context.dispose(); await model.dispose() } }
    })().catch((e) => {
      ctx = undefined
      throw new JobFailure("INTERNAL_ERROR", `cannot load embedding model ${modelPath}: ${(e as Error).message}`, false)
    })
    return ctx
  }
  return {
    name,
    kind: "llama-cpp",
    embed: async (texts, role, signal) => {
      const { context } = await load()
      const prefix = role === "document" ? c.document_prefix : c.query_prefix
      const out: Array<Float32Array> = []
      for (const t of texts) {
        // node-llama-cpp takes no signal: stop between texts.
        signal.throwIfAborted()
        out.push(checkDims(name, (await context.getEmbeddingFor(prefix + t)).vector))
      }
      return out
    },
    close: async () => {
      if (ctx) await (await ctx.catch(() => undefined))?.dispose()
    }
  }
}
