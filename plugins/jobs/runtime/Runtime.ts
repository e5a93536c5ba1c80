/**
 * The jobs runtime: one object per process tying the job store, the queue backend, the worker and
 * the file store together. The HTTP layer (`Http.ts`) and the `jobs` plugin talk only to this.
 *
 * Every process runs the API side (submit/get/list/cancel/events, sweeping) and, with
 * `settings.workers`, runs deliveries. The embedded backend's queue lives in this process.
 */
import * as path from "node:path"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { JobFailure } from "../JobType.ts"
import type { FileStore } from "./FileStore.ts"
import { isTerminal, type Job, type JobStatus, newJobId, nowIso, type RetryPolicy, RetryPolicyInput, secondsBetween } from "./Job.ts"
import { FileJobStore, type JobStore, type ListPage, type ListQuery, scheduledMs } from "./JobStore.ts"
import { EmbeddedQueue, type JobQueue } from "./Queue.ts"
import { RedisQueue } from "./RedisQueue.ts"
import { RedisJobStore } from "./RedisJobStore.ts"
import type { JobsSettings } from "./Settings.ts"
import { formatIssues, issueList } from "./Classify.ts"
import { lostAttempt, queueTimedOut } from "./Transitions.ts"
import { type JobTypeLookup, JobWorker } from "./Worker.ts"

/** How long a runnable QUEUED record may lack a queue entry before the sweeper re-enqueues it (ms). */
export const ORPHAN_GRACE_MS = 2_000

/** Everything the runtime needs; see `JobsRuntime.open`. */
export interface RuntimeOptions {
  readonly settings: JobsSettings
  /** Directory for the embedded store (`<dir>/jobs.log`). */
  readonly dataDir: string
  readonly lookup: JobTypeLookup
  readonly files: FileStore
  /** Worker name in history entries; default `<host>:<pid>`. */
  readonly workerName?: string
  /** The store and queue to use (`Backend.ts` layers); default: opened here from `settings`. */
  readonly backend?: { readonly store: JobStore; readonly queue: JobQueue }
  /**
   * Start workers now (default true when `settings.workers`). The `jobs` plugin passes false and
   * calls `startWorkers` from its `start`, after every plugin registered its job types.
   */
  readonly startWorkers?: boolean
}

/** Outcome of `submit`. */
export type Submitted =
  | { readonly _tag: "Accepted"; readonly job: Job }
  | { readonly _tag: "Invalid"; readonly job: Job }
  | { readonly _tag: "UnknownType"; readonly type: string }

/** Outcome of `cancel`. */
export type Cancelled =
  | { readonly _tag: "Cancelled"; readonly job: Job }
  | { readonly _tag: "Terminal"; readonly job: Job }
  | { readonly _tag: "NotFound" }

/** The runtime. Build with `JobsRuntime.open`, release with `close`. */
export class JobsRuntime {
  private sweeper: NodeJS.Timeout | undefined
  /** The sweep in progress, if any: `close` waits for it so it does not run on closed connections. */
  private sweeping: Promise<unknown> | undefined
  /** Records runnable before this time were already checked for a lost queue entry. */
  private orphansCheckedTo = -Infinity
  private unsubscribeCancel: (() => void) | undefined
  private workersStarted = false

  private constructor(
    readonly settings: JobsSettings,
    readonly store: JobStore,
    readonly queue: JobQueue,
    readonly worker: JobWorker,
    readonly files: FileStore,
    private readonly lookup: JobTypeLookup
  ) {}

