/**
 * The `browser` job type (research-jobs spec, "browser"): a scripted session in a fresh context.
 *
 * The page first loads `url`, then runs `actions` in order. The job's `timeout` (ms, default
 * 30000) bounds the whole script, initial load included (a cold browser's launch is not
 * counted): every Playwright call gets the time left as its timeout, and when it runs out the
 * context is closed and the job fails `TIMEOUT` naming the step it was in.
 *
 * `extracted_data` is keyed by the `extract_text` action's `selector`, exactly as written; the
 * value is the rendered text (`innerText`, trimmed) of the first element matching it. Extracting
 * the same selector twice keeps the later text. Each `screenshot` action stores a PNG of the
 * viewport (or the full page with `full_page: true`) and adds `{action_index, file_url, width,
 * height}` to `screenshots`.
 *
 * A failing action fails the job with a message naming it: `actions[3] (click) failed: …`
 * (0-based index into `actions`, then its type); the kind follows the cause (TIMEOUT,
 * NETWORK_ERROR, REMOTE_ERROR for an HTTP error page or an element that does not fit the action).
 */
import * as Schema from "effect/Schema"
import type { Page } from "playwright-core"
import { abortFailure, DeadlineExceeded, type GeoResolver, JobFailure, type JobType, sleep, GeoField } from "../jobs/Contract.ts"
import type { BrowserPool } from "./BrowserPool.ts"
import { LOOPBACK_TOO } from "./Chromium.ts"
import { imageDimensions } from "./Image.ts"
import { gotoChecked, playwrightFailure } from "./Navigate.ts"
import { type BrowserJobSettings, HttpUrl } from "./Screenshot.ts"

const Selector = Schema.String.pipe(Schema.minLength(1), Schema.annotations({ description: "Playwright selector (CSS by default; `text=`, `xpath=` prefixes work)" }))

/** One action; `type` selects the parameters (spec table). */
export const Action = Schema.Union(
  Schema.Struct({ type: Schema.Literal("navigate"), url: Schema.String.pipe(Schema.minLength(1)).annotations({ description: "absolute, or relative to the current page" }) }),
  Schema.Struct({ type: Schema.Literal("click"), selector: Selector }),
  Schema.Struct({ type: Schema.Literal("fill"), selector: Selector, value: Schema.String }),
  Schema.Struct({ type: Schema.Literal("select"), selector: Selector, value: Schema.String.annotations({ description: "option value (or label)" }) }),
  Schema.Struct({ type: Schema.Literal("wait"), ms: Schema.Int.pipe(Schema.between(0, 3_600_000)) }),
  Schema.Struct({ type: Schema.Literal("wait_for_element"), selector: Selector }),
  Schema.Struct({ type: Schema.Literal("extract_text"), selector: Selector }),
  Schema.Struct({ type: Schema.Literal("screenshot"), full_page: Schema.optionalWith(Schema.Boolean, { default: () => false }) })
).annotations({ identifier: "BrowserAction" })
export type Action = typeof Action.Type

/** The browser payload (spec). */
export const BrowserPayload = Schema.Struct({
  url: HttpUrl,
  actions: Schema.Array(Action).pipe(Schema.maxItems(500)),
  timeout: Schema.optionalWith(Schema.Int.pipe(Schema.between(100, 3_600_000)), { default: () => 30_000 }).annotations({ description: "ms for the whole script" }),
  geo: Schema.optionalWith(GeoField, { default: () => null })
}).annotations({ identifier: "BrowserPayload" })
export type BrowserPayload = typeof BrowserPayload.Type

/** The browser result: the spec's fields plus `screenshots` (stored by `screenshot` actions). */
export const BrowserResult = Schema.Struct({
  success: Schema.Boolean,
  actions_executed: Schema.Int,
  extracted_data: Schema.Record({ key: Schema.String, value: Schema.String }),
  final_url: Schema.String,
  screenshots: Schema.Array(Schema.Struct({ action_index: Schema.Int, file_url: Schema.String, width: Schema.Int, height: Schema.Int }))
}).annotations({ identifier: "BrowserResult" })
export type BrowserResult = typeof BrowserResult.Type

