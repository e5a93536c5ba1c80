/**
 * lazarus end to end: the real kernel boots `jobs` and `job-archive` from a platform.yaml whose
 * archive URLs point at the loopback archive fixture; jobs go through the Jobs API over HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import { jobsClient, platformYaml, tempDir } from "../jobs/support.ts"
import { type ArchiveFixture, archiveConfigFor, archiveServer } from "../../fixtures/archive-server.ts"

let fx: ArchiveFixture
let platform: Awaited<ReturnType<typeof startPlatform>>
let api: ReturnType<typeof jobsClient>

beforeAll(async () => {
  fx = await archiveServer()
  const cfg = Object.entries(archiveConfigFor(fx.url)).map(([k, v]) => `    ${k}: ${JSON.stringify(v)}`).join("\n")
  platform = await startPlatform({ cwd: ROOT, yaml: platformYaml({ backend: "embedded", dataDir: tempDir(), extra: `  job-archive:\n${cfg}\n` }) })
  api = jobsClient(platform.url("jobs"))
})
afterAll(async () => {
  await platform?.stop()
  await fx?.close()
})

describe("lazarus over the Jobs API", () => {
  it("boots in the kernel and contributes its job type and graph operations", () => {
    const p = platform.kernel.plugins.find((x) => x.name === "job-archive")!
    expect(p.status).toBe("running")
    expect(p.contributions.jobTypes).toEqual(["lazarus"])
    expect([...p.contributions.graphOps].sort()).toEqual(["archive_discover", "fetch_archive"])
  })

  it("completes with the spec's result and a downloadable JSONL manifest", async () => {
    const r = await api.submit("lazarus", { domain: "example.com", sources: ["wayback", "commoncrawl"] })
    expect(r.status).toBe(202)
    const j = await api.waitFor(r.body.job_id)
    expect(j).toMatchObject({ status: "COMPLETED", progress: 100, result: { urls_discovered: 4, snapshots_retrieved: 8, date_range: { earliest: "2019-01-01", latest: "2023-12-06" } } })
    const out = (j.result as { output_url: string }).output_url
    expect(out.startsWith(platform.url("jobs"))).toBe(true)
    const lines = (await (await fetch(out)).text()).trim().split("\n").map((l) => JSON.parse(l))
    expect(lines).toHaveLength(9)
    const snap = await fetch(lines[0].file_url)
    expect(await snap.text()).toContain("captured 20190101000000")
  })

  it("fails invalid payloads at once (VALIDATION_ERROR, no retry)", async () => {
    const r = await api.submit("lazarus", { limit: 5 })
    expect(r.status).toBe(422)
    expect(r.body).toMatchObject({ status: "FAILED", error_kind: "VALIDATION_ERROR" })
    expect(r.body.error).toMatch(/domain.*url/)
    const geo = await api.waitFor((await api.submit("lazarus", { domain: "example.com", geo: "us" })).body.job_id)
    expect(geo).toMatchObject({ status: "FAILED", attempts: 1, error_kind: "VALIDATION_ERROR", error: expect.stringMatching(/geo routing is not configured/) })
  })

  it("survives a 429 within the attempt and retries an outage (NETWORK_ERROR) through the runtime", async () => {
    fx.reset()
    expect(await api.waitFor((await api.submit("lazarus", { domain: "ratelimited.example" })).body.job_id)).toMatchObject({ status: "COMPLETED", attempts: 1 })
    const down = await api.waitFor((await api.submit("lazarus", { domain: "broken.example", retry_policy: { max_retries: 1 } })).body.job_id)
    expect(down).toMatchObject({ status: "FAILED", attempts: 2, error_kind: "NETWORK_ERROR" })
    const gone = await api.waitFor((await api.submit("lazarus", { domain: "allgone.example" })).body.job_id)
    expect(gone).toMatchObject({ status: "FAILED", attempts: 1, error_kind: "REMOTE_ERROR" })
  })

  it("is cancelled by DELETE while a source hangs", async () => {
    const r = await api.submit("lazarus", { domain: "slow.example" })
    // Wait until the handler runs (progress > 0): a cancel landing before it starts hits a
    // core/jobs Worker race (raceAbort leaves the handler promise unobserved), see the report.
    await api.waitFor(r.body.job_id, (j) => j.status === "PROCESSING" && j.progress > 0)
    const d = await api.cancel(r.body.job_id)
    expect(d.body).toMatchObject({ status: "CANCELLED" })
    const j = await api.waitFor(r.body.job_id)
    expect(j.status).toBe("CANCELLED")
  })
})