  /**
   * Opens the store and queue of `settings.backend`. Embedded: replays `<dataDir>/jobs.log` and
   * recovers jobs a dead process left PROCESSING (back to QUEUED, attempt counted). Starts the
   * sweeper (queue timeouts, retention) and, with `settings.workers`, the workers. Rejects when the store cannot be opened (unreadable directory, Redis refusing).
   */
  static async open(opts: RuntimeOptions): Promise<JobsRuntime> {
    const s = opts.settings
    let store: JobStore
    let queue: JobQueue
    if (opts.backend) {
      store = opts.backend.store
      queue = opts.backend.queue
    } else if (s.backend === "redis") {
      const r = new RedisJobStore(s.redis.url, s.redis.prefix)
      await r.ready(5000).catch(async (e) => {
        await r.close()
        throw e
      })
      store = r
      queue = new RedisQueue(s.redis, r)
    } else {
      store = new FileJobStore(path.resolve(opts.dataDir))
      queue = new EmbeddedQueue()
    }
    const worker = new JobWorker(store, queue, opts.lookup, opts.files, s.limits, opts.workerName)
    const rt = new JobsRuntime(s, store, queue, worker, opts.files, opts.lookup)
    if (s.backend === "embedded") await rt.recover()
    if (s.workers && opts.startWorkers !== false) await rt.startWorkers()
    rt.startSweeper()
    return rt
  }

  private async recover(): Promise<void> {
    const now = Date.now()
    const queued: Array<Job> = []
    for (const j of await this.store.active()) {
      let job: Job | undefined = j
      if (j.status === "PROCESSING") {
        job = (await this.store.update(j.job_id, (x) => (x.status === "PROCESSING" ? lostAttempt(x, now) : undefined)))?.job
      } else if (j.status === "PENDING") {
        // Created but never enqueued (crash between the two): enqueue it now.
        job = (await this.store.update(j.job_id, (x) => {
          if (x.status !== "PENDING") return undefined
          const at = nowIso(now)
          return { ...x, status: "QUEUED", scheduled_at: at, history: [...x.history, { status: "QUEUED", timestamp: at }] }
        }))?.job
      }
      if (job?.status === "QUEUED") queued.push(job)
    }
    queued.sort((a, b) => scheduledMs(a)! - scheduledMs(b)!)
    for (const j of queued) await this.queue.enqueue(j, Math.max(0, scheduledMs(j)! - now))
  }

  /** Starts delivering queued jobs to this process's worker (idempotent). */
  async startWorkers(): Promise<void> {
    if (this.workersStarted) return
    this.workersStarted = true
    this.unsubscribeCancel = await this.store.onCancel((id) => {
      this.worker.abort(id, new JobFailure("CANCELLED", "job cancelled"))
    })
    await this.queue.start(this.worker.deliver, this.settings.limits.worker_concurrency)
  }

  private startSweeper(): void {
    const ms = Math.max(10, this.settings.limits.sweep_interval_s * 1000)
    let busy = false
    this.sweeper = setInterval(() => {
      if (busy) return
      busy = true
      this.sweeping = this.sweep().catch((e) => console.error(`[jobs] sweep: ${(e as Error)?.message ?? e}`)).finally(() => {
        busy = false
        this.sweeping = undefined
      })
    }, ms)
    this.sweeper.unref()
  }

  /**
   * Enforces QUEUE_TIMEOUT (QUEUED longer than the limit since runnable: FAILED, kind TIMEOUT) and
   * retention (terminal jobs older than `retention_s`: deleted with their files), and re-enqueues
   * QUEUED records runnable for over `ORPHAN_GRACE_MS` that the queue lost (a process died between
   * writing the record and enqueueing it). Safe to run in several processes at once. Resolves the
   * numbers of jobs timed out, purged and re-enqueued.
   */
  async sweep(now: number = Date.now()): Promise<{ timedOut: number; purged: number; requeued: number }> {
    const lim = this.settings.limits
    // Each record is checked about once: from where the last sweep stopped (with a margin for
    // clocks of other processes), and everything on this process's first sweep.
    const to = now - ORPHAN_GRACE_MS
    const from = this.orphansCheckedTo === -Infinity ? undefined : this.orphansCheckedTo - ORPHAN_GRACE_MS
    const requeued = await this.queue.ensure(await this.store.queuedBefore(to, from))
    this.orphansCheckedTo = to
    let timedOut = 0
    for (const j of await this.store.queuedBefore(now - lim.queue_timeout_s * 1000)) {
      const r = await this.store.update(j.job_id, (x) =>
        x.status === "QUEUED" && scheduledMs(x)! + lim.queue_timeout_s * 1000 < now ? queueTimedOut(x, nowIso(now), lim.queue_timeout_s) : undefined, j)
      if (r?.changed) {
        timedOut++
        await this.queue.remove(j)
      }
    }
    const old = await this.store.endedBefore(now - lim.retention_s * 1000)
    if (old.length > 0) {
      await this.files.delete(old.flatMap((j) => j.files ?? [])).catch(() => {})
      await this.store.delete(old.map((j) => j.job_id))
    }
    return { timedOut, purged: old.length, requeued }
  }

