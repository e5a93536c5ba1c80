/**
 * Record transitions applied outside a running attempt: a PROCESSING record whose worker is gone
 * (`lostAttempt`: redelivery after a stall, startup recovery) and a QUEUED record past
 * QUEUE_TIMEOUT (`queueTimedOut`: the sweeper, or a claim that comes too late).
 */
import { type Job, nowIso, secondsBetween } from "./Job.ts"

/**
 * A PROCESSING record whose worker is gone: back to QUEUED with the attempt counted, or FAILED
 * (INTERNAL_ERROR) once the attempts are used up, so a job that kills its worker cannot loop.
 */
export const lostAttempt = (job: Job, now: number = Date.now()): Job => {
  const at = nowIso(now)
  const error = `INTERNAL_ERROR: worker ${job.worker ?? "?"} lost during attempt ${job.attempts}`
  const history = [...job.history, { status: "FAILED" as const, timestamp: at, error, attempt: job.attempts }]
  if (job.attempts > job.retry_policy.max_retries) {
    return { ...job, status: "FAILED", failed_at: at, error, error_kind: "INTERNAL_ERROR", worker: undefined, history, duration_seconds: secondsBetween(job.started_at ?? at, at) }
  }
  return { ...job, status: "QUEUED", worker: undefined, scheduled_at: at, history: [...history, { status: "QUEUED", timestamp: at, attempt: job.attempts }] }
}

/** A QUEUED record that waited longer than QUEUE_TIMEOUT: FAILED with kind TIMEOUT (not retried: it would only wait again). */
export const queueTimedOut = (job: Job, at: string, queueTimeoutS: number): Job => {
  const error = `TIMEOUT: waited in queue longer than QUEUE_TIMEOUT of ${queueTimeoutS} s`
  return {
    ...job,
    status: "FAILED",
    failed_at: at,
    error,
    error_kind: "TIMEOUT",
    scheduled_at: undefined,
    history: [...job.history, { status: "FAILED", timestamp: at, error }]
  }
}

