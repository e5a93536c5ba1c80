/**
 * The runtime service without the kernel or HTTP, built from its layers (`@effect/vitest`): on
 * a private redis-server a record whose process died between writing it and enqueueing it is
 * found by the sweeper and run; on the embedded backend the sweep fails a job past
 * QUEUE_TIMEOUT, and a store that cannot be opened fails the layer with JobStoreUnavailable.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { JobType } from "../../../../plugins/jobs/Contract.ts"
import * as Backend from "../../../../plugins/jobs/runtime/Backend.ts"
import { LocalFileStore } from "../../../../plugins/jobs/runtime/FileStore.ts"
import { type Job, newJobId, nowIso } from "../../../../plugins/jobs/runtime/Job.ts"
import { RedisJobStore } from "../../../../plugins/jobs/runtime/RedisJobStore.ts"
import * as Runtime from "../../../../plugins/jobs/runtime/Runtime.ts"
import { decodeSettings } from "../../../../plugins/jobs/runtime/Settings.ts"
import { startRedis, tempDir, type TestRedis } from "../support.ts"

const double: JobType = {
  id: "double",
  description: "doubles n",
  payload: Schema.Struct({ n: Schema.Number }),
  result: Schema.Struct({ n: Schema.Number }),
  handler: async (p) => ({ n: p.n * 2 })
}

const lookup = (id: string) => (id === "double" ? double : undefined)
const filesIn = (dir: string) => new LocalFileStore(path.join(dir, "files"), () => "http://127.0.0.1:1/files")

/** Polls the record of `id` until it is COMPLETED or FAILED (10 s at most). */
const ended = (id: string) =>
  Effect.gen(function*() {
    const runtime = yield* Runtime.JobsRuntime
    for (let i = 0; i < 200; i++) {
      const job = yield* runtime.get(id)
      if (job?.status === "COMPLETED" || job?.status === "FAILED") return job
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.die(new Error(`job ${id} did not end`))
  })

let redis: TestRedis
beforeAll(async () => {
  redis = await startRedis()
})
afterAll(async () => {
  await redis?.stop()
})

describe("JobsRuntime (redis)", () => {
  // Live clock: the sweeper and the polling wait in real time (it.scoped would use the TestClock).
  it.scopedLive("submits and runs a job; re-enqueues a QUEUED record that never reached the queue", () => {
    const dir = tempDir()
    return Effect.gen(function*() {
      const runtime = yield* Runtime.JobsRuntime
      const submitted = yield* runtime.submit("double", { n: 21 })
      expect(submitted._tag).toBe("Accepted")
      if (submitted._tag !== "Accepted") return
      expect((yield* ended(submitted.job.job_id)).result).toEqual({ n: 42 })
      expect((yield* runtime.submit("triple", {}))._tag).toBe("UnknownType")

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
      yield* Effect.promise(() => store.create(orphan))
      yield* Effect.promise(() => store.close())
      const t0 = Date.now()
      const job = yield* ended(orphan.job_id)
      expect(job).toMatchObject({ status: "COMPLETED", attempts: 1, result: { n: 10 } })
      expect(Date.now() - t0).toBeGreaterThanOrEqual(1500) // only after the orphan grace
    }).pipe(Effect.provide(Runtime.layerBackend({
      settings: decodeSettings({ backend: "redis", redis: { url: redis.url, prefix: "orphan" }, limits: { sweep_interval_s: 0.2 } }),
      dataDir: dir,
      lookup,
      files: filesIn(dir),
      startWorkers: true
    })))
  })
})

describe("JobsRuntime (embedded)", () => {
  it.scoped("a sweep fails a job that waited past QUEUE_TIMEOUT (no worker ran it), and says how many", () => {
    const dir = tempDir()
    const settings = decodeSettings({ backend: "embedded", workers: false, limits: { queue_timeout_s: 60, sweep_interval_s: 3600 } })
    // On the TestClock the runtime's own sweeper never fires: only these sweeps run.
    return Effect.gen(function*() {
      const runtime = yield* Runtime.JobsRuntime
      const submitted = yield* runtime.submit("double", { n: 1 })
      if (submitted._tag !== "Accepted") throw new Error(submitted._tag)
      expect(yield* runtime.sweep()).toEqual({ timedOut: 0, purged: 0, requeued: 0 })
      expect(yield* runtime.sweep(Date.now() + 61_000)).toMatchObject({ timedOut: 1 })
      expect(yield* runtime.get(submitted.job.job_id)).toMatchObject({ status: "FAILED", error_kind: "TIMEOUT" })
    }).pipe(Effect.provide(Runtime.layer({ settings, lookup, files: filesIn(dir) }).pipe(Layer.provide(Backend.layerEmbedded(path.join(dir, "store"))))))
  })

  it.effect("a store that cannot be opened fails the layer with JobStoreUnavailable (503)", () => {
    const dir = tempDir()
    // A file where the store's directory should be.
    fs.writeFileSync(path.join(dir, "store"), "")
    const settings = decodeSettings({ backend: "embedded" })
    return Effect.gen(function*() {
      const exit = yield* Effect.exit(Effect.scoped(Layer.build(Runtime.layerBackend({ settings, dataDir: path.join(dir, "store"), lookup, files: filesIn(dir) }))))
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isSuccess(exit)) return
      const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
      expect(error).toBeInstanceOf(Runtime.JobStoreUnavailable)
      expect(error?.message).toMatch(/^jobs store unavailable: /)
    })
  })
})