  /**
   * Accepts a job of `type`. `body` is the parsed JSON request body: the job type's payload plus an
   * optional top-level `retry_policy`. Valid: recorded QUEUED (history PENDING, QUEUED), enqueued,
   * and answered as `Accepted` with the record as created (status PENDING). Invalid payload or
   * policy: recorded FAILED with a VALIDATION_ERROR listing each field (`Invalid`). Unknown type:
   * nothing recorded (`UnknownType`). Rejects only when the store or queue fails.
   */
  async submit(type: string, body: unknown): Promise<Submitted> {
    const jt = this.lookup(type)
    if (!jt) return { _tag: "UnknownType", type }
    const nowMs = Date.now()
    const at = nowIso(nowMs)
    const lim = this.settings.limits
    let payload: unknown = body
    let policyInput: unknown = undefined
    if (body !== null && typeof body === "object" && !Array.isArray(body) && "retry_policy" in body) {
      const { retry_policy, ...rest } = body as Record<string, unknown>
      policyInput = retry_policy
      payload = rest
    }
    const problems: Array<string> = []
    const issues: Array<{ path: string; message: string }> = []
    const decoded = Schema.decodeUnknownEither(jt.payload)(payload, { errors: "all" })
    if (Either.isLeft(decoded)) {
      problems.push(formatIssues(decoded.left))
      issues.push(...issueList(decoded.left))
    }
    let policy: RetryPolicy = { max_retries: lim.max_retries, retry_on: lim.retry_on, no_retry_on: lim.no_retry_on }
    if (policyInput !== undefined) {
      const p = Schema.decodeUnknownEither(RetryPolicyInput)(policyInput, { errors: "all" })
      if (Either.isLeft(p)) {
        problems.push(formatIssues(p.left, "retry_policy"))
        issues.push(...issueList(p.left, "retry_policy"))
      }
      else policy = { ...policy, ...p.right }
    }
    const base: Job = {
      job_id: newJobId(nowMs),
      status: "PENDING",
      job_type: type,
      created_at: at,
      progress: 0,
      attempts: 0,
      max_retries: policy.max_retries,
      retry_policy: policy,
      history: [{ status: "PENDING", timestamp: at }],
      payload
    }
    if (problems.length > 0) {
      const error = `VALIDATION_ERROR: invalid payload: ${problems.join("; ")}`
      const failed: Job = {
        ...base,
        status: "FAILED",
        failed_at: at,
        duration_seconds: 0,
        error,
        error_kind: "VALIDATION_ERROR",
        error_details: { issues },
        history: [...base.history, { status: "FAILED", timestamp: at, error }]
      }
      await this.store.create(failed)
      return { _tag: "Invalid", job: failed }
    }
    // One write for PENDING and QUEUED: the record is never left PENDING by a crash between them.
    const queued: Job = { ...base, status: "QUEUED", scheduled_at: at, history: [...base.history, { status: "QUEUED", timestamp: at }] }
    if (this.queue.completionOrdered) {
      // Same connection: the enqueue executes after the record write, so it need not wait for
      // the write's reply (one round trip per submission instead of two).
      const created = this.store.create(queued)
      const enqueued = this.queue.enqueue(queued, 0).then(() => undefined, (e: unknown) => e)
      try {
        await created
      } catch (e) {
        // No record (an id clash, or Redis failing): drop the delivery so it cannot run unrecorded.
        await enqueued
        await this.queue.remove(queued)
        throw e
      }
      const failed = await enqueued
      if (failed !== undefined) await this.enqueueFailed(queued, failed)
      return { _tag: "Accepted", job: base }
    }
    await this.store.create(queued)
    try {
      await this.queue.enqueue(queued, 0)
    } catch (e) {
      await this.enqueueFailed(queued, e)
    }
    return { _tag: "Accepted", job: base }
  }

