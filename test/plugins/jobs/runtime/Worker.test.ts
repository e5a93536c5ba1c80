import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { JobType } from "../../../../plugins/jobs/Contract.ts"
import type { FileStore } from "../../../../plugins/jobs/runtime/FileStore.ts"
import { type Job, nowIso } from "../../../../plugins/jobs/runtime/Job.ts"
import type { JobQueue } from "../../../../plugins/jobs/runtime/Queue.ts"
import { RedisJobStore } from "../../../../plugins/jobs/runtime/RedisJobStore.ts"
import { decodeSettings } from "../../../../plugins/jobs/runtime/Settings.ts"
import { ClaimLost } from "../../../../plugins/jobs/runtime/Attempt.ts"
import { JobWorker } from "../../../../plugins/jobs/runtime/Worker.ts"
import { startRedis } from "../support.ts"

const queued = (id: string): Job => {
  const at = nowIso()
  return {
    job_id: id,
    status: "QUEUED",
    job_type: "probe",
    created_at: at,
    scheduled_at: at,
    progress: 0,
    attempts: 0,
    max_retries: 0,
    retry_policy: { max_retries: 0, retry_on: [], no_retry_on: [] },
    history: [{ status: "PENDING", timestamp: at }, { status: "QUEUED", timestamp: at }],
    payload: {}
  }
}

/** A queue whose commands share the store's connection (what `RedisQueue` is with a store client). */
const orderedQueue: JobQueue = {
  completionOrdered: true,
  enqueue: async () => {},
  remove: async () => {},
  ensure: async () => 0,
  start: async () => {},
  close: async () => {}
}

const noFiles = {} as FileStore

describe("JobWorker deferred claim (redis store)", () => {
  let redis: Awaited<ReturnType<typeof startRedis>>
  let store: RedisJobStore
  beforeAll(async () => {
    redis = await startRedis()
    store = new RedisJobStore(redis.url, "wk")
  })
  afterAll(async () => {
    await store.close()
    await redis.stop()
  })

  const worker = (handler: JobType["handler"]) =>
    new JobWorker(store, orderedQueue, () => ({ id: "probe", description: "", payload: Schema.Struct({}), result: Schema.Struct({ ok: Schema.Boolean }), handler }), noFiles, decodeSettings().limits, "w1")

  it("a first delivery of a quick job is recorded in one write: QUEUED to COMPLETED with the PROCESSING entry", async () => {
    const j = queued("job_quick")
    await store.create(j)
    const seen: Array<Job["status"]> = []
    const off = await store.onChange((x) => x.job_id === j.job_id && seen.push(x.status))
    await worker(async () => ({ ok: true })).deliver(j.job_id, j, true)
    const deadline = Date.now() + 2_000
    while ((await store.get(j.job_id))?.status !== "COMPLETED" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
    await new Promise((r) => setTimeout(r, 100))
    off()
    const done = (await store.get(j.job_id))!
    expect(done.status).toBe("COMPLETED")
    expect(done.attempts).toBe(1)
    expect(done.history.map((h) => h.status)).toEqual(["PENDING", "QUEUED", "PROCESSING", "COMPLETED"])
    expect(done.history[2]).toMatchObject({ worker: "w1", attempt: 1 })
    expect(seen).toEqual(["COMPLETED"]) // no separate PROCESSING write
  })

  it("a job that takes longer is shown PROCESSING while it runs", async () => {
    const j = queued("job_slow")
    await store.create(j)
    let release: () => void = () => {}
    const running = worker(() => new Promise((r) => (release = () => r({ ok: true })))).deliver(j.job_id, j, true)
    const deadline = Date.now() + 2_000
    while ((await store.get(j.job_id))?.status !== "PROCESSING" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5))
    expect((await store.get(j.job_id))?.status).toBe("PROCESSING")
    release()
    await running
    await new Promise((r) => setTimeout(r, 50))
    expect((await store.get(j.job_id))?.status).toBe("COMPLETED")
  })

  it("a job cancelled before its claim was written: the handler is aborted and nothing is recorded over CANCELLED", async () => {
    const j = queued("job_cancelled")
    await store.create(j)
    // Cancelled in the store while the delivery still carries the QUEUED snapshot.
    await store.update(j.job_id, (x) => ({ ...x, status: "CANCELLED", cancelled_at: nowIso(), scheduled_at: undefined, history: [...x.history, { status: "CANCELLED", timestamp: nowIso() }] }))
    let reason: unknown
    await worker((_p, ctx) => new Promise((_r, reject) => {
      ctx.signal.addEventListener("abort", () => {
        reason = ctx.signal.reason
        reject(ctx.signal.reason)
      })
    })).deliver(j.job_id, j, true)
    expect(reason).toBeInstanceOf(ClaimLost)
    const after = (await store.get(j.job_id))!
    expect(after.status).toBe("CANCELLED")
    expect(after.attempts).toBe(0)
    expect(after.history.map((h) => h.status)).toEqual(["PENDING", "QUEUED", "CANCELLED"])
  })

  it("a quick job cancelled before its outcome was written stays CANCELLED", async () => {
    const j = queued("job_quick_cancelled")
    await store.create(j)
    await store.update(j.job_id, (x) => ({ ...x, status: "CANCELLED", cancelled_at: nowIso(), scheduled_at: undefined, history: [...x.history, { status: "CANCELLED", timestamp: nowIso() }] }))
    await worker(async () => ({ ok: true })).deliver(j.job_id, j, true)
    await new Promise((r) => setTimeout(r, 100))
    expect((await store.get(j.job_id))?.status).toBe("CANCELLED")
  })
})
