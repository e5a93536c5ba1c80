/**
 * The workers-only role of the `jobs` plugin (`platform worker`, and the worker thread of
 * `platform serve` on redis): the kernel boots `jobs` and the plugins extending it (the job types),
 * none other, opens no listener and runs their `start`, which for `jobs` is its workers consuming
 * the Redis queue. Several such processes, on any machines reaching the same Redis, share the work.
 *
 * The role is a config the process boots, not a flag a plugin reads: `workers: true` on the
 * event loop of this process, with the caller's concurrency and files URL.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { LoadedConfig } from "../../core/Config.ts"
import * as Kernel from "../../core/Kernel.ts"
import { JobTypes } from "./JobType.ts"

/** What a workers-only process may set besides its config. */
export interface WorkerOptions {
  /** Jobs run at once (overrides `limits.worker_concurrency`). */
  readonly concurrency?: number
  /** Download base of stored files when `files.url` is not set (the serving thread's `/files`). */
  readonly filesUrl?: string
  /** Geo router to resolve through when `geo_router_url` is not set (the serving thread's). */
  readonly geoRouterUrl?: string
}

/**
 * The config a workers-only process boots: `plugins.jobs` with workers on this event loop.
 * Throws `BootError` naming `jobs` when its backend is not `redis` (the embedded queue lives in
 * the serving process) or when it is not enabled.
 */
export const workerConfig = (loaded: LoadedConfig, options: WorkerOptions = {}): LoadedConfig => {
  const entry = loaded.config.plugins.jobs as Record<string, any> | undefined
  if (!entry || entry.enabled === false) throw Kernel.BootError.of("platform worker: plugin jobs is not enabled", "jobs")
  if ((entry.backend ?? "embedded") !== "redis") {
    throw Kernel.BootError.of("platform worker needs plugins.jobs.backend: redis (the embedded queue lives inside the serving process)", "jobs")
  }
  const jobs = {
    ...entry,
    workers: true,
    worker_thread: false,
    ...(options.concurrency ? { limits: { ...entry.limits, worker_concurrency: options.concurrency } } : {}),
    ...(options.filesUrl && !entry.files?.url ? { files: { ...entry.files, url: options.filesUrl } } : {}),
    ...(options.geoRouterUrl && !entry.geo_router_url ? { geo_router_url: options.geoRouterUrl } : {})
  }
  return { ...loaded, config: { ...loaded.config, plugins: { ...loaded.config.plugins, jobs } } }
}

/** Runs the `start` of `jobs` and its extenders; fails when `jobs` did not come up (unavailable). */
const layerStart = Layer.scopedDiscard(Effect.gen(function*() {
  const kernel = yield* Kernel.Platform
  const jobs = kernel.plugins.find((p) => p.name === "jobs")
  if (jobs?.status !== "running") {
    return yield* Effect.fail(Kernel.BootError.of(`platform worker: plugin jobs is not running${jobs?.reason ? ` (${jobs.reason})` : ""}`, "jobs"))
  }
  yield* Kernel.startAll(kernel)
}))

/** The layers of a workers-only process: `jobs` and its extenders booted, their `start` run. */
export const layer = (loaded: LoadedConfig, options: WorkerOptions = {}): Layer.Layer<Kernel.Platform, unknown> =>
  layerStart.pipe(Layer.provideMerge(Kernel.layer(workerConfig(loaded, options), { focus: "jobs" })))

/** Job types a booted workers-only process runs. */
export const jobTypesOf = (kernel: Kernel.Kernel): ReadonlyArray<string> => kernel.extensions.registry(JobTypes).ids()

/** A running workers-only process. */
export interface RunningWorkers {
  /** Job types this process can run. */
  readonly jobTypes: ReadonlyArray<string>
  /** Stops the workers: running attempts go back to QUEUED for another worker, then connections close. */
  stop(): Promise<void>
}

/**
 * Runs `layer` in this process from `yaml` (a platform.yaml text) or `file` (else the config
 * found from `cwd`). Rejects with the kernel's `ConfigErrors` / `BootError`.
 */
export const runWorkers = async (
  options: { yaml?: string; file?: string; cwd?: string; env?: NodeJS.ProcessEnv } & WorkerOptions = {}
): Promise<RunningWorkers> => {
  const loaded = await Kernel.readConfig(options)
  const running = await Kernel.run(loaded, layer(loaded, options), jobTypesOf)
  return { jobTypes: running.value, stop: running.stop }
}