  /** Records a submission whose enqueue failed as FAILED (INTERNAL_ERROR), then rethrows `e`. */
  private async enqueueFailed(queued: Job, e: unknown): Promise<never> {
    await this.store.update(queued.job_id, (j) => j.status === "QUEUED"
      ? { ...j, status: "FAILED", failed_at: nowIso(), error: `INTERNAL_ERROR: could not enqueue: ${(e as Error).message}`, error_kind: "INTERNAL_ERROR", scheduled_at: undefined }
      : undefined)
    throw e
  }

  /** The record of `id`, or undefined. */
  get(id: string): Promise<Job | undefined> {
    return this.store.get(id)
  }

  /** A page of records, newest first, with the total number of matches. */
  list(q: ListQuery): Promise<ListPage> {
    return this.store.list(q)
  }

  /**
   * Cancels a PENDING, QUEUED or PROCESSING job: CANCELLED with `cancelled_at`; a running attempt,
   * in this or any worker process, has its signal aborted and its slot freed at once. A terminal
   * job is left as it is (`Terminal`).
   */
  async cancel(id: string): Promise<Cancelled> {
    let before: Job | undefined
    const r = await this.store.update(id, (j) => {
      if (isTerminal(j.status)) return undefined
      before = j
      const at = nowIso()
      return {
        ...j,
        status: "CANCELLED",
        cancelled_at: at,
        scheduled_at: undefined,
        worker: undefined,
        ...(j.started_at && j.status === "PROCESSING" ? { duration_seconds: secondsBetween(j.started_at, at) } : {}),
        history: [...j.history, { status: "CANCELLED", timestamp: at }]
      }
    })
    if (!r) return { _tag: "NotFound" }
    if (!r.changed) return { _tag: "Terminal", job: r.job }
    if (before?.status === "PROCESSING") await this.store.publishCancel(id)
    else if (before) await this.queue.remove(before)
    return { _tag: "Cancelled", job: r.job }
  }

  /**
   * Calls `listener` with the current record of `id` and then with every change until it is
   * terminal. Resolves an unsubscribe function; resolves undefined when the job does not exist.
   */
  async watch(id: string, listener: (job: Job) => void): Promise<(() => void) | undefined> {
    const unsubscribe = await this.store.onChange((j) => {
      if (j.job_id === id) listener(j)
    })
    const cur = await this.store.get(id)
    if (!cur) {
      unsubscribe()
      return undefined
    }
    listener(cur)
    return unsubscribe
  }

  /**
   * Stops the sweeper and workers. Running attempts are interrupted and put back to QUEUED (the
   * attempt counted) so another worker, or the next start, runs them; then connections close.
   */
  async close(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper)
    // Bounded: with Redis unreachable a sweep waits for it indefinitely.
    if (this.sweeping) {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([this.sweeping, new Promise((r) => (timer = setTimeout(r, 1_000)))])
      clearTimeout(timer)
    }
    this.worker.shutdown()
    this.unsubscribeCancel?.()
    await this.queue.close()
    await this.worker.drain()
    await this.store.close()
  }
}

/** Status values accepted by the list filter. */
export const STATUSES: ReadonlyArray<JobStatus> = ["PENDING", "QUEUED", "PROCESSING", "COMPLETED", "FAILED", "CANCELLED"]

