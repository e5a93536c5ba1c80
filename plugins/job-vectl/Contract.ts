/**
 * The public contract of the `job-vectl` plugin: the only module of it other plugins import.
 * Indexing and searching a named vectl store, done through the plugin's graph operations
 * (`chunk`, `embed_batch`, `store_vector`, `vector_search`) as registered in the kernel's graph
 * operation registry, so a caller uses exactly the code paths graphs and `vectl` jobs use and
 * needs no handle on the plugin's stores. List `job-vectl` in `dependsOn` to find them registered.
 */
import * as Schema from "effect/Schema"
import type { GraphOpContext, GraphOperation } from "../../core/Contribution.ts"
import type { Chunk, Doc } from "../../core/GraphTypes.ts"
import type { Registry } from "../../core/Registry.ts"
import { JobFailure } from "../jobs/Contract.ts"

export { STORE_NAME } from "./VectorStore.ts"

/** The operations this contract calls. */
export const VECTL_OPS = ["chunk", "embed_batch", "store_vector", "vector_search"] as const

const call = async <O>(ops: Registry<GraphOperation>, name: (typeof VECTL_OPS)[number], params: Record<string, unknown>, input: unknown, ctx: GraphOpContext): Promise<O> => {
  const op = ops.get(name)
  if (!op) throw new JobFailure("INTERNAL_ERROR", `graph operation "${name}" is not registered (plugin job-vectl is not enabled here)`, false)
  return (await op.handler(Schema.decodeUnknownSync(op.params)(params), Schema.decodeUnknownSync(op.input)(input), ctx)) as O
}

/**
 * Chunks `docs` (each `url` becomes its chunks' `source`), embeds them with the plugin's default
 * model and adds them to `store` (created when missing). Resolves the number of chunks made and
 * of vectors newly stored (re-indexing the same text adds nothing). Rejects with `JobFailure`.
 */
export const indexDocs = async (ops: Registry<GraphOperation>, store: string, docs: ReadonlyArray<Doc>, ctx: GraphOpContext): Promise<{ chunks: number; stored: number }> => {
  if (docs.length === 0) return { chunks: 0, stored: 0 }
  const chunks = await call<ReadonlyArray<Chunk>>(ops, "chunk", {}, docs, ctx)
  if (chunks.length === 0) return { chunks: 0, stored: 0 }
  const vectors = await call<ReadonlyArray<unknown>>(ops, "embed_batch", {}, chunks, ctx)
  const r = await call<{ stored: number }>(ops, "store_vector", { store }, vectors, ctx)
  return { chunks: chunks.length, stored: r.stored }
}

/**
 * The `topK` chunks of `store` most similar to `query`, best first (`score` the cosine, `source`
 * the document's url); empty when the store was never created. Rejects with `JobFailure`.
 */
export const searchStore = (ops: Registry<GraphOperation>, store: string, query: string, topK: number, ctx: GraphOpContext): Promise<ReadonlyArray<Chunk>> =>
  call<ReadonlyArray<Chunk>>(ops, "vector_search", { store, query, top_k: topK, missing_ok: true }, null, ctx)
