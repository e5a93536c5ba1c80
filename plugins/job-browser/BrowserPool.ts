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
 * A job never waits on Playwright after an abort: closing a context in the middle of a
 * navigation sometimes leaves that navigation's promise pending for good (seen with
 * playwright-core 1.65 and Chromium 156), so `withContext` settles on the abort itself and lets
 * the abandoned work finish, or not, in the background. A context or browser that does not
 * close within `closeTimeoutMs` is treated as wedged: the browser is retired (the next job
 * launches a fresh one) and its processes are killed.
 *
 * Every process of a launch carries `PLATFORM_JOB_BROWSER=<pool tag>.<launch number>` in its
 * environment; retiring a browser SIGKILLs exactly the processes with its tag (found through
 * `/proc/<pid>/environ`, which also finds helpers reparented after a crash), so no Chromium
 * outlives its pool and no process of anyone else is touched.
 */
import { randomBytes } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions } from "playwright-core"
import { abortFailure, JobFailure } from "../jobs/Contract.ts"
import { DEFAULT_ARGS, LOOPBACK_TOO } from "./Chromium.ts"

export { DEFAULT_ARGS, LOOPBACK_TOO }

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
  /** How long a context or browser close may take before it counts as wedged, ms; default 5000. */
  readonly closeTimeoutMs?: number
}

/**
 * Pids of live processes whose environment holds `TAG_ENV=<tag>` exactly, or any value
 * starting with `tag` when `prefix`. Linux `/proc`; empty elsewhere.
 */
export const taggedProcesses = (tag: string, prefix = false): number[] => {
  const needle = `${TAG_ENV}=${tag}${prefix ? "" : "\0"}`
  const out: number[] = []
  let entries: string[] = []
  try {
    entries = readdirSync("/proc")
  } catch {
    return out
  }
  for (const d of entries) {
    if (!/^\d+$/.test(d)) continue
    try {
      if (readFileSync(`/proc/${d}/environ`, "latin1").includes(needle)) out.push(Number(d))
    } catch {
      // exited meanwhile, or not ours to read
    }
  }
  return out
}

/** SIGKILLs the processes carrying `TAG_ENV=<tag>` (one launch of one pool); returns their pids. */
export const killTagged = (tag: string): number[] => {
  const pids = taggedProcesses(tag)
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      // already gone
    }
  }
  return pids
}

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

/**
 * Resolves `true` once `p` settles (either way), `false` after `ms` milliseconds if it has not;
 * the timer is cleared either way, so a quick close leaves nothing pending.
 */
export const settlesWithin = (p: Promise<unknown>, ms: number): Promise<boolean> =>
  new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms)
    p.then(() => true, () => true).then(() => {
      clearTimeout(timer)
      resolve(true)
    })
  })

/** The browser of one worker process: `withContext` per job, `close` at shutdown. */
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
  /** The tag of each launched browser, for retiring it. */
  private readonly tags = new WeakMap<Browser, string>()

  private get closeTimeoutMs(): number {
    return this.options.closeTimeoutMs ?? 5_000
  }

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
    const tag = `${this.tag}.${this.launches}`
    try {
      const b = await chromium.launch({
        executablePath: this.options.executablePath,
        args: [...this.options.args],
        headless: true,
        timeout: this.options.launchTimeoutMs,
        env: { ...process.env, [TAG_ENV]: tag }
      })
      this.tags.set(b, tag)
      if (this.closed) {
        await this.retire(b)
        throw new JobFailure("INTERNAL_ERROR", "the browser pool closed during launch", true)
      }
      this.current = b
      b.on("disconnected", () => {
        if (this.current === b) {
          this.current = undefined
          this.browser = undefined
        }
        // A crashed browser may leave helpers behind; they carry this launch's tag only.
        killTagged(tag)
      })
      return b
    } catch (e) {
      this.browser = undefined
      killTagged(tag) // a launch that timed out may have left a half-started Chromium
      if (e instanceof JobFailure) throw e
      throw new JobFailure("INTERNAL_ERROR", `Chromium failed to launch (${this.options.executablePath}): ${(e as Error).message.split("\n")[0]}`, true)
    }
  }

  /**
   * Runs `fn` in a fresh context created with `options`, closing the context on every path.
   * When `signal` aborts, the context is closed and the call rejects at once with
   * `abortFailure(signal)` (`CANCELLED` or `TIMEOUT`), whatever `fn` was doing.
   */
  async withContext<T>(options: BrowserContextOptions, signal: AbortSignal, fn: (ctx: BrowserContext) => Promise<T>): Promise<T> {
    const browser = await raceAbort(this.get(), signal)
    const creating = browser.newContext(options)
    let context: BrowserContext
    try {
      context = await raceAbort(creating, signal)
    } catch (e) {
      // Aborted while the context was being made: close it when it arrives.
      creating.then((c) => c.close().catch(() => undefined), () => undefined)
      throw e instanceof JobFailure ? e : new JobFailure("INTERNAL_ERROR", `browser context failed: ${(e as Error).message}`, true)
    }
    this.openContexts++
    let closing: Promise<boolean> | undefined
    const close = () =>
      (closing ??= settlesWithin(context.close(), this.closeTimeoutMs).then((ok) => {
        this.openContexts--
        // A context that will not close means a wedged browser: replace it.
        if (!ok) void this.retire(browser)
        return ok
      }))
    let onAbort = () => {}
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => {
        void close()
        reject(abortFailure(signal))
      }
    })
    aborted.catch(() => undefined)
    signal.addEventListener("abort", onAbort, { once: true })
    try {
      if (signal.aborted) throw abortFailure(signal)
      const work = fn(context)
      // After an abort nobody awaits `work`; it may still reject (or never settle).
      work.catch(() => undefined)
      return await Promise.race([work, aborted])
    } catch (e) {
      // Whatever Playwright said after an abort ("context closed") is a consequence, not the cause.
      if (signal.aborted) throw abortFailure(signal)
      throw e
    } finally {
      signal.removeEventListener("abort", onAbort)
      await close()
    }
  }

  /**
   * Closes `browser` (bounded by `closeTimeoutMs`), then kills whatever is left of its
   * processes; the next `get()` launches a new browser.
   */
  private async retire(browser: Browser): Promise<void> {
    if (this.current === browser) {
      this.current = undefined
      this.browser = undefined
    }
    await settlesWithin(browser.close(), this.closeTimeoutMs)
    const tag = this.tags.get(browser)
    if (tag) killTagged(tag)
  }

  /** Closes the browser and kills any process it leaves (idempotent); later `get()` calls fail. */
  async close(): Promise<void> {
    this.closed = true
    const b = this.browser
    this.browser = undefined
    this.current = undefined
    const browser = await b?.catch(() => undefined)
    if (browser) await this.retire(browser)
  }
}
