/**
 * The jobs runtime as a service: `JobsRuntime` ties the job store, the queue, this process's
 * worker and the file store together. The HTTP layer (`Http.ts`) and the `jobs` plugin talk only
 * to it.
 *
 * `layer(options)` builds it over the `JobStore` and `JobQueue` services (`Backend.ts`): on the
 * embedded backend it first recovers what a dead process left (PROCESSING back to QUEUED, the
 * attempt counted; PENDING enqueued), then runs the sweeper (queue timeouts, retention, lost
 * queue entries) every `sweep_interval_s` on a scoped fiber. Workers start with `startWorkers`
 * (the plugin calls it once every plugin registered its job types). Closing the layer's scope
 * stops the sweeper, aborts running attempts (they go back to QUEUED for another worker or the
 * next start), closes the queue, waits for the final record writes, then closes the store.
 *
 * Every operation fails with `JobStoreUnavailable` (503) when the store or queue does not answer.
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { JobFailure } from "../JobType.ts"
import * as Backend from "./Backend.ts"
import { formatIssues, issueList } from "./Classify.ts"
import type { FileStore } from "./FileStore.ts"
import { isTerminal, type Job, type JobStatus, newJobId, nowIso, type RetryPolicy, RetryPolicyInput, secondsBetween } from "./Job.ts"
import { type ListPage, type ListQuery, scheduledMs } from "./JobStore.ts"
import type { JobsSettings } from "./Settings.ts"
import { lostAttempt, queueTimedOut } from "./Transitions.ts"
import { type JobTypeLookup, JobWorker } from "./Worker.ts"

/** How long a runnable QUEUED record may lack a queue entry before the sweeper re-enqueues it (ms). */
export const ORPHAN_GRACE_MS = 2_000

/** The store or queue did not answer (Redis down, the log unwritable): 503, nothing was changed by this call. */
export class JobStoreUnavailable extends Schema.TaggedError<JobStoreUnavailable>()(
  "JobStoreUnavailable",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 503 })
) {
  static of(cause: unknown): JobStoreUnavailable {
    return new JobStoreUnavailable({ message: `jobs store unavailable: ${(cause as Error)?.message ?? cause}` })
  }
}

