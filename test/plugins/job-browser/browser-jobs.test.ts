import * as Schema from "effect/Schema"
import { existsSync } from "node:fs"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { directOnly } from "../../../plugins/jobs/net/GeoRouting.ts"
import { browserJob, type BrowserPayload } from "../../../plugins/job-browser/Browser.ts"
import { type BrowserPool, killTagged } from "../../../plugins/job-browser/BrowserPool.ts"
import { imageDimensions } from "../../../plugins/job-browser/Image.ts"
import { BrowserConfig } from "../../../plugins/job-browser/plugin.ts"
import { browserSettings, makeBrowserPool } from "../../../plugins/job-browser/Setup.ts"
import { screenshotJob, screenshotOp, type ScreenshotPayload } from "../../../plugins/job-browser/Screenshot.ts"
import { expectJobFailure, jobContexts } from "../jobs/net/jobContext.ts"
import { type Fixture, pagesServer } from "../../fixtures/pages-server.ts"
import { taggedPids, waitNoTagged } from "./procs.ts"

const HAVE_CHROMIUM = existsSync("/usr/bin/chromium")
let fx: Fixture
let pool: BrowserPool
let shot: ReturnType<typeof screenshotJob>
let script: ReturnType<typeof browserJob>
const contexts = jobContexts()
const config = () => Schema.decodeUnknownSync(BrowserConfig)({ navigation_timeout_ms: 2_000, backoff_base_ms: 20 })

beforeAll(async () => {
  fx = await pagesServer()
  pool = makeBrowserPool(config())
  const s = browserSettings(config())
  shot = screenshotJob(pool, directOnly, s)
  script = browserJob(pool, directOnly, s)
})
afterEach(() => contexts.cleanup())
afterAll(async () => {
  await pool.close()
  await fx.close()
  // No Chromium of this suite may survive it.
  expect(await waitNoTagged(pool.tag)).toEqual([])
})

const ctx = () => contexts.make()
const failure = expectJobFailure
const shotPayload = (u: unknown) => Schema.decodeUnknownSync(shot.payload)(u) as ScreenshotPayload
const scriptPayload = (u: unknown) => Schema.decodeUnknownSync(script.payload)(u) as BrowserPayload

describe.skipIf(!HAVE_CHROMIUM)("screenshot", () => {
  it("captures full pages as PNG and viewports as JPEG, sizes read from the images", async () => {
    const c = ctx()
    const r = await shot.handler(shotPayload({ urls: [`${fx.url}/tall`, `${fx.url}/small`], viewport_width: 800, viewport_height: 600 }), c)
    expect(r.urls_processed).toBe(2)
    expect(r.format).toBe("png")
    expect(r.screenshots.map((s) => [s.width, s.height])).toEqual([[800, 2000], [800, 600]])
    const png = c.read(r.screenshots[0]!.file_url)
    expect(imageDimensions(png)).toEqual({ width: 800, height: 2000 })
    expect(c.stored.map((s) => s.contentType)).toEqual(["image/png", "image/png"])

    const j = await shot.handler(shotPayload({ urls: [`${fx.url}/tall`], full_page: false, format: "jpeg", viewport_width: 640, viewport_height: 480 }), c)
    expect(j.screenshots[0]).toMatchObject({ width: 640, height: 480 })
    expect(c.read(j.screenshots[0]!.file_url).subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]))
    expect(pool.openContexts).toBe(0)
    expect(pool.launches).toBe(1) // one browser per process, reused
  })

  it("refuses bad input", async () => {
    expect(() => shotPayload({ urls: [] })).toThrow()
    expect(() => shotPayload({ urls: ["file:///etc/passwd"] })).toThrow(/http\(s\)/)
    expect(() => shotPayload({ urls: ["http://x"], format: "gif" })).toThrow()
    expect(() => shotPayload({ urls: ["http://x"], viewport_width: 5 })).toThrow()
    const geo = await failure(shot.handler(shotPayload({ urls: [`${fx.url}/small`], geo: "us" }), ctx()))
    expect([geo.kind, geo.message]).toEqual(["VALIDATION_ERROR", expect.stringMatching(/geo routing is not configured/)])
  })

  it("fails on 404, retries 429, times out a page that never loads", async () => {
    const nf = await failure(shot.handler(shotPayload({ urls: [`${fx.url}/missing`] }), ctx()))
    expect([nf.kind, nf.retryable, nf.message]).toEqual(["REMOTE_ERROR", false, expect.stringMatching(/missing failed: HTTP 404/)])
    const ok = await shot.handler(shotPayload({ urls: [`${fx.url}/flaky?k=shot`], full_page: false, viewport_width: 320, viewport_height: 200 }), ctx())
    expect(ok.screenshots[0]).toMatchObject({ width: 320, height: 200 })
    expect(fx.log.filter((l) => l.includes("/flaky?k=shot"))).toHaveLength(2)
    const to = await failure(shot.handler(shotPayload({ urls: [`${fx.url}/hang`] }), ctx()))
    expect(to.kind).toBe("TIMEOUT")
    const refused = await failure(shot.handler(shotPayload({ urls: ["http://127.0.0.1:1/"] }), ctx()))
    expect(refused.kind).toBe("NETWORK_ERROR")
    expect(pool.openContexts).toBe(0)
  })

  it("cancels mid-load and closes the context", async () => {
    const c = ctx()
    setTimeout(() => c.controller.abort(), 300)
    const t0 = Date.now()
    const f = await failure(shot.handler(shotPayload({ urls: [`${fx.url}/hang`] }), c))
    expect(f.kind).toBe("CANCELLED")
    expect(Date.now() - t0).toBeLessThan(1_500)
    expect(pool.openContexts).toBe(0)
    expect((await pool.get()).contexts()).toHaveLength(0)
  })

  it("is a graph operation too", async () => {
    const op = screenshotOp(pool, directOnly, browserSettings(config()))
    const out = await op.handler(Schema.decodeUnknownSync(op.params)({ full_page: false, viewport_width: 300, viewport_height: 300 }), `${fx.url}/small`, ctx())
    expect(out).toEqual([{ url: `${fx.url}/small`, file_url: expect.stringMatching(/^file:/), width: 300, height: 300 }])
  })
})

