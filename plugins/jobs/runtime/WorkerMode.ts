/**
 * "Workers only" mode for `platform worker`: boots the kernel's plugins (so every job type is
 * registered) without opening any listener, and runs the plugins' `start` effects, which for the
 * `jobs` plugin means workers consuming the configured Redis queue. Several such processes, on
 * any machines reaching the same Redis, share the work.
 */
import { Cause, Effect, Exit, Scope } from "effect"
import { loadConfig, parseConfig } from "../../../core/Config.ts"
import { boot } from "../../../core/Kernel.ts"
import * as Logging from "../../../core/Logging.ts"
import { JobTypes } from "../JobType.ts"

/** Environment variable the `jobs` plugin reads to pick its role (`worker`: no routes, workers only). */
export const ROLE_ENV = "PLATFORM_JOBS_ROLE"

/**
 * Environment variable giving a workers-only process the download base of the files store when
 * `files.url` is not set (the serving thread passes its own listener's `/files` to its worker thread).
 */
export const FILES_URL_ENV = "PLATFORM_JOBS_FILES_URL"

/** Environment variable overriding `limits.worker_concurrency` of the `jobs` plugin (worker processes). */
export const CONCURRENCY_ENV = "PLATFORM_JOBS_CONCURRENCY"

/** A running workers-only process. */
export interface RunningWorkers {
  /** Job types this process can run. */
  readonly jobTypes: ReadonlyArray<string>
  /** Stops the workers: running attempts go back to QUEUED for another worker, then connections close. */
  stop(): Promise<void>
}

/**
 * Boots the platform from `yaml` (a platform.yaml text) or `file` (else the config found from
 * `cwd`) with the `jobs` plugin in worker role; `concurrency` overrides `worker_concurrency`. Rejects with the kernel's `ConfigErrors` /
 * `BootError`, or a `BootError` naming `jobs` when its backend is not `redis`.
 */
export const runWorkers = async (
  options: { yaml?: string; file?: string; cwd?: string; env?: NodeJS.ProcessEnv; concurrency?: number } = {}
): Promise<RunningWorkers> => {
  process.env[ROLE_ENV] = "worker"
  if (options.concurrency) process.env[CONCURRENCY_ENV] = String(options.concurrency)
  const cwd = options.cwd ?? process.cwd()
  const loaded = options.yaml !== undefined
    ? parseConfig(`${cwd}/${options.file ?? "platform.yaml"}`, options.yaml, options.env ?? process.env)
    : await loadConfig({ path: options.file, cwd, env: options.env })
  const scope = Effect.runSync(Scope.make())
  const logger = Logging.layer(loaded.config.log)
  const exit = await Effect.runPromiseExit(
    Effect.gen(function*() {
      const kernel = yield* boot(loaded, "worker")
      if (!kernel.plugins.some((p) => p.name === "jobs" && p.status === "running")) {
        return yield* Effect.fail(new Error("platform worker: plugin jobs is not enabled or not running"))
      }
      for (const s of kernel.starts) yield* Effect.forkScoped(s as Effect.Effect<void>)
      return kernel
    }).pipe(Scope.extend(scope), Effect.provide(logger))
  )
  if (Exit.isFailure(exit)) {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    throw Cause.squash(exit.cause)
  }
  let stopped: Promise<void> | undefined
  return {
    jobTypes: exit.value.extensions.registry(JobTypes).ids(),
    stop() {
      stopped ??= Effect.runPromise(Scope.close(scope, Exit.void).pipe(Effect.provide(logger)))
      return stopped
    }
  }
}
