/**
 * screenshot and browser end to end: the real kernel boots `jobs` and `job-browser` (Debian
 * Chromium), jobs go over the Jobs API against the loopback pages fixture, images come back
 * from the file store. After `stop()` no Chromium started by this process may remain.
 */
import { existsSync } from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import { imageDimensions } from "../../../plugins/job-browser/Image.ts"
import { jobsClient, platformYaml, tempDir } from "../jobs/support.ts"
import { type Fixture, pagesServer } from "../../fixtures/pages-server.ts"
import { taggedPids, waitNoTagged } from "./procs.ts"

let fx: Fixture
let platform: Awaited<ReturnType<typeof startPlatform>>
let api: ReturnType<typeof jobsClient>
const mine = `${process.pid}-`

describe.skipIf(!existsSync("/usr/bin/chromium"))("browser jobs over the Jobs API", () => {
  beforeAll(async () => {
    fx = await pagesServer()
    platform = await startPlatform({
      cwd: ROOT,
      yaml: platformYaml({ backend: "embedded", dataDir: tempDir(), extra: `  job-browser:\n    navigation_timeout_ms: 2000\n    backoff_base_ms: 20\n` })
    })
    api = jobsClient(platform.url("jobs"))
  })
  afterAll(async () => {
    await platform?.stop()
    await fx?.close()
    expect(await waitNoTagged(mine, 5_000)).toEqual([])
  })

  it("boots in the kernel and contributes both job types and the graph operation", () => {
    const p = platform.kernel.plugins.find((x) => x.name === "job-browser")!
    expect(p).toMatchObject({ status: "running", contributions: { jobTypes: ["screenshot", "browser"], graphOps: ["screenshot"] } })
  })

  it("screenshot: completes with file URLs whose images have the reported size", async () => {
    const j = await api.waitFor((await api.submit("screenshot", { urls: [`${fx.url}/tall`], viewport_width: 600, viewport_height: 400 })).body.job_id)
    expect(j).toMatchObject({ status: "COMPLETED", result: { urls_processed: 1, format: "png", screenshots: [{ url: `${fx.url}/tall`, width: 600, height: 2000 }] } })
    const file = (j.result as { screenshots: Array<{ file_url: string }> }).screenshots[0]!.file_url
    const img = new Uint8Array(await (await fetch(file)).arrayBuffer())
    expect(imageDimensions(img)).toEqual({ width: 600, height: 2000 })
  })

  it("browser: runs a script and names a failing action", async () => {
    const ok = await api.waitFor((await api.submit("browser", { url: `${fx.url}/form`, actions: [{ type: "fill", selector: "#q", value: "x" }, { type: "click", selector: "#go" }, { type: "extract_text", selector: "#result" }] })).body.job_id)
    expect(ok).toMatchObject({ status: "COMPLETED", result: { success: true, actions_executed: 3, extracted_data: { "#result": "q=x color=red" }, final_url: `${fx.url}/result?q=x&color=red` } })
    const bad = await api.waitFor((await api.submit("browser", { url: `${fx.url}/form`, actions: [{ type: "navigate", url: "/missing" }] })).body.job_id)
    expect(bad).toMatchObject({ status: "FAILED", attempts: 1, error_kind: "REMOTE_ERROR", error: expect.stringMatching(/actions\[0\] \(navigate\) failed: .*HTTP 404/) })
  })

  it("refuses bad payloads with 422 and a non-null geo with a clear error", async () => {
    expect((await api.submit("screenshot", { urls: "http://x" })).status).toBe(422)
    expect((await api.submit("browser", { url: `${fx.url}/form`, actions: [{ type: "teleport" }] })).status).toBe(422)
    const geo = await api.waitFor((await api.submit("screenshot", { urls: [`${fx.url}/small`], geo: "us:ca" })).body.job_id)
    expect(geo).toMatchObject({ status: "FAILED", error_kind: "VALIDATION_ERROR", error: expect.stringMatching(/geo routing is not configured/) })
  })

  it("cancels a job stuck on a page load (DELETE) and the browser stays usable", async () => {
    const r = await api.submit("browser", { url: `${fx.url}/small`, actions: [{ type: "wait_for_element", selector: "#never" }] })
    // Wait until the handler runs (progress > 0): a cancel landing before it starts hits a
    // core/jobs Worker race (raceAbort leaves the handler promise unobserved), see the report.
    await api.waitFor(r.body.job_id, (j) => j.status === "PROCESSING" && j.progress > 0)
    await new Promise((res) => setTimeout(res, 200))
    await api.cancel(r.body.job_id)
    expect((await api.waitFor(r.body.job_id)).status).toBe("CANCELLED")
    expect(taggedPids(mine).length).toBeGreaterThan(0) // the warm browser lives on
    const after = await api.waitFor((await api.submit("screenshot", { urls: [`${fx.url}/small`], full_page: false, viewport_width: 200, viewport_height: 100 })).body.job_id)
    expect(after).toMatchObject({ status: "COMPLETED", result: { screenshots: [{ width: 200, height: 100 }] } })
  })
})

describe("job-browser without Chromium", () => {
  it("is listed unavailable with the reason, and the platform keeps serving", async () => {
    const p = await startPlatform({
      cwd: ROOT,
      yaml: platformYaml({ backend: "embedded", dataDir: tempDir(), extra: `  job-browser:\n    chromium_path: /nonexistent/chromium\n` })
    })
    try {
      const st = p.kernel.plugins.find((x) => x.name === "job-browser")!
      expect(st).toMatchObject({ status: "unavailable", reason: expect.stringMatching(/Chromium not found at \/nonexistent\/chromium/) })
      const r = await jobsClient(p.url("jobs")).submit("screenshot", { urls: ["http://127.0.0.1/"] })
      expect(r.status).toBeGreaterThanOrEqual(400) // no such job type here
    } finally {
      await p.stop()
    }
  })
})
