/**
 * The jobs runtime's two backend services, as layers: `JobStore` (job records) and `JobQueue`
 * (deliveries to workers). `layerEmbedded` keeps records in a file log under a directory and the
 * queue in this process; `layerRedis` keeps both in Redis (records in hashes, the queue in
 * BullMQ) so any process reaching it can submit or work. The runtime closes them in its own order
 * (queue, running handlers, store); the layers' finalizers close whatever it did not.
 */
import * as path from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { FileJobStore, type JobStore as JobStoreShape } from "./JobStore.ts"
import { EmbeddedQueue, type JobQueue as JobQueueShape } from "./Queue.ts"
import { RedisQueue } from "./RedisQueue.ts"
import { RedisJobStore } from "./RedisJobStore.ts"
import type { JobsSettings, RedisSettings } from "./Settings.ts"

/** The job records of this process's backend. */
export class JobStore extends Context.Tag("@platform/jobs/JobStore")<JobStore, JobStoreShape>() {}

/** The queue delivering runnable jobs to this process's workers. */
export class JobQueue extends Context.Tag("@platform/jobs/JobQueue")<JobQueue, JobQueueShape>() {}

/** `x` with a `close` that runs once (the runtime and the layer's finalizer may both call it). */
const closingOnce = <T extends { close: () => Promise<void> }>(x: T): T => {
  const close = x.close
  let closed: Promise<void> | undefined
  Object.defineProperty(x, "close", { value: () => (closed ??= close()) })
  return x
}

const scoped = <T extends { close: () => Promise<void> }, E>(open: Effect.Effect<T, E>) =>
  Effect.acquireRelease(Effect.map(open, closingOnce), (x) => Effect.promise(() => x.close()))

/** Records in `<dir>/jobs.log` (replayed at start), the queue in this process. Fails when `dir` cannot be used. */
export const layerEmbedded = (dir: string): Layer.Layer<JobStore | JobQueue, Error> =>
  Layer.merge(
    Layer.scoped(JobStore, scoped(Effect.try({ try: () => new FileJobStore(path.resolve(dir)), catch: (e) => e as Error }))),
    Layer.scoped(JobQueue, scoped(Effect.sync(() => new EmbeddedQueue())))
  )

/**
 * Records and queue in the Redis of `settings` (BullMQ, sharing the store's connection). Fails
 * when Redis does not answer within 5 s.
 */
export const layerRedis = (settings: RedisSettings): Layer.Layer<JobStore | JobQueue, Error> => {
  const store = Layer.scoped(JobStore, scoped(Effect.tryPromise({
    try: async () => {
      const r = new RedisJobStore(settings.url, settings.prefix)
      await r.ready(5000).catch(async (e) => {
        await r.close()
        throw e
      })
      return r
    },
    catch: (e) => e as Error
  })))
  const queue = Layer.scoped(JobQueue, Effect.flatMap(JobStore, (s) => scoped(Effect.sync(() => new RedisQueue(settings, s as RedisJobStore)))))
  return queue.pipe(Layer.provideMerge(store))
}

/** The backend `settings.backend` names; the embedded one under `dataDir`. */
export const layer = (settings: JobsSettings, dataDir: string): Layer.Layer<JobStore | JobQueue, Error> =>
  settings.backend === "redis" ? layerRedis(settings.redis) : layerEmbedded(dataDir)
