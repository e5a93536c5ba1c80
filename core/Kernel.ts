/**
 * The kernel: boots the plugins named in `platform.yaml` (`Boot.ts`: ordered by `dependsOn`,
 * configs decoded, `setup` run, contributions registered) and runs what they make: the layers of
 * a role (`layer`, `layerServe`, `layerStart`), serving each listener, building a role in this
 * process (`run`, `launch`, `startPlatform`, `inspect`) and reading the config for it.
 *
 * Every name of `Boot.ts` that callers use is re-exported here, so `core/Kernel.ts` stays the one
 * import for the platform's boot and run.
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as path from "node:path"
import type { LoadedConfig } from "./Config.ts"
import { loadConfig, parseConfig, type ConfigErrors } from "./Config.ts"
import * as Logging from "./Logging.ts"
import type { ListenerInfo } from "./Plugin.ts"
import { BootError, importPlugin } from "./PluginLoader.ts"
import type { DuplicateContribution } from "./Registry.ts"
import { ROOT } from "./Paths.ts"
import { serveListener } from "./Listener.ts"
import { makeApp } from "./Server.ts"
import { layerRegistries } from "./Services.ts"
import { boot, VERSION, type BootOptions, type Kernel } from "./Boot.ts"

/** Root of this repository (see `Paths.ts`; built-in plugins live in `plugins/<name>/plugin.ts`). */
export { ROOT }

export { BootError, importPlugin }
export { boot, orderPlugins, VERSION, type BootOptions, type Kernel, type PluginState, type PluginStatus } from "./Boot.ts"

/** Opens every listener of a booted kernel and runs the plugins' `start` effects (scoped). */
export const serve = (kernel: Kernel): Effect.Effect<ReadonlyMap<string, ListenerInfo>, unknown, Scope.Scope> =>
  Effect.gen(function* () {
    const { config } = kernel.loaded
    for (const l of config.listeners) {
      const app = makeApp(l.name, kernel.routes.get(l.name) ?? [], { title: "platform", version: VERSION }, l.limits)
      const info = yield* serveListener(l.name, l.host, l.port, app, config.shutdown_grace_ms, kernel.routes.get(l.name) ?? [], l.limits).pipe(
        Effect.mapError((e) => BootError.of(`listener ${l.name} (${l.host}:${l.port}) could not start: ${String((e as { cause?: unknown }).cause ?? e)}`))
      )
      kernel.listeners.set(l.name, info)
      yield* Effect.logInfo(`listener ${l.name} serving on ${info.url}`).pipe(
        Effect.annotateLogs({ listener: l.name, plugins: [...new Set((kernel.routes.get(l.name) ?? []).map((r) => r.plugin))].join(",") })
      )
    }
    yield* startAll(kernel)
    return kernel.listeners as ReadonlyMap<string, ListenerInfo>
  })

/** The platform booted in this process: what `layer` provides. */
export class Platform extends Context.Tag("@platform/core/Platform")<Platform, Kernel>() {}

/** Boots the plugins of `loaded`; their resources live as long as the layer. */
export const layer = (loaded: LoadedConfig, options: BootOptions = {}): Layer.Layer<Platform, BootError | ConfigErrors | DuplicateContribution> =>
  Layer.scoped(Platform, boot(loaded, options)).pipe(Layer.provide(layerRegistries))

/** `platform serve`: opens every listener of the booted platform and runs the plugins' `start`. */
export const layerServe: Layer.Layer<never, unknown, Platform> = Layer.scopedDiscard(Effect.flatMap(Platform, serve))

/** Forks every plugin's `start` effect in the current scope (interrupted when it closes). */
export const startAll = (kernel: Kernel): Effect.Effect<void, never, Scope.Scope> =>
  Effect.forEach(kernel.starts, (s) => Effect.forkScoped(s as Effect.Effect<void>), { discard: true })

/** A process serving no HTTP (`platform worker`): runs the plugins' `start` effects only. */
export const layerStart: Layer.Layer<never, never, Platform> = Layer.scopedDiscard(Effect.flatMap(Platform, startAll))

/** The logger of `loaded`'s `log` settings. */
export const layerLogger = (loaded: LoadedConfig) => Logging.layer(loaded.config.log)

