/**
 * The plugin contract (Backstage-style): one `plugin.ts` per plugin exports
 * `definePlugin({ name, version, dependsOn, config, setup })`.
 *
 * Boot order: the kernel loads enabled plugins, orders them by `dependsOn`, decodes each
 * plugin's section of `platform.yaml` (everything but `enabled`, `listener`, `module`) with
 * `config`, then runs `setup` in a scope that lives as long as the platform. `setup` returns the
 * plugin's contributions; after every plugin is registered the kernel runs each `start` effect
 * (forked in the platform scope), then opens the listeners.
 *
 * A plugin that cannot run here (missing data file, missing binary) fails `setup` with
 * `PluginUnavailable`: the kernel logs one line, lists it as `unavailable`, and keeps booting.
 * Any other failure is a boot error naming the plugin.
 */
import type * as Scope from "effect/Scope"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { GraphOperation, McpTool } from "./Contribution.ts"
import type { Extension } from "./ExtensionPoint.ts"
import type { Route } from "./Route.ts"
import type { KernelServices } from "./Services.ts"

/** A listener as bound: `url` is `http://host:port` with the real port (also when 0 was asked). */
export interface ListenerInfo {
  readonly name: string
  readonly host: string
  readonly port: number
  readonly url: string
}

/**
 * Why the kernel boots: `serve` (what the plugin contributes is used: `platform serve`, and a
 * workers-only process, which boots only the plugins it needs), `inspect` (CLI inspection:
 * `plugins list`, `routes`, `config validate`; nothing is served or started, so a plugin must not
 * take exclusive resources then).
 */
export type BootMode = "serve" | "inspect"

/** What the kernel hands a plugin's `setup`. */
export interface PluginContext<C> {
  readonly name: string
  readonly mode: BootMode
  readonly config: C
  /** `<data_dir>/<plugin name>`, created before `setup` runs. */
  readonly dataDir: string
  /** Listener name this plugin mounts on. Its bound address is known once `start` runs. */
  readonly listener: string
  /** Resolves the bound address of any listener; available from `start` on. */
  readonly listenerInfo: (name: string) => ListenerInfo | undefined
  /** Directory of the config file, for resolving relative paths in the plugin's config. */
  readonly configDir: string
  /**
   * The platform config this kernel booted from: its path and text as read. For plugins that
   * launch part of the platform elsewhere (the `jobs` plugin's worker thread).
   */
  readonly source: { readonly file: string; readonly text: string }
}

/** Everything a plugin contributes. All members optional. */
export interface Contributions {
  readonly routes?: ReadonlyArray<Route>
  /** Values registered into other plugins' extension points (`ExtensionPoint.extend`). */
  readonly extensions?: ReadonlyArray<Extension>
  readonly graphOps?: ReadonlyArray<GraphOperation>
  readonly mcpTools?: ReadonlyArray<McpTool>
  /** Background work started after all plugins registered; interrupted at shutdown. */
  readonly start?: Effect.Effect<void, never, Scope.Scope | KernelServices>
  /** Extra plugin status facts shown by `platform plugins list` (e.g. engines available). */
  readonly status?: () => Record<string, unknown>
}

/** A plugin definition; `C` is the decoded config type. */
export interface PluginDefinition<C = any> {
  readonly _tag: "PluginDefinition"
  /** kebab-case; also the folder name under `plugins/` and the key under `plugins:`. */
  readonly name: string
  readonly version: string
  readonly description: string
  readonly dependsOn: ReadonlyArray<string>
  /** Listener used when the config entry names none. */
  readonly defaultListener?: string
  readonly config: Schema.Schema<C, any>
  /** Public resources (request/response bodies) exported to `schemas/<plugin>/` for API consumers. */
  readonly resources: Readonly<Record<string, Schema.Schema.Any>>
  readonly setup: (ctx: PluginContext<C>) => Effect.Effect<Contributions, PluginUnavailable | PluginBootError, Scope.Scope | KernelServices>
}

/**
 * An optional key of a plugin's config Struct with its default: `description` gets
 * "(default <value as JSON>)" appended, so the generated schemas/ and README reference show it.
 */
export const configOption = <A, I>(schema: Schema.Schema<A, I>, defaultValue: A, description: string) =>
  Schema.optionalWith(schema.annotations({ description: `${description} (default ${JSON.stringify(defaultValue)})` }), { default: () => defaultValue })

/** Declares a plugin. `dependsOn` defaults to none; `config` to an empty struct. */
export const definePlugin = <C, I>(def: {
  readonly name: string
  readonly version: string
  readonly description: string
  readonly dependsOn?: ReadonlyArray<string>
  readonly defaultListener?: string
  readonly config: Schema.Schema<C, I>
  readonly resources?: Readonly<Record<string, Schema.Schema.Any>>
  readonly setup: (ctx: PluginContext<C>) => Effect.Effect<Contributions, PluginUnavailable | PluginBootError, Scope.Scope | KernelServices>
}): PluginDefinition<C> => ({ _tag: "PluginDefinition", dependsOn: [], resources: {}, ...def })

/**
 * A `setup` that imports the plugin's implementation module (which exports `setup(ctx)`) only when
 * the plugin is set up. Reading a declaration (`platform config validate`, `--help`, `schemas
 * generate`) then loads the config schema and none of the implementation's libraries.
 *
 * Bind it outside `export default` (`const setup = lazySetup(...)`): tsc 5.9 leaves the `.ts` of a
 * dynamic import inside an `export default` expression, and `scripts/build.mjs` refuses that output.
 */
export const lazySetup = <C>(load: () => Promise<{ readonly setup: PluginDefinition<C>["setup"] }>): PluginDefinition<C>["setup"] =>
  (ctx) => Effect.flatMap(Effect.promise(load), (m) => m.setup(ctx))

/** True when a module export is a plugin definition (used for `module:` plugins). */
export const isPluginDefinition = (u: unknown): u is PluginDefinition =>
  typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "PluginDefinition"

/** The plugin cannot run in this environment; the platform keeps serving the others. */
export class PluginUnavailable extends Schema.TaggedError<PluginUnavailable>()("PluginUnavailable", {
  reason: Schema.String
}) {}

/** The plugin failed to boot for a reason the admin must fix. */
export class PluginBootError extends Schema.TaggedError<PluginBootError>()("PluginBootError", {
  reason: Schema.String
}) {}
