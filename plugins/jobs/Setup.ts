/** The `jobs` plugin's implementation, imported when the plugin is set up (see `plugin.ts`). */
import * as path from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { PluginBootError, type PluginContext } from "../../core/Plugin.ts"
import * as ExtensionPoint from "../../core/ExtensionPoint.ts"
import type { BootMode } from "../../core/Plugin.ts"
import { Extensions } from "../../core/Services.ts"
import { JobTypes } from "./JobType.ts"
import { GeoRouters, geoRouters, routersInOrder } from "./net/GeoRouting.ts"
import { JobsStorage } from "./Storage.ts"
import { remoteGeoResolver } from "./net/RemoteGeo.ts"
import type { JobsConfig } from "./plugin.ts"
import { makeBucket } from "./runtime/Bucket.ts"
import { type FileStore, makeFileStore, uploadKey } from "./runtime/FileStore.ts"
import { routes } from "./runtime/Http.ts"
import { inProcessLocks, redisLocks } from "./runtime/Locks.ts"
import * as Runtime from "./runtime/Runtime.ts"
import { startWorkerThread, type WorkerThread } from "./runtime/WorkerThread.ts"

/**
 * The storage shared with other plugins (`Storage.ts`): the file store's bucket, locks over the
 * configured jobs backend (Redis locks for redis, so every worker process and thread is
 * excluded; in-process for embedded, whose workers all run in the serving process; in-process
 * too when inspecting, which runs nothing), and stored files read back by URL.
 */
const sharedStorage = (c: JobsConfig, dataDir: string, files: FileStore, mode: BootMode): JobsStorage => ({
  id: "jobs",
  backend: c.files.backend,
  jobsBackend: c.backend,
  bucket: makeBucket(c.files, dataDir),
  locks: c.backend === "redis" && mode === "serve" ? redisLocks(c.redis.url, c.redis.prefix) : inProcessLocks(),
  readStored: async (url) => {
    const parts = new URL(url, "http://x").pathname.split("/")
    const [id, name] = [parts.at(-2) ?? "", decodeURIComponent(parts.at(-1) ?? "")]
    const opened = await files.open(id, name)
    if (!opened) return undefined
    const chunks: Array<Uint8Array> = []
    for await (const chunk of opened.body) chunks.push(chunk)
    return new Uint8Array(Buffer.concat(chunks))
  }
})

/** `setup` of the plugin: storage, the runtime over the configured backend, routes, workers in `start`. */
export const setup = (ctx: PluginContext<JobsConfig>) =>
    Effect.gen(function*() {
      const points = yield* Extensions
      const registry = points.registry(JobTypes)
      const routers = points.registry(GeoRouters)
      const files = yield* Effect.try({
        try: () =>
          makeFileStore(ctx.config.files, ctx.dataDir, () => {
            const l = ctx.listenerInfo(ctx.listener)
            // A workers-only process serves nothing: its URLs come from files.url (the API's
            // address; the serving thread sets it for its worker thread).
            return l ? `${l.url}/files` : "http://127.0.0.1:9003/files"
          }),
        catch: (e) => new PluginBootError({ reason: `files: ${(e as Error).message}` })
      })
      const storage = yield* Effect.acquireRelease(
        Effect.try({
          try: () => sharedStorage(ctx.config, ctx.dataDir, files, ctx.mode),
          catch: (e) => new PluginBootError({ reason: `files: ${(e as Error).message}` })
        }),
        (s) => Effect.promise(() => s.locks.close())
      )
      // A process without a router of its own (`platform worker`, the worker thread) resolves
      // `geo` through the Cluster API named here; a router registered in the process wins
      // (routers are tried by id: "cluster-vpn" before "remote").
      const remote = ctx.config.geo_router_url ? remoteGeoResolver(ctx.config.geo_router_url, ctx.config.geo_router_token) : undefined
      if (remote) yield* Effect.addFinalizer(() => Effect.promise(() => remote.close()))
      const extensions = [...ExtensionPoint.extend(JobsStorage, storage), ...(remote ? geoRouters({ id: "remote", resolver: remote }) : [])]
      if (ctx.mode === "inspect") {
        // Inspection must not take the store's lock from a running `platform serve`: declare the
        // routes over a runtime that is never opened (no listener serves them in this mode).
        return {
          routes: routes(undefined as unknown as Runtime.JobsRuntimeShape, files, { maxUploadBytes: ctx.config.files.max_upload_bytes, heartbeatMs: ctx.config.events_heartbeat_s * 1000 }),
          extensions,
          status: () => ({ backend: ctx.config.backend, workers: ctx.config.workers, job_types: registry.ids() })
        }
      }
      const rt = yield* Layer.build(Runtime.layerBackend({
        settings: ctx.config,
        dataDir: path.join(ctx.dataDir, "store"),
        lookup: (id) => registry.get(id),
        files
        // Workers start in `start`, once every plugin has registered its job types.
      })).pipe(
        Effect.map(Context.get(Runtime.JobsRuntime)),
        Effect.mapError((e) => new PluginBootError({ reason: `jobs store (${ctx.config.backend}): ${e.message.replace(/^jobs store unavailable: /, "")}` }))
      )
      const key = uploadKey(ctx.config.files)
      // `platform serve` with redis: workers in a thread of their own (see runtime/WorkerThread.ts).
      let inThread = ctx.config.backend === "redis" && ctx.config.workers && ctx.config.worker_thread
      // A store failing as the workers start is as fatal as before: a defect of `start`.
      const startHere = Effect.orDie(rt.startWorkers)
      const startInThread = Effect.acquireRelease(
        Effect.tryPromise(() => {
          const l = ctx.listenerInfo(ctx.listener)
          // The thread boots `jobs` and its extenders only: it resolves `geo` through this
          // process's router (its listener), unless the config names one.
          const geoUrl = routersInOrder(routers).map((r) => r.url?.()).find((u) => u !== undefined)
          return startWorkerThread(ctx.source, l ? `${l.url}/files` : undefined, geoUrl)
        }).pipe(
          Effect.map((t): WorkerThread | undefined => t),
          // The API keeps serving: its own event loop runs the workers instead.
          Effect.catchAll((e) =>
            Effect.logError(`worker thread did not start (${(e.error as Error)?.message ?? e.error}); running workers on the API thread`).pipe(
              Effect.zipRight(Effect.suspend(() => {
                inThread = false
                return startHere
              })),
              Effect.as(undefined)
            )
          )
        ),
        (t) => Effect.promise(() => t?.stop() ?? Promise.resolve())
      ).pipe(Effect.asVoid)
      return {
        routes: routes(rt, files, {
          ...(key ? { uploadKey: key } : {}),
          maxUploadBytes: ctx.config.files.max_upload_bytes,
          heartbeatMs: ctx.config.events_heartbeat_s * 1000
        }),
        extensions,
        start: inThread ? startInThread : ctx.config.workers ? startHere : Effect.void,
        status: () => ({
          backend: ctx.config.backend,
          workers: ctx.config.workers,
          ...(ctx.config.workers ? { workers_in: inThread ? "thread" : "api thread" } : {}),
          job_types: registry.ids()
        })
      }
    })
