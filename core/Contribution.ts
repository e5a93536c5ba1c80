/**
 * The non-HTTP contribution kinds a plugin can declare: job types, graph operations and MCP
 * tools. Each kind has one registry in the kernel (see `Registry.ts`); ids are unique per kind
 * across all plugins, and a duplicate is a boot error naming both plugins.
 */
import type { Effect, Schema } from "effect"

/** Error kinds the jobs runtime's retry policy understands (research-jobs spec, retry policy). */
export type JobErrorKind = "TIMEOUT" | "NETWORK_ERROR" | "VALIDATION_ERROR" | "REMOTE_ERROR" | "INTERNAL_ERROR" | "CANCELLED"

/** A failure raised by a job handler: `kind` decides retrying, `message` lands in the job's `error`. */
export class JobFailure extends Error {
  readonly _tag = "JobFailure"
  constructor(readonly kind: JobErrorKind, message: string, readonly retryable?: boolean) {
    super(message)
  }
}

/** The file store as a job sees it (the `files` service of the `jobs` plugin). */
export interface JobFiles {
  /**
   * Stores `data` under `name` (reduced to one safe path segment; the store adds an unguessable
   * id) and records it with the job, so it is deleted with the job at retention. Resolves
   * `{ id, url }` with `url` absolute (`{files_url}/<id>/<name>`). Rejects on storage errors.
   */
  readonly put: (name: string, data: Uint8Array | string, contentType?: string) => Promise<{ id: string; url: string }>
}

/** What a job handler receives besides its decoded payload. */
export interface JobContext {
  readonly jobId: string
  /** 1-based attempt number. */
  readonly attempt: number
  /** Reports progress (0..100) and an optional human-readable message. */
  readonly progress: (percent: number, message?: string) => Promise<void>
  /** Aborted on cancel and on worker timeout; pass it to fetches and browser pages. */
  readonly signal: AbortSignal
  readonly files: JobFiles
  /** Scratch directory unique to this attempt, created on first access, removed afterwards. */
  readonly workDir: string
}

/**
 * A job type contribution: id is the specification's name (`vectl`, `screenshot`). The jobs
 * runtime validates the POST body with `payload` (failures: 422, job FAILED with a
 * VALIDATION_ERROR), decodes it again in the worker, and checks the handler's value with `result`
 * (a mismatch fails the job with INTERNAL_ERROR, not retried). Handlers must honour
 * `ctx.signal` (cancel, WORKER_TIMEOUT): the worker frees the slot as soon as it aborts.
 */
export interface JobType<P = any, R = any> {
  readonly id: string
  readonly description: string
  readonly payload: Schema.Schema<P, any>
  readonly result: Schema.Schema<R, any>
  /** Resolves to the result or rejects with `JobFailure` (other errors count as INTERNAL_ERROR). */
  readonly handler: (payload: P, ctx: JobContext) => Promise<R>
}

/** Context a graph operation runs with. */
export interface GraphOpContext {
  readonly signal: AbortSignal
  readonly files: JobFiles
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
