/**
 * Classification of network outcomes into `JobFailure` kinds, shared by every fetching job.
 *
 * The jobs runtime retries by kind (`TIMEOUT`, `NETWORK_ERROR` by default); the rules here decide
 * what a remote's answer means for that policy:
 * - connection refused/reset, DNS failure, 5xx, 429 after our own backoff: `NETWORK_ERROR`
 *   (transient, worth another attempt later);
 * - our per-request or per-job deadline: `TIMEOUT`;
 * - 4xx other than 408/429: `REMOTE_ERROR`, not retryable (the same request gets the same answer);
 * - the job's signal aborted by cancel: `CANCELLED`.
 *
 * Transient kinds leave `retryable` unset so the job's own `retry_policy` decides; permanent
 * ones set `retryable: false`, which no `retry_on` can override.
 */
import * as Schema from "effect/Schema"
import { JobFailure } from "../JobType.ts"

/** Marker reason used when our own deadline (not the caller) aborts a request. */
export class DeadlineExceeded extends Schema.TaggedError<DeadlineExceeded>()("DeadlineExceeded", {
  /** The deadline, milliseconds. */
  ms: Schema.Number,
  /** What timed out ("GET https://…"). */
  what: Schema.String
}) {
  constructor(ms: number, what: string) {
    super({ ms, what })
  }

  override get message(): string {
    return `${this.what} timed out after ${this.ms} ms`
  }
}

/**
 * The failure a job should raise because `signal` aborted. A `JobFailure` reason is returned as
 * is (the runtime may abort with one); a `DeadlineExceeded` or DOM `TimeoutError` reason is a
 * `TIMEOUT`; anything else is a cancel (`CANCELLED`, not retryable).
 */
export const abortFailure = (signal: AbortSignal): JobFailure => {
  const reason: unknown = signal.reason
  if (reason instanceof JobFailure) return reason
  if (reason instanceof DeadlineExceeded) return new JobFailure("TIMEOUT", reason.message)
  if (reason instanceof Error && reason.name === "TimeoutError") return new JobFailure("TIMEOUT", "timed out")
  const text = reason instanceof Error ? reason.message : typeof reason === "string" ? reason : "cancelled"
  return new JobFailure("CANCELLED", `cancelled: ${text}`, false)
}

/**
 * The failure for a final HTTP status that is not a success: `status` the HTTP status, `what`
 * names the request in the message (`"Wayback CDX query"`).
 */
export const statusFailure = (status: number, what: string, detail?: string): JobFailure => {
  const message = `${what} failed: HTTP ${status}${detail ? ` (${detail})` : ""}`
  if (status === 408) return new JobFailure("TIMEOUT", message)
  if (status === 429 || status >= 500) return new JobFailure("NETWORK_ERROR", message)
  return new JobFailure("REMOTE_ERROR", message, false)
}

/**
 * The failure for an exception thrown by `fetch` or a body read. `signal` is the combined signal
 * the request ran with: when it aborted, its reason decides (cancel or deadline); otherwise the
 * error is a transport failure (`NETWORK_ERROR`). `JobFailure`s pass through.
 */
export const transportFailure = (err: unknown, signal: AbortSignal | undefined, what: string): JobFailure => {
  if (err instanceof JobFailure) return err
  if (signal?.aborted) {
    const f = abortFailure(signal)
    return f.kind === "TIMEOUT" ? new JobFailure("TIMEOUT", `${what}: ${f.message}`) : f
  }
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause
  const detail = cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err))
  return new JobFailure("NETWORK_ERROR", `${what} failed: ${detail}`)
}

/** `JobFailure` for a payload the handler refuses after Schema decoding (never retried). */
export const invalid = (message: string): JobFailure => new JobFailure("VALIDATION_ERROR", message, false)