describe.skipIf(!HAVE_CHROMIUM)("browser", () => {
  it("runs every action type and reports extracted data by selector, screenshots and the final URL", async () => {
    const c = ctx()
    const r = await script.handler(scriptPayload({
      url: `${fx.url}/form`,
      actions: [
        { type: "wait_for_element", selector: "#ready" },
        { type: "extract_text", selector: "#heading" },
        { type: "extract_text", selector: ".item" },
        { type: "fill", selector: "#q", value: "kittens" },
        { type: "select", selector: "#color", value: "blue" },
        { type: "screenshot" },
        { type: "wait", ms: 50 },
        { type: "click", selector: "#go" },
        { type: "wait_for_element", selector: "#result" },
        { type: "extract_text", selector: "#result" },
        { type: "navigate", url: "/small" },
        { type: "screenshot", full_page: true }
      ]
    }), c)
    expect(r).toMatchObject({
      success: true,
      actions_executed: 12,
      extracted_data: { "#heading": "Search form", ".item": "one", "#result": "q=kittens color=blue" },
      final_url: `${fx.url}/small`
    })
    expect(r.screenshots.map((s) => [s.action_index, s.width, s.height])).toEqual([[5, 1280, 800], [11, 1280, 800]])
    expect(imageDimensions(c.read(r.screenshots[0]!.file_url))).toEqual({ width: 1280, height: 800 })
    expect(pool.openContexts).toBe(0)
  })

  it("refuses bad input", async () => {
    expect(() => scriptPayload({ url: `${fx.url}/form` })).toThrow() // actions required
    expect(() => scriptPayload({ url: `${fx.url}/form`, actions: [{ type: "hover", selector: "a" }] })).toThrow()
    expect(() => scriptPayload({ url: `${fx.url}/form`, actions: [{ type: "fill", selector: "#q" }] })).toThrow() // value missing
    expect(() => scriptPayload({ url: "ftp://x", actions: [] })).toThrow()
    const nav = await failure(script.handler(scriptPayload({ url: `${fx.url}/form`, actions: [{ type: "navigate", url: "javascript:alert(1)" }] }), ctx()))
    expect([nav.kind, nav.message]).toEqual(["VALIDATION_ERROR", expect.stringMatching(/^actions\[0\] \(navigate\) failed/)])
  })

  it("names the failing action: 404 on navigate, a missing element within the job timeout, 429 then success", async () => {
    const nf = await failure(script.handler(scriptPayload({ url: `${fx.url}/form`, actions: [{ type: "extract_text", selector: "h1" }, { type: "navigate", url: "/missing" }] }), ctx()))
    expect([nf.kind, nf.message]).toEqual(["REMOTE_ERROR", expect.stringMatching(/^actions\[1\] \(navigate\) failed: .*HTTP 404/)])
    const t0 = Date.now()
    // 3 s: the page's own navigation must fit in it (under CI load it took over 1 s) for the
    // deadline to land on the click.
    const to = await failure(script.handler(scriptPayload({ url: `${fx.url}/form`, timeout: 3_000, actions: [{ type: "click", selector: "#nowhere" }] }), ctx()))
    expect(to.kind).toBe("TIMEOUT")
    expect(to.message).toMatch(/actions\[0\] \(click\)/)
    expect(Date.now() - t0).toBeLessThan(8_000) // the 3 s deadline, with room for a loaded machine
    const ok = await script.handler(scriptPayload({ url: `${fx.url}/flaky?k=script`, actions: [{ type: "extract_text", selector: "#ok" }] }), ctx())
    expect(ok.extracted_data["#ok"]).toBe("ok after 2")
  })

  it("an element action on a selector that fits nothing fails REMOTE_ERROR, named, not retryable, after element_timeout_ms", async () => {
    const quick = browserJob(pool, directOnly, browserSettings(Schema.decodeUnknownSync(BrowserConfig)({ element_timeout_ms: 1500 })))
    for (const action of [{ type: "click", selector: "#nowhere" }, { type: "fill", selector: "#nowhere", value: "x" }, { type: "extract_text", selector: "#nowhere" }]) {
      const t0 = Date.now()
      const f = await failure(quick.handler(scriptPayload({ url: `${fx.url}/form`, actions: [{ type: "extract_text", selector: "h1" }, action] }), ctx()))
      expect([f.kind, f.retryable, f.message]).toEqual(["REMOTE_ERROR", false, `actions[1] (${action.type}) failed: no element fits "#nowhere" within 1500 ms`])
      expect(Date.now() - t0).toBeLessThan(15_000)
    }
  })

  it("bounds the whole script by timeout (waits included) and cancels mid-action", async () => {
    const t0 = Date.now()
    const to = await failure(script.handler(scriptPayload({ url: `${fx.url}/small`, timeout: 800, actions: [{ type: "wait", ms: 400 }, { type: "wait", ms: 400 }, { type: "wait", ms: 400 }] }), ctx()))
    expect(to.kind).toBe("TIMEOUT")
    // Which wait it dies in depends on how long the load took on a busy machine.
    // On a loaded machine the page load itself may eat the 800 ms (the clock includes it).
    expect(to.message).toMatch(/exceeded its timeout of 800 ms during (actions\[[0-2]\] \(wait\)|initial navigation)/)
    expect(Date.now() - t0).toBeLessThan(2_000)

    const c = ctx()
    setTimeout(() => c.controller.abort(), 400)
    const f = await failure(script.handler(scriptPayload({ url: `${fx.url}/small`, actions: [{ type: "wait_for_element", selector: "#never" }] }), c))
    expect(f.kind).toBe("CANCELLED")
    expect(pool.openContexts).toBe(0)
    expect((await pool.get()).contexts()).toHaveLength(0)
  })

  it("tags every Chromium process, so orphans would be found", async () => {
    expect(pool.warm).toBe(true)
    expect(taggedPids(pool.tag).length).toBeGreaterThan(1) // browser plus its helpers
  })

  it("relaunches after Chromium dies under it", async () => {
    const before = pool.launches
    killTagged(`${pool.tag}.${before}`)
    const r = await shot.handler(shotPayload({ urls: [`${fx.url}/small`], full_page: false, viewport_width: 200, viewport_height: 100 }), ctx())
      .catch(async () => shot.handler(shotPayload({ urls: [`${fx.url}/small`], full_page: false, viewport_width: 200, viewport_height: 100 }), ctx()))
    expect(r.screenshots[0]).toMatchObject({ width: 200, height: 100 })
    expect(pool.launches).toBe(before + 1)
  })
})
