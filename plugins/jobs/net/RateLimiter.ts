/**
 * A token-bucket rate limiter shared by every job of one source in a worker process.
 *
 * Archive sources publish request budgets (the Wayback CDX server answers 429 and then blocks
 * an address that keeps going past about 60 requests a minute); spacing requests ourselves is
 * cheaper than being throttled. The bucket starts full so a short burst (`burst` requests) goes
 * out at once, then refills at `perMinute / 60` tokens per second. The bucket is Effect's
 * `RateLimiter` (token-bucket algorithm); this class gives the jobs' Promise code its turns.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as EffectRateLimiter from "effect/RateLimiter"
import * as Scope from "effect/Scope"
import { abortFailure } from "./Failure.ts"

/** Options of a limiter: `perMinute` > 0 requests a minute, `burst` >= 1 (default 1). */
export interface RateLimiterOptions {
  readonly perMinute: number
  readonly burst?: number
}

/** A token bucket: `acquire()` before each request of one source; waiters are served in turn. */
export class RateLimiter {
  readonly perMinute: number
  readonly burst: number
  private readonly limit: EffectRateLimiter.RateLimiter

  constructor(opts: RateLimiterOptions) {
    if (!(opts.perMinute > 0)) throw new RangeError(`perMinute must be > 0, got ${opts.perMinute}`)
    this.perMinute = opts.perMinute
    this.burst = Math.max(1, Math.floor(opts.burst ?? 1))
    // `burst` tokens refilled over burst × (60 s / perMinute): one token per 60 s / perMinute.
    // The refill fiber lives as long as the limiter (a limiter is kept for the process's life).
    this.limit = Effect.runSync(
      Scope.extend(
        EffectRateLimiter.make({ limit: this.burst, interval: Duration.millis((this.burst * 60_000) / this.perMinute), algorithm: "token-bucket" }),
        Effect.runSync(Scope.make())
      )
    )
  }

  /**
   * Resolves when one request may go out. Rejects with the abort failure of `signal`
   * (`JobFailure` CANCELLED or TIMEOUT) if it is aborted while waiting; the token is not spent.
   */
  acquire(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortFailure(signal))
    return Effect.runPromise(this.limit(Effect.void), signal ? { signal } : undefined).catch((e) => {
      throw signal?.aborted ? abortFailure(signal) : e
    })
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
