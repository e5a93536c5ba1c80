/**
 * The runtime without the kernel or HTTP, on a private redis-server: a record whose process died
 * between writing it and enqueueing it is found by the sweeper and run.
 */
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { JobType } from "../../../../plugins/jobs/Contract.ts"
import { LocalFileStore } from "../../../../plugins/jobs/runtime/FileStore.ts"
import { type Job, newJobId, nowIso } from "../../../../plugins/jobs/runtime/Job.ts"
import { RedisJobStore } from "../../../../plugins/jobs/runtime/RedisJobStore.ts"
import { JobsRuntime, layerBackend } from "../../../../plugins/jobs/runtime/Runtime.ts"
import { decodeSettings } from "../../../../plugins/jobs/runtime/Settings.ts"
import { startRedis, tempDir, type TestRedis } from "../support.ts"

const double: JobType = {
  id: "double",
  description: "doubles n",
  payload: Schema.Struct({ n: Schema.Number }),
  result: Schema.Struct({ n: Schema.Number }),
  handler: async (p) => ({ n: p.n * 2 })
}

let redis: TestRedis
beforeAll(async () => {
  redis = await startRedis()
})
afterAll(async () => {
  await redis?.stop()
})

describe("JobsRuntime (redis)", () => {
  it("submits and runs a job; re-enqueues a QUEUED record that never reached the queue", async () => {
    const dir = tempDir()
    const managed = ManagedRuntime.make(layerBackend({
      settings: decodeSettings({ backend: "redis", redis: { url: redis.url, prefix: "orphan" }, limits: { sweep_interval_s: 0.2 } }),
      dataDir: dir,
      lookup: (id) => (id === "double" ? double : undefined),
      files: new LocalFileStore(path.join(dir, "files"), () => "http://127.0.0.1:1/files"),
      startWorkers: true
    }))
    const runtime = await managed.runPromise(JobsRuntime)
    const rt = {
      get: (id: string) => Effect.runPromise(runtime.get(id)),
      submit: (type: string, body: unknown) => Effect.runPromise(runtime.submit(type, body))
    }
    const waitDone = async (id: string): Promise<Job> => {
      for (let i = 0; i < 200; i++) {
        const j = await rt.get(id)
        if (j?.status === "COMPLETED" || j?.status === "FAILED") return j
        await new Promise((r) => setTimeout(r, 50))
      }
      throw new Error(`job ${id} did not end`)
    }
    try {
      const s = await rt.submit("double", { n: 21 })
      expect(s._tag).toBe("Accepted")
      if (s._tag !== "Accepted") return
      expect((await waitDone(s.job.job_id)).result).toEqual({ n: 42 })
      expect((await rt.submit("triple", {}))._tag).toBe("UnknownType")

      // A record written as QUEUED by a process that died before `queue.add`.
      const store = new RedisJobStore(redis.url, "orphan")
      const at = nowIso()
      const orphan: Job = {
        job_id: newJobId(),
        status: "QUEUED",
        job_type: "double",
        created_at: at,
        scheduled_at: at,
        progress: 0,
        attempts: 0,
        max_retries: 3,
        retry_policy: { max_retries: 3, retry_on: ["TIMEOUT"], no_retry_on: [] },
        history: [{ status: "PENDING", timestamp: at }, { status: "QUEUED", timestamp: at }],
        payload: { n: 5 }
      }
      await store.create(orphan)
      await store.close()
      const t0 = Date.now()
      const j = await waitDone(orphan.job_id)
      expect(j).toMatchObject({ status: "COMPLETED", attempts: 1, result: { n: 10 } })
      expect(Date.now() - t0).toBeGreaterThanOrEqual(1500) // only after the orphan grace
    } finally {
      await managed.dispose()
    }
  })
})
