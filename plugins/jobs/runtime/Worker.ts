/**
 * Execution of one delivered job: claim (QUEUED to PROCESSING), run the job type's handler with a
 * progress reporter, an abort signal and the file store, then record the outcome: COMPLETED, a
 * retry (FAILED entry then QUEUED after a backoff), or FAILED. The same code runs in the API
 * process (embedded backend, or redis with `workers: true`) and in `platform worker` processes.
 *
 * Cancellation and `WORKER_TIMEOUT` abort the handler's signal; the slot is freed at once (the
 * handler's promise is abandoned), so a cancelled job stops occupying a worker immediately even if
 * its handler ignores the signal. Every write is conditioned on the record still being this
 * attempt's PROCESSING state, so a cancel that won the race is never overwritten.
 */
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import * as Schema from "effect/Schema"
import { type JobContext, JobFailure, type JobType } from "../JobType.ts"
import { type AbortReason, Aborter, Claim, ClaimLost, WorkerShutdown } from "./Attempt.ts"
import { classify, formatIssues } from "./Classify.ts"
import type { FileStore } from "./FileStore.ts"
import { backoffSeconds, type Job, nowIso, secondsBetween, shouldRetry } from "./Job.ts"
import type { JobStore } from "./JobStore.ts"
import { scheduledMs } from "./JobStore.ts"
import type { JobQueue } from "./Queue.ts"
import type { Limits } from "./Settings.ts"
import { lostAttempt, queueTimedOut } from "./Transitions.ts"

/** Finds a job type by id at delivery time (plugins register theirs after the runtime is built). */
export type JobTypeLookup = (id: string) => JobType | undefined

/** Runs delivered jobs; one per process. */
export class JobWorker {
  /** Running attempts in this process, by job id. */
  readonly running = new Map<string, { aborter: Aborter; attempt: number }>()
  private stopping = false
  /** Final record writes not awaited by their delivery (see `JobQueue.completionOrdered`). */
  private readonly writes = new Set<Promise<unknown>>()

  constructor(
    private readonly store: JobStore,
    private readonly queue: JobQueue,
    private readonly lookup: JobTypeLookup,
    private readonly files: FileStore,
    private readonly limits: Limits,
    /** Name written to `history[].worker` (`<host>:<pid>` by default). */
    readonly name: string = `${os.hostname()}:${process.pid}`
  ) {}

  /** Aborts the running attempt of `id` in this process, if any (cancel from any process lands here). */
  abort(id: string, reason: AbortReason): void {
    this.running.get(id)?.aborter.abort(reason)
  }

  /** Aborts every running attempt with `WorkerShutdown`: each goes back to QUEUED for a later run. */
  shutdown(): void {
    this.stopping = true
    for (const r of this.running.values()) r.aborter.abort(new WorkerShutdown())
  }

  /** Resolves when every final record write issued so far has settled. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.writes])
  }

  /** Handles one delivery (see `Deliver`); never rejects. */
  deliver = async (id: string, snapshot: Job | undefined, first: boolean): Promise<void> => {
    try {
      await this.run(id, snapshot, first)
    } catch (e) {
      // Store unreachable mid-run: the record stays as it was, the sweeper or recovery handles it.
      console.error(`[jobs] ${id}: ${(e as Error)?.message ?? e}`)
    }
  }

  /**
   * The claim transition: QUEUED to PROCESSING for this worker (attempt counted), a PROCESSING
   * record of a dead worker first put back (`lostAttempt`), QUEUE_TIMEOUT enforced; undefined
   * when the record is not claimable.
   */
  private claimTransition(j: Job): Job | undefined {
    const now = Date.now()
    let job = j
    if (job.status === "PROCESSING") {
      // Delivered again while the record says PROCESSING and this process is not running it:
      // the worker that claimed it died (BullMQ stall recovery). That attempt counts.
      job = lostAttempt(job, now)
      if (job.status !== "QUEUED") return job
    }
    if (job.status !== "QUEUED") return undefined
    const at = nowIso(now)
    if (scheduledMs(job)! + this.limits.queue_timeout_s * 1000 < now) return queueTimedOut(job, at, this.limits.queue_timeout_s)
    const attempt = job.attempts + 1
    return {
      ...job,
      status: "PROCESSING",
      attempts: attempt,
      started_at: at,
      worker: this.name,
      progress: 0,
      message: undefined,
      scheduled_at: undefined,
      history: [...job.history, { status: "PROCESSING", timestamp: at, worker: this.name, attempt }]
    }
  }