/** Builds the `browser` job type. */
export const browserJob = (pool: BrowserPool, geo: GeoResolver, s: BrowserJobSettings): JobType<BrowserPayload, BrowserResult> => ({
  id: "browser",
  description: "Runs a scripted browser session (navigate, click, fill, select, wait, wait_for_element, extract_text, screenshot) in headless Chromium.",
  payload: BrowserPayload,
  result: BrowserResult,
  handler: async (p, ctx) => {
    const route = await geo.resolve(p.geo, ctx.signal)
    await ctx.progress(1, `loading ${p.url}`)
    // The clock starts once the context is ready: a cold browser's launch (bounded by
    // launch_timeout_ms) is not the script's time.
    let deadline = Number.POSITIVE_INFINITY
    let t: ReturnType<typeof setTimeout> | undefined
    const timer = new AbortController()
    const signal = AbortSignal.any([ctx.signal, timer.signal])
    const left = () => Math.max(1, deadline - Date.now())
    let step = "initial navigation"
    try {
      return await pool.withContext(
        { viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1, ...(route.kind === "proxy" ? { proxy: { server: route.proxyUrl, bypass: LOOPBACK_TOO } } : {}) },
        signal,
        async (context) => {
          deadline = Date.now() + p.timeout
          t = setTimeout(() => timer.abort(new DeadlineExceeded(p.timeout, "browser script")), p.timeout)
          const page = await context.newPage()
          const nav = (url: string) =>
            gotoChecked(page, url, { timeoutMs: left(), max429Retries: s.max429Retries, backoffBaseMs: s.backoffBaseMs, backoffMaxMs: s.backoffMaxMs, signal })
          await nav(p.url)
          const extracted: Record<string, string> = {}
          const shots: Array<BrowserResult["screenshots"][number]> = []
          for (const [i, a] of p.actions.entries()) {
            step = `actions[${i}] (${a.type})`
            page.setDefaultTimeout(left())
            await runAction(page, a, i, { nav, extracted, shots, signal, files: ctx.files, left, elementTimeoutMs: s.elementTimeoutMs })
            await ctx.progress(Math.round((100 * (i + 1)) / Math.max(1, p.actions.length)), `${step} done`)
          }
          return { success: true, actions_executed: p.actions.length, extracted_data: extracted, final_url: page.url(), screenshots: shots }
        }
      )
    } catch (e) {
      if (ctx.signal.aborted) throw abortFailure(ctx.signal)
      if (timer.signal.aborted) throw new JobFailure("TIMEOUT", `browser script exceeded its timeout of ${p.timeout} ms during ${step}`)
      const f = playwrightFailure(e, step)
      // Name the step even when the cause came from a layer that did not know it.
      throw f.message.startsWith(step) ? f : new JobFailure(f.kind, `${step} failed: ${f.message}`, f.retryable)
    } finally {
      if (t) clearTimeout(t)
    }
  }
})

interface ActionEnv {
  readonly nav: (url: string) => Promise<unknown>
  readonly extracted: Record<string, string>
  readonly shots: Array<BrowserResult["screenshots"][number]>
  readonly signal: AbortSignal
  readonly files: Parameters<JobType["handler"]>[1]["files"]
  readonly left: () => number
  /** `element_timeout_ms`: the wait of an element action (within what is left of the script). */
  readonly elementTimeoutMs: number
}

/**
 * Runs an element action with the element wait as its timeout: an element that never fits
 * (missing, hidden, disabled) is the script not matching the page, deterministic, so the job
 * fails REMOTE_ERROR without retries instead of TIMEOUT (which is retried).
 */
const onElement = async <A>(selector: string, env: ActionEnv, act: (timeout: number) => Promise<A>): Promise<A> => {
  const timeout = Math.min(env.left(), env.elementTimeoutMs)
  try {
    return await act(timeout)
  } catch (e) {
    // Cut short by the script's own deadline, it is the script's TIMEOUT, not the element's.
    if ((e as Error)?.name === "TimeoutError" && timeout >= env.elementTimeoutMs && !env.signal.aborted) {
      throw new JobFailure("REMOTE_ERROR", `no element fits "${selector}" within ${timeout} ms`, false)
    }
    throw e
  }
}

const runAction = async (page: Page, a: Action, i: number, env: ActionEnv): Promise<void> => {
  switch (a.type) {
    case "navigate": {
      const target = new URL(a.url, page.url()).href
      if (!/^https?:/.test(target)) throw new JobFailure("VALIDATION_ERROR", `navigate: "${a.url}" is not an http(s) URL`, false)
      await env.nav(target)
      return
    }
    case "click":
      await onElement(a.selector, env, (timeout) => page.click(a.selector, { timeout }))
      return
    case "fill":
      await onElement(a.selector, env, (timeout) => page.fill(a.selector, a.value, { timeout }))
      return
    case "select": {
      // A string matches an option's value or its label (Playwright waits for it to exist).
      const chosen = await onElement(a.selector, env, (timeout) => page.selectOption(a.selector, a.value, { timeout }))
      if (chosen.length === 0) throw new JobFailure("REMOTE_ERROR", `no option "${a.value}" in ${a.selector}`, false)
      return
    }
    case "wait":
      await sleep(a.ms, env.signal)
      return
    case "wait_for_element":
      await page.waitForSelector(a.selector, { state: "visible" })
      return
    case "extract_text":
      env.extracted[a.selector] = (await onElement(a.selector, env, (timeout) => page.locator(a.selector).first().innerText({ timeout }))).trim()
      return
    case "screenshot": {
      const image = await page.screenshot({ fullPage: a.full_page, type: "png" })
      const { width, height } = imageDimensions(image)
      const stored = await env.files.put(`action-${i}-screenshot.png`, image, "image/png")
      env.shots.push({ action_index: i, file_url: stored.url, width, height })
      return
    }
  }
}
