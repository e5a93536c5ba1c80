/**
 * The boot of the plugins named in `platform.yaml`: the kernel part of each entry decoded, the
 * plugin modules imported, the plugins ordered by `dependsOn` (`orderPlugins`), every plugin's
 * config decoded before anything runs, their `setup` run in that order, and their contributions
 * (routes, extensions, graph operations, MCP tools, `start` effects) registered. What this
 * yields, a `Kernel`, is served and run by `Kernel.ts` (layers, `run`, `launch`).
 *
 * Boot errors (`BootError`) name the plugin and the config path; config errors carry the file
 * position (see `Config.ts`). A plugin failing with `PluginUnavailable` is reported and skipped
 * (as are plugins depending on it); the others keep serving.
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as path from "node:path"
import type { LoadedConfig } from "./Config.ts"
import { ConfigError, ConfigErrors, issuesToErrors, PluginEntry } from "./Config.ts"
import { mcpRoutes } from "./Mcp.ts"
import type { BootMode, Contributions, ListenerInfo, PluginDefinition } from "./Plugin.ts"
import { BootError, importPlugin } from "./PluginLoader.ts"
import { DuplicateContribution } from "./Registry.ts"
import type { MountedRoute } from "./Server.ts"
import { ROOT } from "./Paths.ts"
import { Extensions, GraphOpRegistry, McpToolRegistry, PlatformInfo } from "./Services.ts"

/** Version of the platform (package.json). */
export const VERSION: string = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")).version

/** Where a plugin stands after boot. */
export type PluginState = "running" | "unavailable" | "disabled"

/** One row of `platform plugins list`. */
export interface PluginStatus {
  readonly name: string
  readonly version: string | null
  readonly description: string | null
  readonly source: string
  readonly listener: string | null
  readonly status: PluginState
  readonly reason?: string
  readonly dependsOn: ReadonlyArray<string>
  readonly contributions: {
    readonly routes: number
    readonly graphOps: ReadonlyArray<string>
    readonly mcpTools: ReadonlyArray<string>
    /** Ids registered into each extension point, under the point's `name` (`jobTypes`). */
    readonly [point: string]: number | ReadonlyArray<string>
  }
  readonly details?: Record<string, unknown>
}

/** A booted (not yet serving) platform. */
export interface Kernel {
  readonly loaded: LoadedConfig
  readonly plugins: ReadonlyArray<PluginStatus>
  readonly routes: ReadonlyMap<string, ReadonlyArray<MountedRoute>>
  readonly extensions: Extensions
  readonly graphOps: GraphOpRegistry
  readonly mcpTools: McpToolRegistry
  readonly context: Context.Context<Extensions | GraphOpRegistry | McpToolRegistry | PlatformInfo>
  readonly starts: ReadonlyArray<Effect.Effect<void, never, any>>
  /** Bound listeners, filled by `serve`. */
  readonly listeners: Map<string, ListenerInfo>
}

const KERNEL_KEYS = new Set(["enabled", "listener", "module"])

const NO_CONTRIBUTIONS: PluginStatus["contributions"] = { routes: 0, graphOps: [], mcpTools: [] }

/** Orders plugins so that each comes after its `dependsOn`; fails on a missing one or a cycle. */
export const orderPlugins = <T extends { name: string; dependsOn: ReadonlyArray<string> }>(
  plugins: ReadonlyArray<T>,
  disabled: ReadonlySet<string> = new Set()
): Array<T> => {
  const byName = new Map(plugins.map((p) => [p.name, p]))
  for (const p of plugins) {
    for (const d of p.dependsOn) {
      if (!byName.has(d)) {
        throw BootError.of(
          disabled.has(d)
            ? `depends on plugin "${d}", which is disabled in platform.yaml (plugins.${d}.enabled)`
            : `depends on plugin "${d}", which is not configured (add plugins.${d} to platform.yaml)`,
          p.name
        )
      }
    }
  }
  const out: Array<T> = []
  const state = new Map<string, "visiting" | "done">()
  const visit = (p: T, trail: Array<string>) => {
    const s = state.get(p.name)
    if (s === "done") return
    if (s === "visiting") {
      const cycle = [...trail.slice(trail.indexOf(p.name)), p.name]
      throw BootError.of(`dependency cycle between plugins: ${cycle.join(" -> ")}`)
    }
    state.set(p.name, "visiting")
    for (const d of p.dependsOn) visit(byName.get(d)!, [...trail, p.name])
    state.set(p.name, "done")
    out.push(p)
  }
  for (const p of plugins) visit(p, [])
  return out
}

const locateError = (loaded: LoadedConfig, p: ReadonlyArray<PropertyKey>, detail: string, plugin: string) => {
  const pos = loaded.locate(p)
  return ConfigError.at(loaded.file, pos?.line, pos?.column, p.map(String).join("."), detail, plugin)
}