  /**
   * Claims the job, then runs the attempt. A first delivery on a store whose writes are ordered
   * with the queue's (redis) claims from the delivery's snapshot without waiting for Redis: the
   * handler starts at once and the claim is written on the next turn of the event loop, or
   * together with the outcome in one write when the handler settles first (a trivial job then
   * costs one record write, not two, and no round trip holds its slot). A claim that does not
   * take (the job was cancelled or timed out meanwhile) aborts the handler (`ClaimLost`) and
   * nothing is recorded; the context's `progress` and `files.put` wait for the claim. Other
   * deliveries claim with a compare-and-set first, as before.
   */
  private async run(id: string, snapshot: Job | undefined, first: boolean): Promise<void> {
    if (this.stopping || this.running.has(id)) return
    const aborter = new Aborter()
    let claim: Claim | undefined
    if (first && snapshot && this.queue.completionOrdered && this.store.replace) {
      const next = this.claimTransition(snapshot)
      if (next?.status === "PROCESSING") {
        claim = new Claim(this.store.replace, snapshot, next, () => aborter.abort(new ClaimLost()))
      }
    }
    if (!claim) {
      const claimed = await this.store.update(id, (j) => this.claimTransition(j), snapshot)
      if (!claimed?.changed || claimed.job.status !== "PROCESSING" || claimed.job.worker !== this.name) return
      claim = Claim.written(claimed.job)
    }
    let job = claim.job
    const attempt = job.attempts
    const type = this.lookup(job.job_type)
    this.running.set(id, { aborter, attempt })
    const timeoutMs = this.limits.worker_timeout_s * 1000
    const timer = setTimeout(() => {
      aborter.abort(new JobFailure("TIMEOUT", `job exceeded WORKER_TIMEOUT of ${this.limits.worker_timeout_s} s`))
    }, timeoutMs)
    let workDir: string | undefined
    const mine = (j: Job): boolean => j.status === "PROCESSING" && j.attempts === attempt && j.worker === this.name
    /** Waits for the claim to be recorded; throws the abort reason when it did not take. */
    const claimed = async (): Promise<void> => {
      if (!(await claim.write())) throw aborter.reason
    }
    try {
      if (!type) throw new JobFailure("INTERNAL_ERROR", `no worker for job type "${job.job_type}" in this process`, false)
      const decoded = Schema.decodeUnknownEither(type.payload)(job.payload, { errors: "all" })
      if (decoded._tag === "Left") throw new JobFailure("VALIDATION_ERROR", `invalid payload: ${formatIssues(decoded.left)}`)
      const ctx: JobContext = {
        jobId: id,
        attempt,
        get signal() {
          return aborter.signal
        },
        // Created on first use: most handlers never touch it, and a directory per job costs
        // more than a trivial job itself.
        get workDir() {
          workDir ??= fs.mkdtempSync(path.join(os.tmpdir(), "job-"))
          return workDir
        },
        progress: async (percent, message) => {
          await claimed()
          const p = Math.max(0, Math.min(100, Math.round(percent)))
          const r = await this.store.update(id, (j) => (mine(j) ? { ...j, progress: p, ...(message !== undefined ? { message } : {}) } : undefined), job)
          if (r?.changed) job = r.job
        },
        files: {
          put: async (name, data, contentType) => {
            await claimed()
            const f = await this.files.put(name, data, contentType)
            const r = await this.store.update(id, (j) => (mine(j) ? { ...j, files: [...(j.files ?? []), f.key] } : undefined), job)
            if (r?.changed) job = r.job
            return { id: f.id, url: f.url }
          }
        }
      }
      const value = await aborter.race(type.handler(decoded.right, ctx))
      const encoded = Schema.encodeUnknownEither(type.result)(value, { errors: "all" })
      if (encoded._tag === "Left") throw new JobFailure("INTERNAL_ERROR", `result does not match the ${type.id} result schema: ${formatIssues(encoded.left)}`, false)
      const complete = (j: Job): Job | undefined => {
        if (!mine(j)) return undefined
        const at = nowIso()
        return {
          ...j,
          status: "COMPLETED",
          completed_at: at,
          duration_seconds: secondsBetween(j.started_at ?? at, at),
          progress: 100,
          result: encoded.right,
          worker: undefined,
          history: [...j.history, { status: "COMPLETED", timestamp: at, worker: this.name, attempt }]
        }
      }
      // Claim not written yet: one write from the delivered QUEUED record straight to the outcome
      // (history keeps the PROCESSING entry); it does not take only if a cancel or timeout won.
      const completed = claim.fold()
        ? this.store.replace!(claim.prev, complete(claim.job)!)
        : this.store.update(id, complete, job)
      if (this.queue.completionOrdered) {
        // The write is already on the connection BullMQ will complete the delivery on, so it lands
        // first; not waiting for its reply saves a round trip per job.
        const w = completed.catch((e) => console.error(`[jobs] ${id}: completion not recorded: ${(e as Error)?.message ?? e}`))
        this.writes.add(w)
        void w.finally(() => this.writes.delete(w))
      } else {
        await completed
      }
    } catch (thrown) {
      // Failures are rare: the claim is recorded first, then the outcome written over it.
      if (!(await claim.write().catch(() => false))) return
      const reason = aborter.reason
      if (reason instanceof JobFailure && reason.kind === "CANCELLED") return // the record is already CANCELLED
      if (reason instanceof WorkerShutdown) {
        await this.requeue(id, job, attempt, "worker shut down during the attempt")
        return
      }
      const failure = classify(reason instanceof JobFailure ? reason : thrown)
      let retryDelayMs = -1
      const r = await this.store.update(id, (j) => {
        if (!mine(j)) return undefined
        const at = nowIso()
        const error = `${failure.kind}: ${failure.message}`
        const history = [...j.history, { status: "FAILED" as const, timestamp: at, worker: this.name, error, attempt }]
        if (shouldRetry(j.retry_policy, attempt, failure.kind, failure.retryable)) {
          const delay = backoffSeconds(attempt, this.limits.backoff_base_s, this.limits.backoff_cap_s)
          retryDelayMs = delay * 1000
          const scheduled = nowIso(Date.parse(at) + retryDelayMs)
          return {
            ...j,
            status: "QUEUED",
            worker: undefined,
            scheduled_at: scheduled,
            message: `retry ${attempt} of ${j.retry_policy.max_retries} in ${delay} s after ${failure.kind}`,
            history: [...history, { status: "QUEUED" as const, timestamp: at, attempt }]
          }
        }
        retryDelayMs = -1
        return {
          ...j,
          status: "FAILED",
          failed_at: at,
          duration_seconds: secondsBetween(j.started_at ?? at, at),
          error,
          error_kind: failure.kind,
          ...(failure.details !== undefined ? { error_details: failure.details } : {}),
          worker: undefined,
          history
        }
      }, job)
      if (r?.changed && r.job.status === "QUEUED") await this.queue.enqueue(r.job, retryDelayMs)
    } finally {
      clearTimeout(timer)
      this.running.delete(id)
      if (workDir) await fsp.rm(workDir, { recursive: true, force: true }).catch(() => {})
    }
  }

  private async requeue(id: string, known: Job, attempt: number, why: string): Promise<void> {
    const r = await this.store.update(id, (j) => {
      if (!(j.status === "PROCESSING" && j.attempts === attempt && j.worker === this.name)) return undefined
      const at = nowIso()
      return { ...j, status: "QUEUED", worker: undefined, scheduled_at: at, history: [...j.history, { status: "QUEUED", timestamp: at, error: why, attempt }] }
    }, known)
    // Embedded: the next start re-enqueues it from the store. Redis: hand it to another worker now.
    if (r?.changed) await this.queue.enqueue(r.job, 0).catch(() => {})
  }
}
