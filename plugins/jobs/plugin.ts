/**
 * Plugin `jobs`: the asynchronous Jobs API (research-jobs spec) on listener `jobs` (port 9003 by
 * default) and the `files` store served beside it at `/files`. It builds the jobs runtime
 * (`runtime/`) from its config and runs workers. It owns the `JobTypes` extension point
 * (`Contract.ts`): job plugins depend on `jobs` and register their types there; types are looked
 * up when a job is submitted or delivered, so plugins set up after this one still plug in.
 *
 * The plugin does the same in every process: API routes, and workers when `workers: true`. A
 * workers-only process (`platform worker`, the worker thread) is the kernel booting this plugin
 * and its extenders from a config with `workers: true` and no listener (see `Workers.ts`).
 */
import * as path from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { definePlugin, PluginBootError } from "../../core/Plugin.ts"
import * as ExtensionPoint from "../../core/ExtensionPoint.ts"
import type { BootMode } from "../../core/Plugin.ts"
import { Extensions } from "../../core/Services.ts"
import { JobTypes } from "./JobType.ts"
import { GeoRouters, geoRouters, routersInOrder } from "./net/GeoRouting.ts"
import { JobsStorage } from "./Storage.ts"
import { type FileStore, FilesSettings, makeFileStore, uploadKey } from "./runtime/FileStore.ts"
import type { JobsRuntimeShape } from "./runtime/Runtime.ts"
import { JobsSettings } from "./runtime/Settings.ts"
import type { WorkerThread } from "./runtime/WorkerThread.ts"

/**
 * The runtime's modules (BullMQ, ioredis, the HTTP handlers), imported when the plugin is set up
 * rather than when it is declared: `platform config validate` and `--help` read this file only.
 */
const loadRuntime = Effect.promise(async () => {
  const [Bucket, Locks, Http, Runtime, Thread, RemoteGeo] = await Promise.all([
    import("./runtime/Bucket.ts"),
    import("./runtime/Locks.ts"),
    import("./runtime/Http.ts"),
    import("./runtime/Runtime.ts"),
    import("./runtime/WorkerThread.ts"),
    import("./net/RemoteGeo.ts")
  ])
  return { ...Bucket, ...Locks, ...Http, Runtime, ...Thread, ...RemoteGeo }
})
type Loaded = Effect.Effect.Success<typeof loadRuntime>

/** Config of `plugins.jobs` in platform.yaml: the runtime settings plus the file store. */
export const JobsConfig = Schema.extend(
  JobsSettings,
  Schema.Struct({
    files: Schema.optionalWith(FilesSettings, { default: () => Schema.decodeSync(FilesSettings)({}) }),
    events_heartbeat_s: Schema.optionalWith(Schema.Number.pipe(Schema.positive()).annotations({ description: "keep-alive comment interval of the SSE progress stream, seconds" }), { default: () => 15 }),
    geo_router_url: Schema.optionalWith(
      Schema.NullOr(Schema.String.pipe(Schema.pattern(/^https?:\/\/\S+$/))).annotations({
        description: "Cluster API (http://host:port) whose geo router resolves `geo` in a process that registers none itself (`platform worker`); null: the router registered in this process, if any (the worker thread gets the serving thread's on its own) (default null)"
      }),
      { default: () => null }
    ),
    geo_router_token: Schema.optionalWith(
      Schema.String.annotations({ description: "admin bearer token for geo_router_url when that API listens beyond loopback; write ${CLUSTER_ADMIN_TOKEN:-} (default \"\")" }),
      { default: () => "" }
    )
  })
).annotations({ identifier: "JobsConfig" })
export type JobsConfig = typeof JobsConfig.Type

/**
 * The storage shared with other plugins (`Storage.ts`): the file store's bucket, locks over the
 * configured jobs backend (Redis locks for redis, so every worker process and thread is
 * excluded; in-process for embedded, whose workers all run in the serving process; in-process
 * too when inspecting, which runs nothing), and stored files read back by URL.
 */
const sharedStorage = ({ makeBucket, redisLocks, inProcessLocks }: Loaded, c: JobsConfig, dataDir: string, files: FileStore, mode: BootMode): JobsStorage => ({
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

export default definePlugin({
  name: "jobs",
  version: "0.1.0",
  description: "Asynchronous Jobs API (submit, poll, list, cancel, SSE progress) with embedded or Redis/BullMQ queues and workers, plus the files store.",
  defaultListener: "jobs",
  config: JobsConfig,
  setup: (ctx) =>
    Effect.gen(function*() {
      const loaded = yield* loadRuntime
      const { routes, Runtime, startWorkerThread, remoteGeoResolver } = loaded
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
          try: () => sharedStorage(loaded, ctx.config, ctx.dataDir, files, ctx.mode),
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
          routes: routes(undefined as unknown as JobsRuntimeShape, files, { maxUploadBytes: ctx.config.files.max_upload_bytes, heartbeatMs: ctx.config.events_heartbeat_s * 1000 }),
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
})
