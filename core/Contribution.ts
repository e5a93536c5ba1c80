/**
 * The non-HTTP contribution kinds the kernel owns: graph operations and MCP tools. Each kind has
 * one registry in the kernel (see `Registry.ts`); ids are unique per kind across all plugins, and
 * a duplicate is a boot error naming both plugins. Kinds a plugin owns (the `jobs` plugin's job
 * types) are extension points (`ExtensionPoint.ts`).
 */
import type * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import type { GraphType } from "./GraphTypes.ts"

/**
 * Where an operation stores output files (the `jobs` plugin's file store gives one). `put`
 * stores `data` under `name` (reduced to one safe path segment; the store adds an unguessable id)
 * and resolves `{ id, url }` with `url` absolute. Rejects on storage errors.
 */
export interface OutputFiles {
  readonly put: (name: string, data: Uint8Array | string, contentType?: string) => Promise<{ id: string; url: string }>
}

/** Graph limits an operation honours (research-jobs spec, "Limits"). */
export interface GraphLimits {
  /** FETCH_TIMEOUT in milliseconds: the deadline of one HTTP fetch. */
  readonly fetchTimeoutMs: number
  /** EMBED_BATCH_SIZE: texts per embedding call. */
  readonly embedBatchSize: number
  /** GRAPH_MAX_PARALLEL: the most requests an operation keeps in flight at once. */
  readonly maxParallel: number
}

/** Context a graph operation runs with. */
export interface GraphOpContext {
  /** Aborted when the graph job is cancelled or times out; pass it to every fetch. */
  readonly signal: AbortSignal
  readonly files: OutputFiles
  /** Progress of this operation (0..100) and a message; the engine folds it into the job's. */
  readonly progress: (percent: number, message?: string) => Promise<void>
  readonly limits: GraphLimits
}

/** The categories of the research-jobs spec's operation list. */
export type GraphOpCategory = "discover" | "acquire" | "transform" | "process" | "filter" | "extract" | "store" | "synthesize"

/**
 * A graph operation contribution (`fetch_archive`, `screenshot`), schema-declared.
 *
 * `inputTypes` lists the graph types (`GraphTypes.ts`) the op accepts as its input state, e.g.
 * `["url", "url[]"]`; `[]` means it takes no input (everything comes from `params`), and a
 * graph giving it one is a validation error. When a graph names several input states the op
 * receives them as one list in the order named, and each must fit an accepted type (an op that
 * takes several lists, `merge`, accepts `any[]`). `outputType` is the type its output state
 * holds. `input` and `output` are the runtime Schemas of those values; the engine decodes
 * `params` with `params` (after `{{ }}` expressions are filled in) and the input with `input`,
 * and checks the handler's value with `output`.
 *
 * Handlers reject with `JobFailure` (jobs contract) for expected failures; the message names
 * the cause (`fetch: https://x/ answered 404`). They must honour `ctx.signal`.
 */
export interface GraphOperation<Pa = any, I = any, O = any> {
  readonly name: string
  readonly description: string
  readonly category: GraphOpCategory
  readonly params: Schema.Schema<Pa, any>
  readonly inputTypes: ReadonlyArray<GraphType>
  readonly outputType: GraphType
  readonly input: Schema.Schema<I, any>
  readonly output: Schema.Schema<O, any>
  readonly handler: (params: Pa, input: I, ctx: GraphOpContext) => Promise<O>
}

/** Result of an MCP tool call; `isError` carries refusals as normal results (MCP convention). */
export interface McpToolResult {
  readonly content: ReadonlyArray<{ type: "text"; text: string }>
  readonly structuredContent?: Record<string, unknown>
  readonly isError?: boolean
}

/** An MCP tool contribution, served on the listener of its plugin at `/api/mcp`. */
export interface McpTool<I = any> {
  readonly name: string
  readonly description: string
  readonly input: Schema.Schema<I, any>
  readonly output?: Schema.Schema<any, any>
  readonly handler: (input: I) => Effect.Effect<McpToolResult, never, never>
}
