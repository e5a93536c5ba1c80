/**
 * The two sides of one running attempt that the worker keeps apart from its control flow: the
 * claim write (`Claim`: QUEUED to PROCESSING, possibly deferred and folded into the outcome's
 * write) and the abort side (`Aborter`: cancel, WORKER_TIMEOUT and shutdown reach the handler's
 * signal and free the slot at once), with the abort reasons as tagged errors.
 */
import * as Schema from "effect/Schema"
import type { JobFailure } from "../JobType.ts"
import type { Job } from "./Job.ts"

/** Abort reason of an attempt interrupted because its worker process is stopping. */
export class WorkerShutdown extends Schema.TaggedError<WorkerShutdown>()("WorkerShutdown", {}) {
  override get message(): string {
    return "worker shutting down"
  }
}

/** Abort reason of an attempt whose deferred claim did not take (cancelled or timed out while QUEUED). */
export class ClaimLost extends Schema.TaggedError<ClaimLost>()("ClaimLost", {}) {
  override get message(): string {
    return "job was cancelled or timed out before its claim was recorded"
  }
}

/**
 * A claim (QUEUED -> PROCESSING record) and its write. A deferred claim is written on the next turn
 * of the event loop unless `fold` takes it over first (the caller then writes the outcome over
 * `prev` itself); `write` forces it out. `onLost` runs when the write does not take.
 */
export class Claim {
  private written: Promise<boolean> | undefined
  private immediate: NodeJS.Immediate | undefined

  constructor(
    private readonly replace: ((prev: Job, next: Job) => Promise<boolean>) | undefined,
    /** The record the claim is written over (the delivery's snapshot). */
    readonly prev: Job,
    /** The PROCESSING record. */
    readonly job: Job,
    private readonly onLost: () => void
  ) {
    if (replace) this.immediate = setImmediate(() => void this.write().catch(() => {}))
  }

  /** A claim already recorded. */
  static written(job: Job): Claim {
    const c = new Claim(undefined, job, job, () => {})
    c.written = Promise.resolve(true)
    return c
  }

  /** Writes the claim if it is not written yet; resolves whether the stored record is the claim. */
  write(): Promise<boolean> {
    if (!this.written) {
      clearImmediate(this.immediate)
      this.written = this.replace!(this.prev, this.job).then((ok) => {
        if (!ok) this.onLost()
        return ok
      })
    }
    return this.written
  }

  /** True when the claim was not written yet: it never will be, the caller's write replaces it. */
  fold(): boolean {
    if (this.written) return false
    clearImmediate(this.immediate)
    this.written = Promise.resolve(true)
    return true
  }
}

/**
 * Why a running attempt's signal was aborted: a `JobFailure` of kind CANCELLED (DELETE) or
 * TIMEOUT (WORKER_TIMEOUT), or `WorkerShutdown`. Errors, so fetches rejecting with the reason
 * still throw an Error.
 */
export type AbortReason = JobFailure | WorkerShutdown | ClaimLost

/**
 * The abort side of one attempt. Its `AbortSignal` is made on first use: most handlers never read
 * `ctx.signal`, and an AbortController with its listeners costs more than a trivial job itself.
 * `race` settles with the handler's promise or rejects with the reason as soon as `abort` runs.
 */
export class Aborter {
  /** The reason given to `abort`; undefined while not aborted. */
  reason: AbortReason | undefined
  private controller: AbortController | undefined
  private onAbort: ((reason: AbortReason) => void) | undefined

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController()
      if (this.reason) this.controller.abort(this.reason)
    }
    return this.controller.signal
  }

  /** Aborts once; later calls are ignored. */
  abort(reason: AbortReason): void {
    if (this.reason) return
    this.reason = reason
    this.controller?.abort(reason)
    this.onAbort?.(reason)
  }

  /** Resolves/rejects with `p`, or rejects with the abort reason as soon as there is one. */
  race<A>(p: Promise<A>): Promise<A> {
    if (this.reason) {
      // The handler was already started; its own rejection must not go unhandled.
      p.catch(() => {})
      return Promise.reject(this.reason)
    }
    return new Promise<A>((resolve, reject) => {
      this.onAbort = reject
      p.then(resolve, reject)
    })
  }
}