/** What to boot. */
export interface BootOptions {
  /** `serve` (the default) or `inspect` (nothing is started; see `BootMode`). */
  readonly mode?: BootMode
  /**
   * Boot only this plugin and the plugins depending on it, directly or not (its extenders): what a
   * process serving one plugin's role needs, e.g. the `jobs` plugin's workers and the job types
   * registered into it. The other entries of `platform.yaml` are left out.
   */
  readonly focus?: string
}

/** The names of `root` and every candidate depending on it, directly or through others. */
const withDependents = (root: string, candidates: ReadonlyArray<{ name: string; dependsOn: ReadonlyArray<string> }>): ReadonlySet<string> => {
  const picked = new Set([root])
  for (let grew = true; grew;) {
    grew = false
    for (const c of candidates) {
      if (!picked.has(c.name) && c.dependsOn.some((d) => picked.has(d))) {
        picked.add(c.name)
        grew = true
      }
    }
  }
  return picked
}

/**
 * Boots the plugins of a loaded config inside the current scope (resources live until it closes),
 * registering their contributions into the registries of its context (`layerRegistries`).
 * Fails with `BootError`, `ConfigErrors` or `DuplicateContribution`.
 */
export const boot = (
  loaded: LoadedConfig,
  options: BootOptions = {}
): Effect.Effect<Kernel, BootError | ConfigErrors | DuplicateContribution, Scope.Scope | Extensions | GraphOpRegistry | McpToolRegistry> =>
  Effect.gen(function* () {
    const mode = options.mode ?? "serve"
    const { config } = loaded
    const dataDir = path.resolve(loaded.dir, config.data_dir)
    const listeners = new Map<string, ListenerInfo>()
    const listenerNames = new Set(config.listeners.map((l) => l.name))
    const extensions = yield* Extensions
    const graphOps = yield* GraphOpRegistry
    const mcpTools = yield* McpToolRegistry
    const context = Context.make(Extensions, extensions).pipe(
      Context.add(GraphOpRegistry, graphOps),
      Context.add(McpToolRegistry, mcpTools),
      Context.add(PlatformInfo, { dataDir, configDir: loaded.dir, listener: (n: string) => listeners.get(n) })
    )

    // 1. Kernel part of each entry, then the plugin modules.
    const statuses = new Map<string, PluginStatus>()
    const candidates: Array<{ name: string; dependsOn: ReadonlyArray<string>; def: PluginDefinition; source: string; listener: string; section: Record<string, unknown> }> = []
    const disabled = new Set<string>()
    for (const [name, entry] of Object.entries(config.plugins)) {
      const kernelPart = Object.fromEntries(Object.entries(entry).filter(([k]) => KERNEL_KEYS.has(k)))
      const decoded = Schema.decodeUnknownEither(PluginEntry)(kernelPart, { errors: "all" })
      if (Either.isLeft(decoded)) return yield* Effect.fail(ConfigErrors.of(issuesToErrors(loaded, decoded.left, ["plugins", name], name)))
      const { enabled, listener, module } = decoded.right
      if (!enabled) {
        disabled.add(name)
        statuses.set(name, { name, version: null, description: null, source: module ?? "built-in", listener: listener ?? null, status: "disabled", dependsOn: [], contributions: NO_CONTRIBUTIONS })
        continue
      }
      const { def, source } = yield* Effect.tryPromise({ try: () => importPlugin(name, module, loaded.dir), catch: (e) => e as BootError })
      const listenerName = listener ?? def.defaultListener
      if (!listenerName) {
        return yield* Effect.fail(ConfigErrors.of([locateError(loaded, ["plugins", name], `plugin ${name} needs a listener (set plugins.${name}.listener)`, name)]))
      }
      if (!listenerNames.has(listenerName)) {
        return yield* Effect.fail(ConfigErrors.of([locateError(loaded, listener ? ["plugins", name, "listener"] : ["plugins", name], `plugin ${name}: listener "${listenerName}" is not declared under listeners (declared: ${[...listenerNames].join(", ") || "none"})`, name)]))
      }
      const section = Object.fromEntries(Object.entries(entry).filter(([k]) => !KERNEL_KEYS.has(k)))
      candidates.push({ name, dependsOn: def.dependsOn, def, source, listener: listenerName, section })
    }

    const focused = options.focus === undefined ? undefined : withDependents(options.focus, candidates)
    if (focused && !candidates.some((c) => c.name === options.focus)) {
      return yield* Effect.fail(BootError.of(`is not enabled in platform.yaml (plugins.${options.focus})`, options.focus))
    }
    const ordered = yield* Effect.try({
      try: () => orderPlugins(focused ? candidates.filter((c) => focused.has(c.name)) : candidates, disabled),
      catch: (e) => e as BootError
    })

    // 2. Decode every config before running anything: all config errors at once.
    const decodedConfigs = new Map<string, unknown>()
    const configErrors: Array<ConfigError> = []
    for (const c of ordered) {
      const r = Schema.decodeUnknownEither(c.def.config)(c.section, { errors: "all", onExcessProperty: "error" })
      if (Either.isLeft(r)) configErrors.push(...issuesToErrors(loaded, r.left, ["plugins", c.name], c.name))
      else decodedConfigs.set(c.name, r.right)
    }
    if (configErrors.length) return yield* Effect.fail(ConfigErrors.of(configErrors))

    // 3. Setup in dependency order; register contributions.
    const routes = new Map<string, Array<MountedRoute>>(config.listeners.map((l) => [l.name, []]))
    const routeOwners = new Map<string, string>()
    const starts: Array<Effect.Effect<void, never, any>> = []
    const unavailable = new Set<string>()
    // One method and path per listener, whoever contributes it (a plugin or the kernel itself).
    const mount = (listener: string, plugin: string, route: MountedRoute["route"], label = plugin) => {
      const key = `${listener} ${route.method} ${route.path}`
      const owner = routeOwners.get(key)
      if (owner) return Effect.fail(new DuplicateContribution({ kind: `route on listener ${listener}`, id: `${route.method} ${route.path}`, first: owner, second: label }))
      routeOwners.set(key, label)
      routes.get(listener)!.push({ plugin, route })
      return Effect.void
    }
    const markUnavailable = (c: (typeof ordered)[number], base: Omit<PluginStatus, "status" | "contributions">, reason: string) => {
      unavailable.add(c.name)
      statuses.set(c.name, { ...base, status: "unavailable", reason, contributions: NO_CONTRIBUTIONS })
      return Effect.logWarning(`plugin ${c.name} unavailable: ${reason}`).pipe(Effect.annotateLogs({ plugin: c.name }))
    }
    for (const c of ordered) {
      const base = { name: c.name, version: c.def.version, description: c.def.description, source: c.source, listener: c.listener, dependsOn: c.def.dependsOn }
      const missingDep = c.def.dependsOn.find((d) => unavailable.has(d))
      if (missingDep) {
        yield* markUnavailable(c, base, `depends on plugin ${missingDep}, which is unavailable`)
        continue
      }
      const pluginDir = path.join(dataDir, c.name)
      fs.mkdirSync(pluginDir, { recursive: true })
      const exit = yield* c.def.setup({
        name: c.name,
        mode,
        config: decodedConfigs.get(c.name),
        dataDir: pluginDir,
        listener: c.listener,
        listenerInfo: (n) => listeners.get(n),
        configDir: loaded.dir,
        source: { file: loaded.file, text: loaded.text }
      }).pipe(Effect.provide(context), Effect.annotateLogs({ plugin: c.name }), Effect.exit)
      if (Exit.isFailure(exit)) {
        const failure = Cause.failureOption(exit.cause)
        if (Option.isSome(failure) && failure.value._tag === "PluginUnavailable") {
          yield* markUnavailable(c, base, failure.value.reason)
          continue
        }
        const reason = Option.isSome(failure) ? failure.value.reason : Cause.pretty(exit.cause).split("\n")[0]
        return yield* Effect.fail(BootError.of(`setup failed: ${reason}`, c.name))
      }
      const contrib: Contributions = exit.value
      for (const route of contrib.routes ?? []) yield* mount(c.listener, c.name, route)
      const extended: Record<string, Array<string>> = {}
      for (const { point, value } of contrib.extensions ?? []) {
        const id = point.idOf(value)
        yield* extensions.registry(point).register(c.name, id, value)
        ;(extended[point.name] ??= []).push(id)
      }
      for (const op of contrib.graphOps ?? []) yield* graphOps.register(c.name, op.name, op)
      for (const tool of contrib.mcpTools ?? []) yield* mcpTools.register(c.name, `${c.listener}/${tool.name}`, { ...tool, listener: c.listener })
      if (contrib.start) starts.push(contrib.start.pipe(Effect.provide(context), Effect.annotateLogs({ plugin: c.name })))
      statuses.set(c.name, {
        ...base,
        status: "running",
        contributions: {
          routes: contrib.routes?.length ?? 0,
          ...extended,
          graphOps: (contrib.graphOps ?? []).map((g) => g.name),
          mcpTools: (contrib.mcpTools ?? []).map((t) => t.name)
        },
        ...(contrib.status ? { details: contrib.status() } : {})
      })
    }
    // Kernel routes: the MCP endpoint of every listener that has tools.
    for (const l of config.listeners) {
      const tools = mcpTools.values().filter((t) => t.value.listener === l.name).map((t) => t.value)
      if (tools.length === 0) continue
      for (const route of mcpRoutes(tools, { name: `platform/${l.name}`, version: VERSION })) {
        yield* mount(l.name, "kernel", route, "kernel (MCP endpoint)")
      }
    }
    const plugins = Object.keys(config.plugins).filter((n) => !focused || focused.has(n)).map((n) => statuses.get(n)!).filter(Boolean)
    return { loaded, plugins, routes, extensions, graphOps, mcpTools, context, starts, listeners } satisfies Kernel
  })