/** Reads the config from a YAML text (tests) or a file (`file`, else cosmiconfig search from `cwd`). */
export const readConfig = async (options: { yaml?: string; file?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<LoadedConfig> => {
  const cwd = options.cwd ?? process.cwd()
  return options.yaml !== undefined
    ? parseConfig(path.join(cwd, options.file ?? "platform.yaml"), options.yaml, options.env ?? process.env)
    : await loadConfig({ path: options.file, cwd, env: options.env })
}

/** A role's layers built in this process, stoppable (tests, the jobs worker thread). */
export interface Running<A> {
  readonly value: A
  /** Releases everything the layer acquired, in reverse order; idempotent. */
  stop(): Promise<void>
}

/**
 * Builds `layer` (with the config's logger) and resolves once it is up with what `read` takes
 * from the booted platform; rejects with the layer's failure (`ConfigErrors`, `BootError`, ...).
 */
export const run = async <A>(loaded: LoadedConfig, role: Layer.Layer<Platform, unknown>, read: (kernel: Kernel) => A): Promise<Running<A>> => {
  const scope = Effect.runSync(Scope.make())
  const logger = layerLogger(loaded)
  const exit = await Effect.runPromiseExit(
    Layer.buildWithScope(role, scope).pipe(Effect.map((ctx) => read(Context.get(ctx, Platform))), Effect.provide(logger))
  )
  if (Exit.isFailure(exit)) {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    throw Cause.squash(exit.cause)
  }
  let stopped: Promise<void> | undefined
  return {
    value: exit.value,
    stop() {
      stopped ??= Effect.runPromise(Scope.close(scope, Exit.void).pipe(Effect.provide(logger)))
      return stopped
    }
  }
}

/**
 * Runs `role` until SIGINT/SIGTERM (the CLI's `serve` and `worker`), then writes
 * "received SIGNAL, <stopping>" to stderr and releases it. Resolves once stopped; rejects with
 * the failure of the build (`onReady` is called once it is up).
 */
export const launch = async (loaded: LoadedConfig, role: Layer.Layer<Platform, unknown>, stopping: string, onReady: (kernel: Kernel) => void = () => {}): Promise<void> => {
  const running = await run(loaded, role, (kernel) => kernel)
  onReady(running.value)
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      process.off("SIGINT", onInt)
      process.off("SIGTERM", onTerm)
      process.stderr.write(`received ${signal}, ${stopping}\n`)
      running.stop().then(resolve, resolve)
    }
    const onInt = () => stop("SIGINT")
    const onTerm = () => stop("SIGTERM")
    process.on("SIGINT", onInt)
    process.on("SIGTERM", onTerm)
  })
}

/** A platform running in this process (tests and `platform serve`). */
export interface RunningPlatform {
  readonly kernel: Kernel
  /** Base URL (`http://127.0.0.1:PORT`) of a listener; throws for an unknown name. */
  url(listener: string): string
  /** Graceful stop: listeners first, then plugin resources. */
  stop(): Promise<void>
}

/** The layers of `platform serve` for a loaded config. */
export const serveLayer = (loaded: LoadedConfig): Layer.Layer<Platform, unknown> => layerServe.pipe(Layer.provideMerge(layer(loaded)))

/**
 * Boots and serves a platform from a YAML text (tests) or a file (`file`, else cosmiconfig
 * search from `cwd`): `serveLayer`. Rejects with `ConfigErrors`, `BootError` or `DuplicateContribution`.
 */
export const startPlatform = async (options: { yaml?: string; file?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<RunningPlatform> => {
  const loaded = await readConfig(options)
  const running = await run(loaded, serveLayer(loaded), (kernel) => kernel)
  const kernel = running.value
  return {
    kernel,
    url(listener) {
      const l = kernel.listeners.get(listener)
      if (!l) throw new Error(`no listener named ${listener}`)
      return l.url
    },
    stop: running.stop
  }
}

/** Boots without serving (CLI inspection: `plugins list`, `routes`), then releases everything. */
export const inspect = async (options: { file?: string; cwd?: string }): Promise<Kernel> => {
  const loaded = await loadConfig({ path: options.file, cwd: options.cwd })
  // Quiet unless PLATFORM_LOG_LEVEL asks: the command's output is the table, not boot logs.
  const quiet: LoadedConfig = { ...loaded, config: { ...loaded.config, log: { ...loaded.config.log, level: "error" } } }
  const running = await run(quiet, layer(loaded, { mode: "inspect" }), (kernel) => kernel)
  await running.stop()
  return running.value
}
