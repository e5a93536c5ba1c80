/**
 * The `screenshot` job type and graph operation (research-jobs spec, "screenshot").
 *
 * All URLs of a job share one fresh browser context (viewport from the payload, device scale
 * factor 1, so image pixels equal CSS pixels) and are captured one after another; a URL that
 * fails (HTTP 404, timeout, refused connection) fails the job naming the URL. Images go to the
 * file store as `screenshot-{n}.{png|jpg}`; `width`/`height` are read from the image itself.
 */
import * as Schema from "effect/Schema"
import type { GraphOperation } from "../../core/Contribution.ts"
import { type GeoResolver, invalid, type JobContext, type JobType, GeoField } from "../jobs/Contract.ts"
import type { BrowserPool } from "./BrowserPool.ts"
import { LOOPBACK_TOO } from "./Chromium.ts"
import { imageDimensions } from "./Image.ts"
import { gotoChecked } from "./Navigate.ts"

/** Absolute http(s) URL. */
export const HttpUrl = Schema.String.pipe(
  Schema.filter((s) => {
    try {
      const u = new URL(s)
      return u.protocol === "http:" || u.protocol === "https:" ? undefined : "must be an http(s) URL"
    } catch {
      return "must be an absolute URL"
    }
  }),
  Schema.annotations({ description: "absolute http(s) URL" })
)

/** Settings of the browser jobs (from the plugin config). */
export interface BrowserJobSettings {
  readonly navigationTimeoutMs: number
  /** Wait of an element action for its element (a selector that fits nothing fails after it). */
  readonly elementTimeoutMs: number
  readonly max429Retries: number
  readonly backoffBaseMs: number
  readonly backoffMaxMs: number
  readonly jpegQuality: number
  readonly maxUrls: number
}

const Options = {
  full_page: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  format: Schema.optionalWith(Schema.Literal("png", "jpeg"), { default: () => "png" as const }),
  viewport_width: Schema.optionalWith(Schema.Int.pipe(Schema.between(100, 7680)), { default: () => 1920 }),
  viewport_height: Schema.optionalWith(Schema.Int.pipe(Schema.between(100, 4320)), { default: () => 1080 }),
  geo: Schema.optionalWith(GeoField, { default: () => null })
}

/** The screenshot payload (spec); at most 100 URLs (the plugin's `max_urls` may lower it). */
export const ScreenshotPayload = Schema.Struct({
  urls: Schema.Array(HttpUrl).pipe(Schema.minItems(1), Schema.maxItems(100)),
  ...Options
}).annotations({ identifier: "ScreenshotPayload" })
export type ScreenshotPayload = typeof ScreenshotPayload.Type

/** One captured page. */
export const ScreenshotItem = Schema.Struct({ url: Schema.String, file_url: Schema.String, width: Schema.Int, height: Schema.Int })
export type ScreenshotItem = typeof ScreenshotItem.Type

/** The screenshot result (spec). */
export const ScreenshotResult = Schema.Struct({
  urls_processed: Schema.Int,
  format: Schema.Literal("png", "jpeg"),
  screenshots: Schema.Array(ScreenshotItem)
}).annotations({ identifier: "ScreenshotResult" })
export type ScreenshotResult = typeof ScreenshotResult.Type

type Ctx = Pick<JobContext, "signal" | "files" | "progress">

/**
 * Captures `urls` in one fresh context. Errors: `JobFailure` (`VALIDATION_ERROR` for a refused
 * geo or too many URLs, page-load failures per `Navigate.ts`, `CANCELLED`/`TIMEOUT` on abort).
 */
export const captureAll = async (
  pool: BrowserPool,
  geo: GeoResolver,
  s: BrowserJobSettings,
  p: Omit<ScreenshotPayload, "urls"> & { urls: ReadonlyArray<string> },
  ctx: Ctx
): Promise<ScreenshotResult> => {
  if (p.urls.length > s.maxUrls) {
    throw invalid(`at most ${s.maxUrls} urls per screenshot job (got ${p.urls.length})`)
  }
  const route = await geo.resolve(p.geo, ctx.signal)
  await ctx.progress(1, `capturing ${p.urls.length} page(s)`)
  const ext = p.format === "png" ? "png" : "jpg"
  return pool.withContext(
    {
      viewport: { width: p.viewport_width, height: p.viewport_height },
      deviceScaleFactor: 1,
      ...(route.kind === "proxy" ? { proxy: { server: route.proxyUrl, bypass: LOOPBACK_TOO } } : {})
    },
    ctx.signal,
    async (context) => {
      const page = await context.newPage()
      const screenshots: ScreenshotItem[] = []
      for (const [i, url] of p.urls.entries()) {
        await gotoChecked(page, url, { timeoutMs: s.navigationTimeoutMs, max429Retries: s.max429Retries, backoffBaseMs: s.backoffBaseMs, backoffMaxMs: s.backoffMaxMs, signal: ctx.signal })
        const image = await page.screenshot({
          fullPage: p.full_page,
          type: p.format,
          timeout: s.navigationTimeoutMs,
          ...(p.format === "jpeg" ? { quality: s.jpegQuality } : {})
        })
        const { width, height } = imageDimensions(image)
        const stored = await ctx.files.put(`screenshot-${i + 1}.${ext}`, image, p.format === "png" ? "image/png" : "image/jpeg")
        screenshots.push({ url, file_url: stored.url, width, height })
        await ctx.progress(Math.round((100 * (i + 1)) / p.urls.length), `captured ${i + 1}/${p.urls.length}: ${url}`)
      }
      return { urls_processed: screenshots.length, format: p.format, screenshots }
    }
  )
}

/** Builds the `screenshot` job type. */
export const screenshotJob = (pool: BrowserPool, geo: GeoResolver, s: BrowserJobSettings): JobType<ScreenshotPayload, ScreenshotResult> => ({
  id: "screenshot",
  description: "Captures web pages in headless Chromium (PNG or JPEG, viewport or full page) into the file store.",
  payload: ScreenshotPayload,
  result: ScreenshotResult,
  handler: (p, ctx) => captureAll(pool, geo, s, p, ctx)
})

/** `screenshot` graph operation params: the job's options. */
export const ScreenshotParams = Schema.Struct(Options)

/** `screenshot` graph operation: url or url[] → `ScreenshotItem[]`. */
export const screenshotOp = (pool: BrowserPool, geo: GeoResolver, s: BrowserJobSettings): GraphOperation<typeof ScreenshotParams.Type, string | ReadonlyArray<string>, ReadonlyArray<ScreenshotItem>> => ({
  name: "screenshot",
  description: "Captures pages (url or url[]) in headless Chromium; outputs file URLs and pixel sizes.",
  category: "acquire",
  inputTypes: ["url", "url[]"],
  outputType: "screenshot[]",
  params: ScreenshotParams,
  input: Schema.Union(HttpUrl, Schema.Array(HttpUrl)),
  output: Schema.Array(ScreenshotItem),
  handler: async (params, input, ctx) => (await captureAll(pool, geo, s, { ...params, urls: typeof input === "string" ? [input] : input }, ctx)).screenshots
})
