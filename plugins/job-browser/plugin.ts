/**
 * Plugin `job-browser`: the `screenshot` and `browser` job types and the `screenshot` graph
 * operation, driving Debian's Chromium with `playwright-core` (never a downloaded browser).
 *
 * One Chromium per worker process, launched on the first job and kept warm; a fresh context
 * per job. Setup fails with `PluginUnavailable` when `chromium_path` is not an executable, so a
 * machine without Chromium keeps serving everything else. The browser closes with the platform.
 */
import * as Schema from "effect/Schema"
import { configOption, definePlugin, lazySetup } from "../../core/Plugin.ts"
import { BrowserPayload, BrowserResult } from "./Browser.ts"
import { DEFAULT_ARGS } from "./Chromium.ts"
import { ScreenshotPayload, ScreenshotResult } from "./Screenshot.ts"

const opt = configOption

/** Config of `plugins.job-browser` in platform.yaml. */
export const BrowserConfig = Schema.Struct({
  chromium_path: opt(Schema.String, "/usr/bin/chromium", "Chromium executable (Debian package `chromium`); missing makes the plugin unavailable"),
  chromium_args: opt(Schema.Array(Schema.String), [...DEFAULT_ARGS], "Chromium command-line flags"),
  launch_timeout_ms: opt(Schema.Int.pipe(Schema.between(1_000, 300_000)), 30_000, "deadline of the Chromium launch, ms"),
  navigation_timeout_ms: opt(Schema.Int.pipe(Schema.between(100, 600_000)), 30_000, "deadline of one page load or capture in a screenshot job, ms"),
  element_timeout_ms: opt(Schema.Int.pipe(Schema.between(100, 600_000)), 10_000, "how long a browser action (click, fill, select, extract_text) waits for its element; past it the action fails, not retried"),
  max_urls: opt(Schema.Int.pipe(Schema.between(1, 100)), 50, "most URLs per screenshot job"),
  jpeg_quality: opt(Schema.Int.pipe(Schema.between(1, 100)), 80, "JPEG quality of `format: jpeg` screenshots (1..100)"),
  max_429_retries: opt(Schema.Int.pipe(Schema.between(0, 10)), 3, "retries of a page answering 429 before failing NETWORK_ERROR"),
  backoff_base_ms: opt(Schema.Int.pipe(Schema.between(0, 600_000)), 2_000, "first 429 backoff when the page sends no Retry-After, ms (doubles per retry)"),
  backoff_max_ms: opt(Schema.Int.pipe(Schema.between(0, 3_600_000)), 60_000, "longest single backoff, ms; a longer Retry-After fails at once"),
  tor_proxy_url: opt(Schema.String, "socks5://127.0.0.1:9050", "Tor SOCKS5 proxy for `geo: tor` pages (Debian's tor); other geo values go to the geo router")
}).annotations({ identifier: "JobBrowserConfig" })
export type BrowserConfig = typeof BrowserConfig.Type

const setup = lazySetup(() => import("./Setup.ts"))

export default definePlugin({
  name: "job-browser",
  version: "0.1.0",
  description: "screenshot and browser jobs in headless Chromium (playwright-core); screenshot graph operation.",
  dependsOn: ["jobs"],
  // No routes of its own; jobs and graph operations are served by the `jobs` listener.
  defaultListener: "jobs",
  config: BrowserConfig,
  resources: { ScreenshotPayload, ScreenshotResult, BrowserPayload, BrowserResult },
  setup
})
