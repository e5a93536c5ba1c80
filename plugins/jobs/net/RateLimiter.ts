/**
 * A token-bucket rate limiter shared by every job of one source in a worker process.
 *
 * Archive sources publish request budgets (the Wayback CDX server answers 429 and then blocks
 * an address that keeps going past about 60 requests a minute); spacing requests ourselves is
 * cheaper than being throttled. The bucket starts full so a short burst (`burst` requests) goes
 * out at once, then refills at `perMinute / 60` tokens per second.
 */
import { abortFailure } from "./Failure.ts"

/** Options of a limiter: `perMinute` > 0 requests a minute, `burst` >= 1 (default 1). */
export interface RateLimiterOptions {
  readonly perMinute: number
  readonly burst?: number
}

/** A FIFO token bucket: `acquire()` before each request of one source. */
export class RateLimiter {
  private tokens: number
  private last: number
  /** Waiters in arrival order, so a slow job cannot be starved by later ones. */
  private queue: Promise<void> = Promise.resolve()
  readonly perMinute: number
  readonly burst: number

  constructor(opts: RateLimiterOptions) {
    if (!(opts.perMinute > 0)) throw new RangeError(`perMinute must be > 0, got ${opts.perMinute}`)
    this.perMinute = opts.perMinute
    this.burst = Math.max(1, Math.floor(opts.burst ?? 1))
    this.tokens = this.burst
    this.last = Date.now()
  }

  /**
   * Resolves when one request may go out (FIFO). Rejects with the abort failure of `signal`
   * (`JobFailure` CANCELLED or TIMEOUT) if it is aborted while waiting; the token is not spent.
   */
  acquire(signal?: AbortSignal): Promise<void> {
    const turn = this.queue.then(() => this.take(signal))
    // The chain must survive a rejected waiter, or one cancelled job would wedge the source.
    this.queue = turn.catch(() => undefined)
    return turn
  }

  /** Milliseconds until the next token, 0 when one is available now. */
  waitMs(): number {
    this.refill()
    return this.tokens >= 1 ? 0 : Math.ceil(((1 - this.tokens) * 60_000) / this.perMinute)
  }

  private refill(): void {
    const now = Date.now()
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) * this.perMinute) / 60_000)
    this.last = now
  }

  private async take(signal?: AbortSignal): Promise<void> {
    for (;;) {
      if (signal?.aborted) throw abortFailure(signal)
      const wait = this.waitMs()
      if (wait === 0) {
        this.tokens -= 1
        return
      }
      await sleep(wait, signal)
    }
  }
}

/**
 * Resolves after `ms` milliseconds; rejects with `abortFailure(signal)` as soon as `signal`
 * aborts (the timer is cleared, so a cancelled job leaves no pending timer behind).
 */
export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortFailure(signal))
    const onAbort = () => {
      clearTimeout(timer)
      reject(abortFailure(signal!))
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort)
      resolve()
    }, Math.max(0, ms))
    signal?.addEventListener("abort", onAbort, { once: true })
  })
