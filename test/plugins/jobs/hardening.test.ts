/**
 * Regressions of the hardening issue, each as a hostile or careless client met it on the jobs
 * listener (embedded backend): an oversize body, a listing carrying every payload, deeply nested
 * JSON, payloads only refused when run, a browser action on a missing element retried as a
 * TIMEOUT, doubled validation messages, doubled SSE events, `lazarus` with both targets.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, type RunningPlatform, startPlatform } from "../../../core/Kernel.ts"
import { type Fixture, pagesServer } from "../../fixtures/pages-server.ts"
import { upload } from "../../support/http.ts"
import { jobsClient, platformYaml, tempDir } from "./support.ts"

process.env.PLATFORM_LOG_LEVEL ??= "error"

let platform: RunningPlatform
let api: ReturnType<typeof jobsClient>
let base: string
let pages: Fixture

beforeAll(async () => {
  pages = await pagesServer()
  platform = await startPlatform({
    cwd: ROOT,
    yaml: platformYaml({
      backend: "embedded",
      dataDir: tempDir("hardening-"),
      // A cold Chromium launch on a busy machine takes longer than the suite's usual 5 s.
      limits: { worker_timeout_s: 60 },
      extra: `  job-vectl: {}
  job-archive: {}
  job-browser:
    element_timeout_ms: 500
`
    })
  })
  base = platform.url("jobs")
  api = jobsClient(base)
}, 60_000)
afterAll(async () => {
  await platform?.stop()
  await pages?.close()
})

const total = async () => (await api.list()).body.total as number

describe("hardening regressions", () => {
  it("1. a 120 MB vectl body is 413 before it is read; nothing is recorded", async () => {
    const before = await total()
    const r = await upload(`${base}/api/v1/jobs/vectl`, 120 * 1024 * 1024)
    expect([r.status, JSON.parse(r.body)]).toEqual([413, { error: "request body exceeds 8388608 bytes", limit: "body_bytes", max: 8388608 }])
    expect(await total()).toBe(before)
  })

  it("2. listings leave payload and result out unless asked; a page is bounded in bytes", async () => {
    const value = "v".repeat(1_000_000)
    const ids: Array<string> = []
    for (let i = 0; i < 5; i++) ids.push((await api.submit("echo", { value })).body.job_id)
    for (const id of ids) await api.waitFor(id)
    const lean = await fetch(`${base}/api/v1/jobs?job_type=echo&limit=5`)
    const text = await lean.text()
    expect(text.length).toBeLessThan(20_000)
    const page = JSON.parse(text)
    expect(page.jobs.map((j: { job_id: string }) => j.job_id)).toEqual([...ids].reverse())
    expect(page.jobs.every((j: object) => !("payload" in j) && !("result" in j))).toBe(true)
    // Asked for both: 2 MB a job, so a page stops at 4 MiB and the cursor resumes after it.
    const seen: Array<string> = []
    let cursor: string | undefined
    let pagesRead = 0
    do {
      const r = (await api.list(`job_type=echo&limit=5&include=payload,result${cursor ? `&cursor=${cursor}` : ""}`)).body
      for (const j of r.jobs) {
        expect([j.payload.value.length, j.result.value.length]).toEqual([1_000_000, 1_000_000])
        seen.push(j.job_id)
      }
      cursor = r.next_cursor
      pagesRead++
    } while (cursor)
    expect(seen).toEqual([...ids].reverse())
    expect(pagesRead).toBeGreaterThanOrEqual(3)
    expect((await api.list("limit=201")).status).toBe(422)
    expect((await api.list("include=secrets")).status).toBe(422)
  }, 60_000)

  it("3. JSON nested 100 000 deep is 400 naming json_depth, not a 503 from the store", async () => {
    const before = await total()
    const r = await api.call("POST", "/api/v1/jobs/vectl", "[".repeat(100_000) + "]".repeat(100_000))
    expect([r.status, r.body]).toEqual([400, { error: "request body nests deeper than 64 levels", limit: "json_depth", max: 64 }])
    expect(await total()).toBe(before)
  })

  it("4. payload checks that can be made at submit are made there: geo grammar, known models", async () => {
    const geo = await api.submit("screenshot", { urls: [`${pages.url}/small`], geo: "!!" })
    expect([geo.status, geo.body.status, geo.body.error_kind]).toEqual([422, "FAILED", "VALIDATION_ERROR"])
    const model = await api.submit("vectl", { operation: "embed", texts: ["a"], model: "nope" })
    expect([model.status, model.body.status, model.body.error_kind]).toEqual([422, "FAILED", "VALIDATION_ERROR"])
    expect(model.body.error_details.issues).toEqual([{ path: "model", message: 'unknown model "nope" (configured: hashing-768)' }])
  })

  it("5. a click on a selector that fits nothing fails once, naming the action, not retried as TIMEOUT", async () => {
    const r = await api.submit("browser", { url: `${pages.url}/form`, actions: [{ type: "click", selector: "#nowhere" }] })
    expect(r.status).toBe(202)
    const j = await api.waitFor(r.body.job_id, undefined, 60_000)
    expect([j.status, j.error_kind, j.attempts, j.error]).toEqual(["FAILED", "REMOTE_ERROR", 1, 'REMOTE_ERROR: actions[0] (click) failed: no element fits "#nowhere" within 500 ms'])
  }, 90_000)

  it("6. one message per problem: no second `Expected undefined` line", async () => {
    const q = await api.list("limit=-1")
    expect([q.status, q.body.detail]).toEqual([422, [{ loc: ["query", "limit"], msg: "Expected a number between 1 and 200, actual -1", type: "value_error" }]])
    const p = await api.submit("echo", { value: "x", retry_policy: { max_retries: -1 } })
    expect(p.body.error_details.issues).toEqual([{ path: "retry_policy.max_retries", message: "Expected a number between 0 and 100, actual -1" }])
    expect(p.body.error).not.toMatch(/undefined/)
  })

  it("7. SSE sends each progress update once", async () => {
    const r = await api.submit("echo", { value: "x", sleep_ms: 400 })
    const text = await (await fetch(`${base}/api/v1/jobs/${r.body.job_id}/events`)).text()
    const events = text.split("\n\n").filter((b) => b.includes("event: job")).map((b) => JSON.parse(b.split("\n").find((l) => l.startsWith("data: "))!.slice(6)))
    const steps = events.map((j) => `${j.status} ${j.progress} ${j.message ?? ""}`)
    expect(steps).toContain("PROCESSING 50 step 2 of 4")
    expect(new Set(steps).size).toBe(steps.length)
  })

  it("8. lazarus takes one of domain / url, not both", async () => {
    const r = await api.submit("lazarus", { domain: "example.com", url: "http://example.com/" })
    expect([r.status, r.body.error_details.issues]).toEqual([422, [{ path: "(body)", message: "give one of `domain` / `url`, not both" }]])
  })
})
