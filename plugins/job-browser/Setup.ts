/** The `job-browser` plugin's implementation, imported when the plugin is set up (see `plugin.ts`). */
import * as Effect from "effect/Effect"
import { accessSync, constants } from "node:fs"
import { jobTypes, pluggedGeoResolver, torAware } from "../jobs/Contract.ts"
import { PluginUnavailable } from "../../core/Plugin.ts"
import { browserJob } from "./Browser.ts"
import { BrowserPool } from "./BrowserPool.ts"
import { type BrowserJobSettings, screenshotJob, screenshotOp } from "./Screenshot.ts"
import type { PluginContext } from "../../core/Plugin.ts"
import type { BrowserConfig } from "./plugin.ts"

/** The job settings of a decoded config. */
export const browserSettings = (c: BrowserConfig): BrowserJobSettings => ({
  navigationTimeoutMs: c.navigation_timeout_ms,
  elementTimeoutMs: c.element_timeout_ms,
  max429Retries: c.max_429_retries,
  backoffBaseMs: c.backoff_base_ms,
  backoffMaxMs: c.backoff_max_ms,
  jpegQuality: c.jpeg_quality,
  maxUrls: c.max_urls
})

/** The pool of a decoded config (launches nothing until the first job). */
export const makeBrowserPool = (c: BrowserConfig, tag?: string): BrowserPool =>
  new BrowserPool({ executablePath: c.chromium_path, args: c.chromium_args, launchTimeoutMs: c.launch_timeout_ms, tag })

/** `setup` of the plugin: unavailable without Chromium; else the `screenshot` and `browser` job types and the `screenshot` operation over one browser pool, closed with the platform. */
export const setup = (ctx: PluginContext<BrowserConfig>) =>
  Effect.gen(function* () {
    const c = ctx.config
    try {
      accessSync(c.chromium_path, constants.X_OK)
    } catch {
      return yield* Effect.fail(new PluginUnavailable({ reason: `Chromium not found at ${c.chromium_path} (apt-get install -y chromium, or set plugins.job-browser.chromium_path)` }))
    }
    const geo = torAware(yield* pluggedGeoResolver, c.tor_proxy_url)
    // Released with the platform scope: no Chromium outlives the platform.
    const pool = yield* Effect.acquireRelease(Effect.sync(() => makeBrowserPool(c)), (p) => Effect.promise(() => p.close()))
    const s = browserSettings(c)
    return {
      extensions: jobTypes(screenshotJob(pool, geo, s), browserJob(pool, geo, s)),
      graphOps: [screenshotOp(pool, geo, s)],
      status: () => ({ chromium: c.chromium_path, browser_warm: pool.warm, launches: pool.launches, open_contexts: pool.openContexts })
    }
  })
