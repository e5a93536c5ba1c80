/** The `registry` plugin's implementation, imported when the plugin is set up (see `plugin.ts`). */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { PluginUnavailable } from "../../core/Plugin.ts"
import type { RegistryConfig } from "./Config.ts"
import { routes } from "./Http.ts"
import * as Registry from "./Registry.ts"
import * as Store from "./Store.ts"
import type { PluginContext } from "../../core/Plugin.ts"

/** `setup` of the plugin: the registry service over its store (SQLite or PostgreSQL; migrated only when serving), unavailable when the database cannot be reached. */
export const setup = (ctx: PluginContext<RegistryConfig>) =>
  Effect.gen(function* () {
    // Inspection lists routes only: it opens the store without migrating (nothing is served).
    const layer = Registry.layer(ctx.config.limits).pipe(Layer.provide(Store.layerConfig(ctx.config, ctx.dataDir, { migrate: ctx.mode === "serve" })))
    // A database that cannot be reached leaves the rest of the platform serving.
    const registry = Context.get(yield* Layer.build(layer).pipe(Effect.mapError((e) => new PluginUnavailable({ reason: e.error }))), Registry.Registry)
    yield* Effect.logInfo(`registry: ${ctx.config.store} store ready`)
    return { routes: routes(registry), status: () => ({ store: ctx.config.store }) }
  })
