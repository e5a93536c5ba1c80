/**
 * Page loads with the same failure rules as the fetch layer: a 429 is retried after the
 * server's `Retry-After` (or an exponential backoff), other 4xx are `REMOTE_ERROR`, 5xx and
 * `net::ERR_*` are `NETWORK_ERROR`, a Playwright timeout is `TIMEOUT`.
 */
import type { Page } from "playwright-core"
import { JobFailure, retryAfterMs, sleep, statusFailure } from "../jobs/Contract.ts"

/** Backoff settings of page loads. */
export interface NavigateOptions {
  /** Navigation deadline per attempt, ms. */
  readonly timeoutMs: number
  readonly max429Retries: number
  readonly backoffBaseMs: number
  readonly backoffMaxMs: number
  /** Aborts the backoff waits (the page itself is aborted by closing its context). */
  readonly signal: AbortSignal
}

/**
 * Maps a Playwright error to a `JobFailure` for `what` (`"page http://…"`): timeouts are
 * `TIMEOUT`, `net::ERR_*` `NETWORK_ERROR`, a closed or crashed browser `INTERNAL_ERROR`
 * (retryable), anything else (a selector that fits nothing) `REMOTE_ERROR`. `JobFailure`s pass
 * through.
 */
export const playwrightFailure = (e: unknown, what: string): JobFailure => {
  if (e instanceof JobFailure) return e
  const err = e as Error
  const first = (err?.message ?? String(e)).split("\n")[0]!
  if (err?.name === "TimeoutError") return new JobFailure("TIMEOUT", `${what}: ${first}`)
  if (/net::ERR_/.test(first)) return new JobFailure("NETWORK_ERROR", `${what}: ${first}`)
  // Chromium died under the job: the pool relaunches it, so another attempt can succeed.
  if (/(page|context|browser) has been closed|browser has disconnected|Target crashed/i.test(first)) {
    return new JobFailure("INTERNAL_ERROR", `${what}: the browser went away (${first})`, true)
  }
  return new JobFailure("REMOTE_ERROR", `${what}: ${first}`, false)
}

/**
 * Loads `url` in `page` until `load`, retrying 429 answers. Resolves with the final HTTP status
 * (null for non-HTTP loads). Rejects with `JobFailure` as described in the module comment.
 */
export const gotoChecked = async (page: Page, url: string, o: NavigateOptions): Promise<number | null> => {
  for (let attempt = 1; ; attempt++) {
    let res
    try {
      res = await page.goto(url, { waitUntil: "load", timeout: o.timeoutMs })
    } catch (e) {
      throw playwrightFailure(e, `page ${url}`)
    }
    const status = res?.status() ?? null
    if (status === 429) {
      const asked = retryAfterMs((await res!.headerValue("retry-after")) ?? null)
      const wait = asked ?? Math.min(o.backoffMaxMs, o.backoffBaseMs * 2 ** (attempt - 1))
      if (attempt > o.max429Retries || wait > o.backoffMaxMs) throw statusFailure(429, `page ${url}`, `rate limited after ${attempt} attempts`)
      await sleep(wait, o.signal)
      continue
    }
    if (status !== null && status >= 400) throw statusFailure(status, `page ${url}`)
    return status
  }
}
