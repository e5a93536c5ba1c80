/**
 * transcript end to end: the real kernel boots `jobs` and `job-transcript` with
 * `youtube_base_url` pointing at the loopback YouTube fixture; jobs go over the Jobs API.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import { jobsClient, platformYaml, tempDir } from "../jobs/support.ts"
import { transcriptConfigFor, type YouTubeFixture, youtubeServer } from "../../fixtures/youtube-server.ts"

let fx: YouTubeFixture
let platform: Awaited<ReturnType<typeof startPlatform>>
let api: ReturnType<typeof jobsClient>

beforeAll(async () => {
  fx = await youtubeServer()
  const cfg = Object.entries(transcriptConfigFor(fx.url)).map(([k, v]) => `    ${k}: ${JSON.stringify(v)}`).join("\n")
  platform = await startPlatform({ cwd: ROOT, yaml: platformYaml({ backend: "embedded", dataDir: tempDir(), extra: `  job-transcript:\n${cfg}\n` }) })
  api = jobsClient(platform.url("jobs"))
})
afterAll(async () => {
  await platform?.stop()
  await fx?.close()
})

describe("transcript over the Jobs API", () => {
  it("boots in the kernel and contributes its job type and graph operation", () => {
    const p = platform.kernel.plugins.find((x) => x.name === "job-transcript")!
    expect(p).toMatchObject({ status: "running", contributions: { jobTypes: ["transcript"], graphOps: ["youtube_search", "transcript"] } })
  })

  it("completes with the transcript", async () => {
    const j = await api.waitFor((await api.submit("transcript", { video_id: "okVideo0001", include_timestamps: false })).body.job_id)
    expect(j).toMatchObject({
      status: "COMPLETED",
      result: { video_id: "okVideo0001", title: "Fixture video", duration_seconds: 213, transcript: [{ text: "Hey there & welcome" }, { text: "this is a test" }, { text: "it's multi line" }], language: "en" }
    })
  })

  it("refuses an invalid video id with 422", async () => {
    const r = await api.submit("transcript", { video_id: "not-an-id" })
    expect(r.status).toBe(422)
    expect(r.body).toMatchObject({ status: "FAILED", error_kind: "VALIDATION_ERROR" })
  })

  it("fails a video without captions once, with a clear error; a 429 is absorbed", async () => {
    const j = await api.waitFor((await api.submit("transcript", { video_id: "noCaptions1" })).body.job_id)
    expect(j).toMatchObject({ status: "FAILED", attempts: 1, error_kind: "REMOTE_ERROR", error: "REMOTE_ERROR: video noCaptions1 has no captions (transcripts are disabled or none exist)" })
    fx.reset()
    expect(await api.waitFor((await api.submit("transcript", { video_id: "rateLimit01" })).body.job_id)).toMatchObject({ status: "COMPLETED", attempts: 1 })
  })

  it("retries a TIMEOUT through the runtime and is cancelled by DELETE", async () => {
    const to = await api.waitFor((await api.submit("transcript", { video_id: "slowVideo01", retry_policy: { max_retries: 1 } })).body.job_id)
    expect(to).toMatchObject({ status: "FAILED", attempts: 2, error_kind: "TIMEOUT" })
    const r = await api.submit("transcript", { video_id: "slowVideo01" })
    // Wait until the handler runs (progress > 0): a cancel landing before it starts hits a
    // core/jobs Worker race (raceAbort leaves the handler promise unobserved), see the report.
    await api.waitFor(r.body.job_id, (j) => j.status === "PROCESSING" && j.progress > 0)
    await api.cancel(r.body.job_id)
    expect((await api.waitFor(r.body.job_id)).status).toBe("CANCELLED")
  })
})