/** Everything the runtime needs besides its backend services; see `layer`. */
export interface RuntimeOptions {
  readonly settings: JobsSettings
  readonly lookup: JobTypeLookup
  readonly files: FileStore
  /** Worker name in history entries; default `<host>:<pid>`. */
  readonly workerName?: string
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

/** What one sweep did: jobs failed for QUEUE_TIMEOUT, purged by retention, re-enqueued. */
export interface Swept {
  readonly timedOut: number
  readonly purged: number
  readonly requeued: number
}

/** The runtime's operations (see the module comment). */
export interface JobsRuntimeShape {
  readonly settings: JobsSettings
  /**
   * Accepts a job of `type`. `body` is the parsed JSON request body: the job type's payload plus an
   * optional top-level `retry_policy`. Valid: recorded QUEUED (history PENDING, QUEUED), enqueued,
   * and answered as `Accepted` with the record as created (status PENDING). Invalid payload or
   * policy: recorded FAILED with a VALIDATION_ERROR listing each field (`Invalid`). Unknown type:
   * nothing recorded (`UnknownType`).
   */
  readonly submit: (type: string, body: unknown) => Effect.Effect<Submitted, JobStoreUnavailable>
  /**
   * `submit` without a fiber, for the raw submit route (the hot path `npm run bench -- jobs`
   * floods): rejects where `submit` fails. The same code: `submit` runs this.
   */
  readonly submitNow: (type: string, body: unknown) => Promise<Submitted>
  /** The record of `id`, or undefined. */
  readonly get: (id: string) => Effect.Effect<Job | undefined, JobStoreUnavailable>
  /** A page of records, newest first, with the total number of matches. */
  readonly list: (q: ListQuery) => Effect.Effect<ListPage, JobStoreUnavailable>
  /**
   * Cancels a PENDING, QUEUED or PROCESSING job: CANCELLED with `cancelled_at`; a running attempt,
   * in this or any worker process, has its signal aborted and its slot freed at once. A terminal
   * job is left as it is (`Terminal`).
   */
  readonly cancel: (id: string) => Effect.Effect<Cancelled, JobStoreUnavailable>
  /**
   * Calls `listener` with the current record of `id` and then with every change until it is
   * terminal. Succeeds with an unsubscribe function, or undefined when the job does not exist.
   */
  readonly watch: (id: string, listener: (job: Job) => void) => Effect.Effect<(() => void) | undefined, JobStoreUnavailable>
  /**
   * Enforces QUEUE_TIMEOUT (QUEUED longer than the limit since runnable: FAILED, kind TIMEOUT) and
   * retention (terminal jobs older than `retention_s`: deleted with their files), and re-enqueues
   * QUEUED records runnable for over `ORPHAN_GRACE_MS` that the queue lost (a process died between
   * writing the record and enqueueing it). Safe to run in several processes at once. `now` in epoch ms.
   */
  readonly sweep: (now?: number) => Effect.Effect<Swept, JobStoreUnavailable>
  /** Starts delivering queued jobs to this process's worker (idempotent). */
  readonly startWorkers: Effect.Effect<void, JobStoreUnavailable>
}

/** The runtime of this process. */
export class JobsRuntime extends Context.Tag("@platform/jobs/JobsRuntime")<JobsRuntime, JobsRuntimeShape>() {}

/** A store or queue call as an effect failing with `JobStoreUnavailable`. */
const call = <A>(f: () => Promise<A>): Effect.Effect<A, JobStoreUnavailable> =>
  Effect.tryPromise({ try: f, catch: JobStoreUnavailable.of })

/** Builds the runtime in the current scope (see the module comment). */
export const make = (opts: RuntimeOptions): Effect.Effect<JobsRuntimeShape, JobStoreUnavailable, Backend.JobStore | Backend.JobQueue | Scope.Scope> =>
  Effect.gen(function*() {
    const store = yield* Backend.JobStore
    const queue = yield* Backend.JobQueue
    const settings = opts.settings
    const limits = settings.limits
    const worker = new JobWorker(store, queue, opts.lookup, opts.files, limits, opts.workerName)
    let unsubscribeCancel: (() => void) | undefined
    let workersStarted = false
    /** Records runnable before this time were already checked for a lost queue entry. */
    let orphansCheckedTo = -Infinity

    const recover = call(async () => {
      const now = Date.now()
      const queued: Array<Job> = []
      for (const j of await store.active()) {
        let job: Job | undefined = j
        if (j.status === "PROCESSING") {
          job = (await store.update(j.job_id, (x) => (x.status === "PROCESSING" ? lostAttempt(x, now) : undefined)))?.job
        } else if (j.status === "PENDING") {
          // Created but never enqueued (crash between the two): enqueue it now.
          job = (await store.update(j.job_id, (x) => {
            if (x.status !== "PENDING") return undefined
            const at = nowIso(now)
            return { ...x, status: "QUEUED", scheduled_at: at, history: [...x.history, { status: "QUEUED", timestamp: at }] }
          }))?.job
        }
        if (job?.status === "QUEUED") queued.push(job)
      }
      queued.sort((a, b) => scheduledMs(a)! - scheduledMs(b)!)
      for (const j of queued) await queue.enqueue(j, Math.max(0, scheduledMs(j)! - now))
    })

    const sweepNow = async (now: number): Promise<Swept> => {
      // Each record is checked about once: from where the last sweep stopped (with a margin for
      // clocks of other processes), and everything on this process's first sweep.
      const to = now - ORPHAN_GRACE_MS
      const from = orphansCheckedTo === -Infinity ? undefined : orphansCheckedTo - ORPHAN_GRACE_MS
      const requeued = await queue.ensure(await store.queuedBefore(to, from))
      orphansCheckedTo = to
      let timedOut = 0
      for (const j of await store.queuedBefore(now - limits.queue_timeout_s * 1000)) {
        const r = await store.update(j.job_id, (x) =>
          x.status === "QUEUED" && scheduledMs(x)! + limits.queue_timeout_s * 1000 < now ? queueTimedOut(x, nowIso(now), limits.queue_timeout_s) : undefined, j)
        if (r?.changed) {
          timedOut++
          await queue.remove(j)
        }
      }
      const old = await store.endedBefore(now - limits.retention_s * 1000)
      if (old.length > 0) {
        await opts.files.delete(old.flatMap((j) => j.files ?? [])).catch(() => {})
        await store.delete(old.map((j) => j.job_id))
      }
      return { timedOut, purged: old.length, requeued }
    }
    const sweep = (now: number = Date.now()) => call(() => sweepNow(now))

    /** Records a submission whose enqueue failed as FAILED (INTERNAL_ERROR), then rethrows `e`. */
    const enqueueFailed = async (queued: Job, e: unknown): Promise<never> => {
      await store.update(queued.job_id, (j) => j.status === "QUEUED"
        ? { ...j, status: "FAILED", failed_at: nowIso(), error: `INTERNAL_ERROR: could not enqueue: ${(e as Error).message}`, error_kind: "INTERNAL_ERROR", scheduled_at: undefined }
        : undefined)
      throw e
    }

    /** The record write and enqueue of a valid submission (`queued`), as few round trips as the backend allows. */
    const accept = async (queued: Job): Promise<void> => {
      if (queue.completionOrdered) {
        // Same connection: the enqueue executes after the record write, so it need not wait for
        // the write's reply (one round trip per submission instead of two).
        const created = store.create(queued)
        const enqueued = queue.enqueue(queued, 0).then(() => undefined, (e: unknown) => e)
        try {
          await created
        } catch (e) {
          // No record (an id clash, or Redis failing): drop the delivery so it cannot run unrecorded.
          await enqueued
          await queue.remove(queued)
          throw e
        }
        const failed = await enqueued
        if (failed !== undefined) await enqueueFailed(queued, failed)
        return
      }
      await store.create(queued)
      try {
        await queue.enqueue(queued, 0)
      } catch (e) {
        await enqueueFailed(queued, e)
      }
    }

    const submitNow = (type: string, body: unknown): Promise<Submitted> => {
      const jt = opts.lookup(type)
      if (!jt) return Promise.resolve({ _tag: "UnknownType", type } as const)
      const nowMs = Date.now()
      const at = nowIso(nowMs)
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
      let policy: RetryPolicy = { max_retries: limits.max_retries, retry_on: limits.retry_on, no_retry_on: limits.no_retry_on }
      if (policyInput !== undefined) {
        const p = Schema.decodeUnknownEither(RetryPolicyInput)(policyInput, { errors: "all" })
        if (Either.isLeft(p)) {
          problems.push(formatIssues(p.left, "retry_policy"))
          issues.push(...issueList(p.left, "retry_policy"))
        } else policy = { ...policy, ...p.right }
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
        return store.create(failed).then(() => ({ _tag: "Invalid", job: failed } as const))
      }
      // One write for PENDING and QUEUED: the record is never left PENDING by a crash between them.
      const queued: Job = { ...base, status: "QUEUED", scheduled_at: at, history: [...base.history, { status: "QUEUED", timestamp: at }] }
      return accept(queued).then(() => ({ _tag: "Accepted", job: base } as const))
    }
    const submit = (type: string, body: unknown) => call(() => submitNow(type, body))

    const cancel = (id: string): Effect.Effect<Cancelled, JobStoreUnavailable> =>
      call(async () => {
        let before: Job | undefined
        const r = await store.update(id, (j) => {
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
        if (!r) return { _tag: "NotFound" } as const
        if (!r.changed) return { _tag: "Terminal", job: r.job } as const
        if (before?.status === "PROCESSING") await store.publishCancel(id)
        else if (before) await queue.remove(before)
        return { _tag: "Cancelled", job: r.job } as const
      })

    const watch = (id: string, listener: (job: Job) => void) =>
      call(async () => {
        const unsubscribe = await store.onChange((j) => {
          if (j.job_id === id) listener(j)
        })
        const cur = await store.get(id)
        if (!cur) {
          unsubscribe()
          return undefined
        }
        listener(cur)
        return unsubscribe
      })

    const startWorkers = Effect.suspend(() => {
      if (workersStarted) return Effect.void
      workersStarted = true
      return call(async () => {
        unsubscribeCancel = await store.onCancel((id) => {
          worker.abort(id, new JobFailure("CANCELLED", "job cancelled"))
        })
        await queue.start(worker.deliver, limits.worker_concurrency)
      })
    })

    if (settings.backend === "embedded") yield* recover
    // The sweeper: one sweep every interval after the previous one ended, a failure logged and
    // the next sweep tried on schedule.
    const interval = Duration.millis(Math.max(10, limits.sweep_interval_s * 1000))
    let sweeping: Promise<unknown> | undefined
    const sweepOnce = Effect.suspend(() => {
      const p = sweepNow(Date.now())
      sweeping = p
      return call(() => p)
    }).pipe(
      Effect.catchAll((e) => Effect.logError(`[jobs] sweep: ${e.message}`)),
      Effect.ensuring(Effect.sync(() => (sweeping = undefined)))
    )
    const sweeper = yield* Effect.forkDaemon(Effect.delay(Effect.repeat(sweepOnce, Schedule.spaced(interval)), interval))

    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        yield* Fiber.interrupt(sweeper)
        // A sweep in flight keeps running on the connections: wait for it, bounded (with Redis
        // unreachable it would wait for Redis indefinitely).
        const inFlight = sweeping
        if (inFlight) yield* Effect.timeout(Effect.promise(() => inFlight), "1 second").pipe(Effect.ignore)
        worker.shutdown()
        unsubscribeCancel?.()
        yield* Effect.promise(() => queue.close())
        yield* Effect.promise(() => worker.drain())
        yield* Effect.promise(() => store.close())
      })
    )

    return {
      settings,
      submit,
      submitNow,
      get: (id) => call(() => store.get(id)),
      list: (q) => call(() => store.list(q)),
      cancel,
      watch,
      sweep,
      startWorkers
    } satisfies JobsRuntimeShape
  })

