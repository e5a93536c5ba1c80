/**
 * The non-HTTP contribution kinds the kernel owns: graph operations and MCP tools. Each kind has
 * one registry in the kernel (see `Registry.ts`); ids are unique per kind across all plugins, and
 * a duplicate is a boot error naming both plugins. Kinds a plugin owns (the `jobs` plugin's job
 * types) are extension points (`ExtensionPoint.ts`).
 */
import type { Effect, Schema } from "effect"

/**
 * Where an operation stores output files (the `jobs` plugin's file store gives one). `put`
 * stores `data` under `name` (reduced to one safe path segment; the store adds an unguessable id)
 * and resolves `{ id, url }` with `url` absolute. Rejects on storage errors.
 */
export interface OutputFiles {
  readonly put: (name: string, data: Uint8Array | string, contentType?: string) => Promise<{ id: string; url: string }>
}

/** Context a graph operation runs with. */
export interface GraphOpContext {
  readonly signal: AbortSignal
  readonly files: OutputFiles
  readonly progress: (percent: number, message?: string) => Promise<void>
}

/** A graph operation contribution (`fetch_archive`, `screenshot`), schema-declared. */
export interface GraphOperation<Pa = any, I = any, O = any> {
  readonly name: string
  readonly description: string
  readonly params: Schema.Schema<Pa, any>
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
