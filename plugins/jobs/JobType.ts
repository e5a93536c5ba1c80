/**
 * What a job plugin writes: a job type, the context its handler gets, the failure it raises, and
 * the `JobTypes` extension point it registers into. Re-exported by `Contract.ts`, the only
 * module of this plugin other plugins import.
 */
import * as Schema from "effect/Schema"
import type { OutputFiles } from "../../core/Contribution.ts"
import * as ExtensionPoint from "../../core/ExtensionPoint.ts"

/** Error kinds the jobs runtime's retry policy understands (research-jobs spec, retry policy). */
export const JobErrorKind = Schema.Literal("TIMEOUT", "NETWORK_ERROR", "VALIDATION_ERROR", "REMOTE_ERROR", "INTERNAL_ERROR", "CANCELLED")
export type JobErrorKind = typeof JobErrorKind.Type

/**
 * A failure raised by a job handler: `kind` decides retrying, `message` lands in the job's
 * `error`, and `details` (JSON, optional) in its `error_details` (e.g. a graph's failing stage
 * and partial outputs).
 */
export class JobFailure extends Schema.TaggedError<JobFailure>()("JobFailure", {
  kind: JobErrorKind,
  message: Schema.String,
  /** Overrides the kind's retry rule when set. */
  retryable: Schema.optional(Schema.Boolean),
  details: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
}) {
  // Positional, as handlers raise it (`throw new JobFailure("TIMEOUT", "...")`).
  constructor(kind: JobErrorKind, message: string, retryable?: boolean, details?: Record<string, unknown>) {
    super({ kind, message, ...(retryable !== undefined ? { retryable } : {}), ...(details !== undefined ? { details } : {}) })
  }
}

/** The file store as a job sees it: stored files are deleted with the job at retention. */
export type JobFiles = OutputFiles

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
 * A job type: id is the specification's name (`vectl`, `screenshot`). The jobs runtime
 * validates the POST body with `payload` (failures: 422, job FAILED with a VALIDATION_ERROR),
 * decodes it again in the worker, and checks the handler's value with `result` (a mismatch fails
 * the job with INTERNAL_ERROR, not retried). Handlers must honour `ctx.signal` (cancel,
 * WORKER_TIMEOUT): the worker frees the slot as soon as it aborts.
 */
export interface JobType<P = any, R = any> {
  readonly id: string
  readonly description: string
  readonly payload: Schema.Schema<P, any>
  readonly result: Schema.Schema<R, any>
  /** Resolves to the result or rejects with `JobFailure` (other errors count as INTERNAL_ERROR). */
  readonly handler: (payload: P, ctx: JobContext) => Promise<R>
}

/** The extension point job plugins register their types into (owned by the `jobs` plugin). */
export const JobTypes = ExtensionPoint.make<JobType>({ name: "jobTypes", kind: "job type", owner: "jobs", idOf: (t) => t.id })

/** The contributions registering `types` (return them as `extensions` from `setup`). */
export const jobTypes = (...types: ReadonlyArray<JobType>) => ExtensionPoint.extend(JobTypes, ...types)
