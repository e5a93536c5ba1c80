/**
 * One Chromium per worker process, a fresh context per job.
 *
 * Launching Chromium costs about half a second and a few hundred MB, so the browser is
 * launched on first use and kept (warm) for later jobs; isolation between jobs comes from
 * contexts (separate cookies, storage, cache, proxy), which cost milliseconds. A context is
 * closed on every path out of `withContext`: success, failure, and abort (cancel or timeout
 * closes it at once, which also rejects whatever Playwright call is pending). `close()` ends
 * the browser at platform shutdown.
 *
 * Every process of the browser carries `PLATFORM_JOB_BROWSER=<tag>` in its environment, so a
 * test (or an operator) can find orphans by scanning `/proc/<pid>/environ` even after a
 * crashed parent reparented them.
 */
import { randomBytes } from "node:crypto"
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions } from "playwright-core"
import { JobFailure } from "../../core/Contribution.ts"
import { abortFailure } from "../../core/net/Failure.ts"

/** The environment variable marking this pool's Chromium processes. */
export const TAG_ENV = "PLATFORM_JOB_BROWSER"

/** How to launch Chromium. */
export interface BrowserPoolOptions {
  readonly executablePath: string
  readonly args: ReadonlyArray<string>
  /** Launch deadline, ms. */
  readonly launchTimeoutMs: number
  /** Marks the processes (`TAG_ENV`); `<pid>-<random>` when absent. */
  readonly tag?: string
}

/** Chromium flags that keep a headless server browser quiet (ENVIRONMENT-NOTES.md). */
export const DEFAULT_ARGS: ReadonlyArray<string> = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"
]

/**
 * Rejects with `abortFailure(signal)` as soon as `signal` aborts, else settles like `p`.
 * `p` keeps running (used where the work is shared, like a launch).
 */
export const raceAbort = <T>(p: Promise<T>, signal: AbortSignal): Promise<T> => {
  if (signal.aborted) return Promise.reject(abortFailure(signal))
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortFailure(signal))
    signal.addEventListener("abort", onAbort, { once: true })
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort))
  })
}

export class BrowserPool {
  readonly tag: string
  private browser: Promise<Browser> | undefined
  private closed = false
  /** Launches so far (a relaunch follows a crashed or disconnected browser). */
  launches = 0
  /** Contexts currently open. */
  openContexts = 0

  constructor(readonly options: BrowserPoolOptions) {
    // The pid prefix lets a process find the Chromiums it started without knowing the pool.
    this.tag = options.tag ?? `${process.pid}-${randomBytes(6).toString("hex")}`
  }

  /** True when a connected browser is ready (the next job skips the launch). */
  get warm(): boolean {
    return this.current?.isConnected() ?? false
  }

  private current: Browser | undefined

  /**
   * The shared browser, launched on first call (and again after a disconnect). Errors:
   * `JobFailure` `INTERNAL_ERROR` when Chromium cannot start, or after `close()`.
   */
  async get(): Promise<Browser> {
    if (this.closed) throw new JobFailure("INTERNAL_ERROR", "the browser pool is closed (platform shutting down)", true)
    if (this.current && !this.current.isConnected()) {
      this.current = undefined
      this.browser = undefined
    }
    this.browser ??= this.launch()
    return this.browser
  }

  private async launch(): Promise<Browser> {
    this.launches++
    try {
      const b = await chromium.launch({
        executablePath: this.options.executablePath,
        args: [...this.options.args],
        headless: true,
        timeout: this.options.launchTimeoutMs,
        env: { ...process.env, [TAG_ENV]: this.tag }
      })
      if (this.closed) {
        await b.close().catch(() => undefined)
        throw new JobFailure("INTERNAL_ERROR", "the browser pool closed during launch", true)
      }
      this.current = b
      b.on("disconnected", () => {
        if (this.current === b) {
          this.current = undefined
          this.browser = undefined
        }
      })
      return b
    } catch (e) {
      this.browser = undefined
      if (e instanceof JobFailure) throw e
      throw new JobFailure("INTERNAL_ERROR", `Chromium failed to launch (${this.options.executablePath}): ${(e as Error).message.split("\n")[0]}`, true)
    }
  }

  /**
   * Runs `fn` in a fresh context created with `options`, closing the context on every path.
   * When `signal` aborts the context is closed at once and the call rejects with
   * `abortFailure(signal)` (`CANCELLED` or `TIMEOUT`), whatever `fn` was doing.
   */
  async withContext<T>(options: BrowserContextOptions, signal: AbortSignal, fn: (ctx: BrowserContext) => Promise<T>): Promise<T> {
    const browser = await raceAbort(this.get(), signal)
    const context = await raceAbort(browser.newContext(options), signal).catch(async (e) => {
      throw e instanceof JobFailure ? e : new JobFailure("INTERNAL_ERROR", `browser context failed: ${(e as Error).message}`, true)
    })
    this.openContexts++
    let closing: Promise<void> | undefined
    const close = () => (closing ??= context.close().catch(() => undefined).finally(() => { this.openContexts-- }))
    const onAbort = () => void close()
    signal.addEventListener("abort", onAbort, { once: true })
    try {
      if (signal.aborted) throw abortFailure(signal)
      return await fn(context)
    } catch (e) {
      // Whatever Playwright said after an abort ("context closed") is a consequence, not the cause.
      if (signal.aborted) throw abortFailure(signal)
      throw e
    } finally {
      signal.removeEventListener("abort", onAbort)
      await close()
    }
  }

  /** Closes the browser (idempotent); later `get()` calls fail. */
  async close(): Promise<void> {
    this.closed = true
    const b = this.browser
    this.browser = undefined
    this.current = undefined
    if (b) await b.then((x) => x.close(), () => undefined).catch(() => undefined)
  }
}
