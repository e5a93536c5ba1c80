/**
 * Plugin `job-vectl`: contributes the `vectl` job type (embeddings and semantic search) to the
 * jobs runtime, and the graph operations `chunk`, `embed`, `embed_batch`, `store_vector` and
 * `semantic_filter` (`GraphOps.ts`) over the same models and stores. Models are configured by name (`hashing`, `openai`, `llama-cpp` kinds, see
 * `Embedder.ts`); stores live under this plugin's data directory (`<data_dir>/job-vectl/stores`).
 * With the redis backend, each worker machine keeps its own stores unless the data directory is
 * shared.
 */
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { definePlugin, PluginBootError } from "../../core/Plugin.ts"
import { jobTypes } from "../jobs/Contract.ts"
import { type Embedder, hashingEmbedder, llamaCppEmbedder, ModelConfig, openaiEmbedder } from "./Embedder.ts"
import { StoreResult, vectlGraphOps } from "./GraphOps.ts"
import { vectlJob } from "./Vectl.ts"
import { VectorStores } from "./VectorStore.ts"

/** Config of `plugins.job-vectl`. */
export const VectlConfig = Schema.Struct({
  default_model: Schema.optionalWith(Schema.String.annotations({ description: "the {embed_model} used when a payload names none; a key of models" }), { default: () => "hashing-768" }),
  models: Schema.optionalWith(Schema.Record({ key: Schema.String, value: ModelConfig }).annotations({ description: "embedding models by name: {kind: hashing} | {kind: openai, base_url, model?, api_key?} | {kind: llama-cpp, model_path, ...}" }), { default: () => ({ "hashing-768": { kind: "hashing" as const } }) }),
  chunk_words: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 8192)).annotations({ description: "words per stored chunk" }), { default: () => 512 }),
  overlap_words: Schema.optionalWith(Schema.Int.pipe(Schema.nonNegative()).annotations({ description: "words shared by neighbouring chunks (stride = chunk_words - overlap_words)" }), { default: () => 64 }),
  batch_size: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 2048)).annotations({ description: "EMBED_BATCH_SIZE: chunks per embedding call" }), { default: () => 32 })
}).pipe(Schema.filter((c) => c.overlap_words < c.chunk_words || { path: ["overlap_words"], message: "must be smaller than chunk_words" }))
  .annotations({ identifier: "JobVectlConfig" })
export type VectlConfig = typeof VectlConfig.Type

/** Builds the named embedders of a config; relative GGUF paths resolve against `configDir`. */
export const makeEmbedders = (c: VectlConfig, configDir: string): Map<string, Embedder> =>
  new Map(Object.entries(c.models).map(([name, m]) => [
    name,
    m.kind === "hashing"
      ? hashingEmbedder(name)
      : m.kind === "openai"
      ? openaiEmbedder(name, m, c.batch_size)
      : llamaCppEmbedder(name, m, path.resolve(configDir, m.model_path))
  ]))

export default definePlugin({
  name: "job-vectl",
  version: "0.1.0",
  description: "vectl jobs: 768-d embeddings (hashing, OpenAI-compatible, llama.cpp GGUF) into named persisted stores; exact cosine search; chunk, embed, embed_batch, store_vector, semantic_filter graph operations.",
  dependsOn: ["jobs"],
  defaultListener: "jobs",
  config: VectlConfig,
  resources: { VectlStoreResult: StoreResult },
  setup: (ctx) =>
    Effect.gen(function*() {
      if (!ctx.config.models[ctx.config.default_model]) {
        return yield* Effect.fail(new PluginBootError({ reason: `default_model "${ctx.config.default_model}" is not among models (${Object.keys(ctx.config.models).join(", ")})` }))
      }
      const models = makeEmbedders(ctx.config, ctx.configDir)
      yield* Effect.addFinalizer(() => Effect.promise(async () => {
        for (const m of models.values()) await m.close?.()
      }))
      // One set of open stores for the job type and the graph operations: vectors a graph
      // stores are found by a vectl search job in the same process at once.
      const options = {
        models,
        defaultModel: ctx.config.default_model,
        stores: new VectorStores(path.join(ctx.dataDir, "stores")),
        chunkWords: ctx.config.chunk_words,
        overlapWords: ctx.config.overlap_words,
        batchSize: ctx.config.batch_size
      }
      return {
        extensions: jobTypes(vectlJob(options)),
        graphOps: vectlGraphOps(options),
        status: () => ({ default_model: ctx.config.default_model, models: Object.fromEntries(Object.entries(ctx.config.models).map(([n, m]) => [n, m.kind])) })
      }
    })
})
