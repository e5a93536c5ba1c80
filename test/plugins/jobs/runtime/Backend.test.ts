import * as fs from "node:fs"
import * as path from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Backend from "../../../../plugins/jobs/runtime/Backend.ts"
import { EmbeddedQueue } from "../../../../plugins/jobs/runtime/Queue.ts"
import { RedisQueue } from "../../../../plugins/jobs/runtime/RedisQueue.ts"
import { RedisJobStore } from "../../../../plugins/jobs/runtime/RedisJobStore.ts"
import { decodeSettings } from "../../../../plugins/jobs/runtime/Settings.ts"
import { startRedis, tempDir, type TestRedis } from "../support.ts"

/** Builds `layer` in a new scope: its services and the scope's close. */
const build = async (layer: Layer.Layer<Backend.JobStore | Backend.JobQueue, Error>) => {
  const scope = Effect.runSync(Scope.make())
  const services = await Effect.runPromise(Layer.buildWithScope(layer, scope))
  return {
    store: Context.get(services, Backend.JobStore),
    queue: Context.get(services, Backend.JobQueue),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

let redis: TestRedis
beforeAll(async () => {
  redis = await startRedis()
})
afterAll(async () => {
  await redis?.stop()
})

describe("jobs backend layers", () => {
  it("layerEmbedded: the file log under its directory and the in-process queue, released with the scope", async () => {
    const dir = tempDir()
    const b = await build(Backend.layer(decodeSettings({ backend: "embedded" }), dir))
    expect(b.queue).toBeInstanceOf(EmbeddedQueue)
    expect(await b.store.active()).toEqual([])
    expect(fs.existsSync(path.join(dir, "jobs.lock"))).toBe(true)
    await b.store.close() // the runtime closes first; the finalizer's close is then a no-op
    await b.close()
    expect(fs.existsSync(path.join(dir, "jobs.lock"))).toBe(false)
  })

  it("layerRedis: records and the BullMQ queue in one Redis", async () => {
    const b = await build(Backend.layer(decodeSettings({ backend: "redis", redis: { url: redis.url, prefix: "bk" } }), tempDir()))
    expect(b.store).toBeInstanceOf(RedisJobStore)
    expect(b.queue).toBeInstanceOf(RedisQueue)
    expect(await b.store.active()).toEqual([])
    await b.close()
  }, 20_000)
})
