/**
 * The Job resource of the research-jobs spec (section "Job"), its states, retry policy and the
 * pure rules of its lifecycle (retry decision, backoff). Everything here is data and pure
 * functions so both queue backends share one definition of "what happens next".
 */
import { randomBytes } from "node:crypto"
import * as Schema from "effect/Schema"
import type { JobErrorKind } from "../JobType.ts"

/** The six job states of the spec. */
export const JobStatus = Schema.Literal("PENDING", "QUEUED", "PROCESSING", "COMPLETED", "FAILED", "CANCELLED")
export type JobStatus = typeof JobStatus.Type

/** States a job never leaves. FAILED is terminal only once no retry follows (a retry goes straight back to QUEUED). */
export const TERMINAL: ReadonlySet<JobStatus> = new Set(["COMPLETED", "FAILED", "CANCELLED"])

/** Error kinds a retry policy may name. */
export const ErrorKind = Schema.Literal("TIMEOUT", "NETWORK_ERROR", "VALIDATION_ERROR", "REMOTE_ERROR", "INTERNAL_ERROR", "CANCELLED")

/** The spec's retry policy object; a job may carry its own (top-level `retry_policy` in the POST body). */
export const RetryPolicy = Schema.Struct({
  max_retries: Schema.Int.pipe(Schema.between(0, 100)),
  retry_on: Schema.Array(ErrorKind),
  no_retry_on: Schema.Array(ErrorKind)
}).annotations({ identifier: "RetryPolicy" })
export type RetryPolicy = typeof RetryPolicy.Type

/** What a client may send as `retry_policy`: every member optional, missing ones come from the config. */
export const RetryPolicyInput = Schema.partial(RetryPolicy)

/** One `history` entry. */
export const HistoryEntry = Schema.Struct({
  status: JobStatus,
  timestamp: Schema.String,
  worker: Schema.optional(Schema.String),
  error: Schema.optional(Schema.String),
  attempt: Schema.optional(Schema.Int)
})
export type HistoryEntry = typeof HistoryEntry.Type

/**
 * A job as stored and as answered by the API. The spec's fields plus: `payload` (the request
 * body as accepted), `retry_policy` (the effective policy), `error_kind` (the failure kind that
 * decided retrying), `error_details` (structured facts of the failure), `scheduled_at` (when a QUEUED job becomes runnable: later than its QUEUED
 * entry while a retry backoff runs), `worker` (who holds a PROCESSING job) and `files` (keys of
 * files the job stored, purged with it).
 */
export const Job = Schema.Struct({
  job_id: Schema.String,
  status: JobStatus,
  job_type: Schema.String,
  created_at: Schema.String,
  started_at: Schema.optional(Schema.String),
  completed_at: Schema.optional(Schema.String),
  failed_at: Schema.optional(Schema.String),
  cancelled_at: Schema.optional(Schema.String),
  duration_seconds: Schema.optional(Schema.Number),
  progress: Schema.Int,
  message: Schema.optional(Schema.String),
  result: Schema.optional(Schema.Unknown),
  error: Schema.optional(Schema.String),
  error_kind: Schema.optional(ErrorKind),
  error_details: Schema.optional(Schema.Unknown).annotations({ description: "structured facts of the failure: `issues` [{path, message}] of an invalid payload; a graph's `stage_name`, `message`, `partial_outputs`" }),
  attempts: Schema.Int,
  max_retries: Schema.Int,
  retry_policy: RetryPolicy,
  history: Schema.Array(HistoryEntry),
  payload: Schema.Unknown,
  scheduled_at: Schema.optional(Schema.String),
  worker: Schema.optional(Schema.String),
  files: Schema.optional(Schema.Array(Schema.String))
}).annotations({ identifier: "Job", description: "An asynchronous job (research-jobs spec, Job)" })
export type Job = typeof Job.Type

/** Current time as ISO 8601 UTC with milliseconds (`2026-11-21T09:30:00.000Z`). */
export const nowIso = (ms: number = Date.now()): string => new Date(ms).toISOString()

/**
 * A new opaque job id `job_<26 chars>`: 10 chars of base-32 milliseconds then 16 random base-32
 * chars, so ids sort by creation time (the list's tie-break) and cannot be guessed.
 */
export const newJobId = (ms: number = Date.now()): string => {
  const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
  let t = ""
  let n = ms
  for (let i = 0; i < 10; i++) {
    t = alphabet[n % 32] + t
    n = Math.floor(n / 32)
  }
  if (poolAt + 16 > pool.length) {
    pool = randomBytes(4096)
    poolAt = 0
  }
  let r = ""
  for (let i = 0; i < 16; i++) r += alphabet[pool[poolAt++]! % 32]
  return `job_${t}${r}`
}

// Random bytes for ids, drawn 4 KiB at a time (one call to the CSPRNG per 256 ids, not per id).
let pool = Buffer.alloc(0)
let poolAt = 0

/** True for COMPLETED, FAILED and CANCELLED. */
export const isTerminal = (status: JobStatus): boolean => TERMINAL.has(status)

/**
 * Seconds to wait before retry number `attempt` (1-based: the attempt that just failed):
 * `min(base * 2^(attempt-1), cap)`; with the spec's 30 s / 3600 s this is 30, 60, 120, ... 3600.
 */
export const backoffSeconds = (attempt: number, baseSeconds: number, capSeconds: number): number =>
  Math.min(baseSeconds * 2 ** Math.max(0, attempt - 1), capSeconds)

/**
 * Whether a failed attempt is retried. `attempts` counts executions started (the failed one
 * included); `max_retries` counts re-runs, so a job runs at most `max_retries + 1` times.
 * A kind in `no_retry_on` never retries; otherwise a kind in `retry_on` retries. A handler's
 * explicit `retryable` flag overrides `retry_on` (but not `no_retry_on`).
 */
export const shouldRetry = (
  policy: RetryPolicy,
  attempts: number,
  kind: JobErrorKind,
  retryable?: boolean
): boolean => {
  if (attempts > policy.max_retries) return false
  if (kind === "CANCELLED" || policy.no_retry_on.includes(kind)) return false
  if (retryable !== undefined) return retryable
  return policy.retry_on.includes(kind)
}

/** Seconds between two ISO timestamps, rounded to milliseconds. */
export const secondsBetween = (fromIso: string, toIso: string): number =>
  Math.round(Date.parse(toIso) - Date.parse(fromIso)) / 1000

/** Appends a history entry (records are immutable values; returns the new array). */
export const withHistory = (job: Job, entry: HistoryEntry): ReadonlyArray<HistoryEntry> => [...job.history, entry]
