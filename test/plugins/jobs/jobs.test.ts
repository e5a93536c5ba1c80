/**
 * The Jobs API end to end on both backends: the real kernel boots `jobs` and the fixture job
 * types from a platform.yaml, requests go over real HTTP, the redis backend uses a private
 * redis-server with BullMQ. Limits are shrunk through the config (backoff 50 ms, timeouts ~1 s).
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import type { Job } from "../../../plugins/jobs/runtime/Job.ts"
import { jobsClient, platformYaml, startRedis, tempDir, type TestRedis } from "./support.ts"

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const statuses = (j: Job) => j.history.map((h) => h.status)
const at = (j: Job, status: string, n = 0) => Date.parse(j.history.filter((h) => h.status === status)[n]!.timestamp)

/** An HTTP server that never answers, recording when each request's connection closes. */
const hangingServer = async () => {
  const closed: Array<number> = []
  const opened: Array<number> = []
  const server = http.createServer((req) => {
    opened.push(Date.now())
    req.socket.on("close", () => closed.push(Date.now()))
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/slow`,
    opened,
    closed,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections()
      server.close(() => r())
    })
  }
}

let redis: TestRedis
beforeAll(async () => {
  redis = await startRedis()
})
afterAll(async () => {
  await redis?.stop()
})

describe.each(["embedded", "redis"] as const)("jobs on the %s backend", (backend) => {
  let platform: Awaited<ReturnType<typeof startPlatform>>
  let idle: Awaited<ReturnType<typeof startPlatform>>
  let api: ReturnType<typeof jobsClient>
  let idleApi: ReturnType<typeof jobsClient>
  let base: string
  const prefix = `t${Math.random().toString(36).slice(2, 8)}`

  beforeAll(async () => {
    platform = await startPlatform({
      cwd: ROOT,
      yaml: platformYaml({ backend, dataDir: tempDir(), redisUrl: redis.url, prefix, limits: { worker_timeout_s: 1 }, filesKey: "sekret" })
    })
    base = platform.url("jobs")
    api = jobsClient(base)
    // A second platform without workers: jobs stay QUEUED (queue timeout), and a short retention.
    idle = await startPlatform({
      cwd: ROOT,
      yaml: platformYaml({ backend, dataDir: tempDir(), redisUrl: redis.url, prefix: `${prefix}idle`, workers: false, limits: { queue_timeout_s: 0.4, retention_s: 1 } })
    })
    idleApi = jobsClient(idle.url("jobs"))
  })
  afterAll(async () => {
    await platform?.stop()
    await idle?.stop()
  })

  it("runs a job through PENDING, QUEUED, PROCESSING, COMPLETED with progress, timings and history", async () => {
    const r = await api.submit("echo", { value: "hi", sleep_ms: 200 })
    expect(r.status).toBe(202)
    expect(r.body).toMatchObject({ status: "PENDING", job_type: "echo", attempts: 0, max_retries: 3 })
    expect(r.body.job_id).toMatch(/^job_[0-9a-z]{26}$/)
    expect(r.body.created_at).toMatch(ISO)
    const mid = await api.waitFor(r.body.job_id, (j) => j.status === "PROCESSING" && j.progress > 10)
    expect(mid.message).toMatch(/step/)
    const j = await api.waitFor(r.body.job_id)
    expect(j).toMatchObject({ status: "COMPLETED", progress: 100, attempts: 1, result: { value: "hi", attempt: 1 } })
    expect(statuses(j)).toEqual(["PENDING", "QUEUED", "PROCESSING", "COMPLETED"])
    for (const k of ["created_at", "started_at", "completed_at"] as const) expect(j[k]).toMatch(ISO)
    expect(j.history[2]).toMatchObject({ worker: expect.any(String), attempt: 1 })
    expect(j.duration_seconds).toBeGreaterThanOrEqual(0.19)
    expect(j.duration_seconds).toBeLessThan(5)
    expect(j.failed_at).toBeUndefined()
  })

  it("retries a NETWORK_ERROR with exponential backoff and then succeeds", async () => {
    const r = await api.submit("echo", { value: "flaky", fail_times: 2, fail_kind: "NETWORK_ERROR" })
    const j = await api.waitFor(r.body.job_id)
    expect(j).toMatchObject({ status: "COMPLETED", attempts: 3, result: { attempt: 3 } })
    expect(statuses(j)).toEqual(["PENDING", "QUEUED", "PROCESSING", "FAILED", "QUEUED", "PROCESSING", "FAILED", "QUEUED", "PROCESSING", "COMPLETED"])
    expect(j.history[3]).toMatchObject({ status: "FAILED", attempt: 1, error: "NETWORK_ERROR: planned failure 1" })
    // backoff base 0.05 s: 50 ms after attempt 1, 100 ms after attempt 2
    expect(at(j, "PROCESSING", 1) - at(j, "FAILED", 0)).toBeGreaterThanOrEqual(45)
    expect(at(j, "PROCESSING", 2) - at(j, "FAILED", 1)).toBeGreaterThanOrEqual(95)
    expect(j.error).toBeUndefined()
  })

  it("stops after max_retries (a job's own retry_policy) and fails with the last error", async () => {
    const r = await api.submit("echo", { value: "x", fail_times: 9, fail_kind: "TIMEOUT", retry_policy: { max_retries: 1 } })
    expect(r.body.retry_policy).toEqual({ max_retries: 1, retry_on: ["TIMEOUT", "NETWORK_ERROR"], no_retry_on: ["VALIDATION_ERROR"] })
    const j = await api.waitFor(r.body.job_id)
    expect(j).toMatchObject({ status: "FAILED", attempts: 2, max_retries: 1, error: "TIMEOUT: planned failure 2", error_kind: "TIMEOUT" })
    expect(j.failed_at).toMatch(ISO)
  })

  it("retries only the kinds in retry_on", async () => {
    const plain = await api.waitFor((await api.submit("echo", { value: "x", fail_times: 1, fail_kind: "REMOTE_ERROR" })).body.job_id)
    expect(plain).toMatchObject({ status: "FAILED", attempts: 1, error_kind: "REMOTE_ERROR" })
    const opted = await api.waitFor((await api.submit("echo", { value: "x", fail_times: 1, fail_kind: "REMOTE_ERROR", retry_policy: { retry_on: ["REMOTE_ERROR"] } })).body.job_id)
    expect(opted).toMatchObject({ status: "COMPLETED", attempts: 2 })
  })

  it("never retries a VALIDATION_ERROR, even when retry_on names it", async () => {
    const r = await api.submit("echo", { value: "x", fail_times: 1, fail_kind: "VALIDATION_ERROR", retry_policy: { retry_on: ["VALIDATION_ERROR", "NETWORK_ERROR"] } })
    const j = await api.waitFor(r.body.job_id)
    expect(j).toMatchObject({ status: "FAILED", attempts: 1, error_kind: "VALIDATION_ERROR" })
  })

  it("answers an invalid payload with 422 and the job, recorded FAILED; bad JSON 400 and unknown types 404 record nothing", async () => {
    const before = (await api.list()).body.total
    const r = await api.submit("echo", { sleep_ms: -1, retry_policy: { max_retries: "many" } })
    expect(r.status).toBe(422)
    expect(r.body).toMatchObject({ status: "FAILED", error_kind: "VALIDATION_ERROR", attempts: 0 })
    expect(r.body.error).toMatch(/^VALIDATION_ERROR: invalid payload: /)
    expect(r.body.error).toMatch(/value: is missing/)
    expect(r.body.error).toMatch(/sleep_ms: /)
    expect(r.body.error).toMatch(/retry_policy\.max_retries: /)
    expect(statuses(r.body)).toEqual(["PENDING", "FAILED"])
    expect((await api.get(r.body.job_id)).status).toBe("FAILED")
    expect((await api.call("POST", "/api/v1/jobs/echo", "{not json")).status).toBe(400)
    expect((await api.submit("nope", {})).status).toBe(404)
    const after = await api.list("status=FAILED&job_type=echo")
    expect(after.body.jobs.map((j: Job) => j.job_id)).toContain(r.body.job_id)
    expect((await api.list()).body.total).toBe(before + 1)
  })

  it("fails a job whose result breaks its schema, without retrying", async () => {
    const j = await api.waitFor((await api.submit("bad-result", {})).body.job_id)
    expect(j).toMatchObject({ status: "FAILED", attempts: 1, error_kind: "INTERNAL_ERROR" })
    expect(j.error).toMatch(/result does not match/)
  })

  it("fails an attempt that runs past WORKER_TIMEOUT with a timed-out message", async () => {
    const t0 = Date.now()
    const r = await api.submit("echo", { value: "slow", sleep_ms: 10_000, retry_policy: { max_retries: 0 } })
    const j = await api.waitFor(r.body.job_id)
    expect(j).toMatchObject({ status: "FAILED", error_kind: "TIMEOUT", attempts: 1 })
    expect(j.error).toBe("TIMEOUT: job exceeded WORKER_TIMEOUT of 1 s")
    expect(Date.now() - t0).toBeLessThan(4000)
    expect(j.duration_seconds).toBeGreaterThanOrEqual(0.95)
  })

  it("cancels a running job: its fetch is aborted within a second; a second DELETE is 409", async () => {
    const hang = await hangingServer()
    try {
      const r = await api.submit("fetch", { url: hang.url })
      await api.waitFor(r.body.job_id, (j) => j.status === "PROCESSING")
      while (hang.opened.length === 0) await new Promise((res) => setTimeout(res, 10))
      const t0 = Date.now()
      const d = await api.cancel(r.body.job_id)
      expect(d.status).toBe(200)
      expect(d.body).toMatchObject({ status: "CANCELLED" })
      expect(d.body.cancelled_at).toMatch(ISO)
      while (hang.closed.length === 0 && Date.now() - t0 < 2000) await new Promise((res) => setTimeout(res, 10))
      expect(hang.closed.length).toBe(1)
      expect(hang.closed[0]! - t0).toBeLessThan(1000)
      await new Promise((res) => setTimeout(res, 200))
      const j = await api.get(r.body.job_id)
      expect(j.status).toBe("CANCELLED")
      expect(statuses(j)).toEqual(["PENDING", "QUEUED", "PROCESSING", "CANCELLED"])
      const again = await api.cancel(r.body.job_id)
      expect(again.status).toBe(409)
      expect(again.body).toMatchObject({ job_id: r.body.job_id, status: "CANCELLED" })
      expect((await api.cancel("job_0000000000000000000000nope")).status).toBe(404)
    } finally {
      await hang.close()
    }
  })

  it("cancels a QUEUED job, which then never runs", async () => {
    const r = await idleApi.submit("echo", { value: "never" })
    const d = await idleApi.cancel(r.body.job_id)
    expect(d.body).toMatchObject({ status: "CANCELLED", attempts: 0 })
    expect(statuses(d.body)).toEqual(["PENDING", "QUEUED", "CANCELLED"])
  })

  it("fails a job that waits past QUEUE_TIMEOUT with TIMEOUT, then purges it after the retention period", async () => {
    const r = await idleApi.submit("echo", { value: "waits" })
    const j = await idleApi.waitFor(r.body.job_id, (x) => x.status !== "QUEUED", 5000)
    expect(j).toMatchObject({ status: "FAILED", error_kind: "TIMEOUT", attempts: 0 })
    expect(j.error).toMatch(/QUEUE_TIMEOUT of 0.4 s/)
    expect(Date.parse(j.failed_at!) - Date.parse(j.created_at)).toBeGreaterThanOrEqual(400)
    const deadline = Date.now() + 5000
    let gone = false
    while (!gone && Date.now() < deadline) {
      gone = (await idleApi.call("GET", `/api/v1/jobs/${r.body.job_id}`)).status === 404
      if (!gone) await new Promise((res) => setTimeout(res, 50))
    }
    expect(gone).toBe(true)
    expect(Date.now() - Date.parse(j.failed_at!)).toBeGreaterThanOrEqual(1000)
    expect((await idleApi.list()).body.jobs.map((x: Job) => x.job_id)).not.toContain(r.body.job_id)
  })

  it("lists with status, job_type and time filters, newest first, with total and cursor or offset paging", async () => {
    const t0 = new Date(Date.now() - 1).toISOString()
    const ids: Array<string> = []
    for (let i = 0; i < 5; i++) {
      ids.push((await api.submit("echo", { value: `list${i}` })).body.job_id)
      await new Promise((res) => setTimeout(res, 3))
    }
    for (const id of ids) await api.waitFor(id)
    const failed = (await api.submit("echo", {})).body.job_id
    const all = await api.list(`created_after=${t0}&job_type=echo`)
    expect(all.status).toBe(200)
    expect(all.body.total).toBe(6)
    expect(all.body.jobs.map((j: Job) => j.job_id)).toEqual([failed, ...[...ids].reverse()])
    const done = await api.list(`created_after=${t0}&status=COMPLETED&limit=2`)
    expect(done.body.total).toBe(5)
    expect(done.body.jobs.map((j: Job) => j.job_id)).toEqual([ids[4], ids[3]])
    const next = await api.list(`created_after=${t0}&status=COMPLETED&limit=2&cursor=${done.body.next_cursor}`)
    expect(next.body.jobs.map((j: Job) => j.job_id)).toEqual([ids[2], ids[1]])
    const last = await api.list(`created_after=${t0}&status=COMPLETED&limit=2&cursor=${next.body.next_cursor}`)
    expect(last.body.jobs.map((j: Job) => j.job_id)).toEqual([ids[0]])
    expect(last.body.next_cursor).toBeUndefined()
    const off = await api.list(`created_after=${t0}&status=completed,failed&limit=3&offset=3`)
    expect(off.body).toMatchObject({ total: 6, limit: 3, offset: 3 })
    expect(off.body.jobs.map((j: Job) => j.job_id)).toEqual([ids[2], ids[1], ids[0]])
    const created = (await api.get(ids[2]!)).created_at
    const before = await api.list(`created_after=${t0}&created_before=${created}&job_type=echo`)
    expect(before.body.jobs.map((j: Job) => j.job_id)).toEqual([ids[1], ids[0]])
    expect((await api.list("status=DONE")).status).toBe(400)
    expect((await api.list("created_after=yesterday")).status).toBe(400)
    expect((await api.list("limit=0")).status).toBe(422)
    expect((await api.list(`job_type=fetch&created_after=${t0}`)).body.total).toBe(0)
  })

  it("streams progress as server-sent events until the job ends", async () => {
    const r = await api.submit("echo", { value: "sse", sleep_ms: 300 })
    const res = await fetch(`${base}/api/v1/jobs/${r.body.job_id}/events`)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toMatch(/text\/event-stream/)
    const text = await res.text() // ends when the job ends
    const events = text.split("\n\n").filter((b) => b.includes("data: ")).map((b) => ({
      event: /event: (\w+)/.exec(b)![1],
      job: JSON.parse(/data: (.*)/.exec(b)![1]!) as Job
    }))
    const jobs = events.filter((e) => e.event === "job").map((e) => e.job)
    expect(events.at(-1)!.event).toBe("end")
    expect(events.at(-1)!.job.status).toBe("COMPLETED")
    const progress = jobs.filter((j) => j.status === "PROCESSING").map((j) => j.progress)
    expect(progress.length).toBeGreaterThanOrEqual(3)
    expect([...progress].sort((a, b) => a - b)).toEqual(progress)
    expect(jobs.at(-1)!.status).toBe("COMPLETED")
    expect((await fetch(`${base}/api/v1/jobs/job_x/events`)).status).toBe(404)
  })

  it("stores job files and uploads behind FILES_API_KEY at unguessable absolute URLs, confined to the store", async () => {
    const j = await api.waitFor((await api.submit("echo", { value: "filed", file: true })).body.job_id)
    const url = (j.result as { file_url: string }).file_url
    expect(url).toMatch(new RegExp(`^${base}/files/[A-Za-z0-9_-]{32}/echo\\.txt$`))
    expect(await (await fetch(url)).text()).toBe("echo filed")
    expect(j.files).toHaveLength(1)
    const put = (key?: string) => fetch(`${base}/files/notes.md`, { method: "PUT", body: "# hi", headers: { "content-type": "text/markdown", ...(key ? { authorization: `Bearer ${key}` } : {}) } })
    expect((await put()).status).toBe(401)
    expect((await put("wrong")).status).toBe(401)
    const up = await put("sekret")
    expect(up.status).toBe(201)
    const stored = await up.json() as { url: string; id: string }
    const got = await fetch(stored.url)
    expect(got.headers.get("content-type")).toBe("text/markdown")
    expect(await got.text()).toBe("# hi")
    expect((await fetch(`${base}/files/${stored.id}/..%2F..%2F..%2Fetc%2Fpasswd`)).status).toBe(404)
    expect((await fetch(`${base}/files/..%2F..%2Fstore/jobs.log`)).status).toBe(404)
    expect((await fetch(`${base}/files/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/notes.md`)).status).toBe(404)
  })
})