/** The runtime over the `JobStore` and `JobQueue` in context. */
export const layer = (opts: RuntimeOptions): Layer.Layer<JobsRuntime, JobStoreUnavailable, Backend.JobStore | Backend.JobQueue> =>
  Layer.scoped(JobsRuntime, make(opts))

/**
 * The runtime over the backend `settings.backend` names (the embedded one under `dataDir`), with
 * workers started when `startWorkers` is true. Fails with `JobStoreUnavailable` when the store
 * cannot be opened (unreadable directory, Redis not answering within 5 s).
 */
export const layerBackend = (opts: RuntimeOptions & { readonly dataDir: string; readonly startWorkers?: boolean }): Layer.Layer<JobsRuntime, JobStoreUnavailable> => {
  const runtime = layer(opts).pipe(Layer.provide(Layer.mapError(Backend.layer(opts.settings, opts.dataDir), JobStoreUnavailable.of)))
  return opts.startWorkers
    ? Layer.effect(JobsRuntime, Effect.tap(JobsRuntime, (rt) => rt.startWorkers)).pipe(Layer.provide(runtime))
    : runtime
}

/** Status values accepted by the list filter. */
export const STATUSES: ReadonlyArray<JobStatus> = ["PENDING", "QUEUED", "PROCESSING", "COMPLETED", "FAILED", "CANCELLED"]
