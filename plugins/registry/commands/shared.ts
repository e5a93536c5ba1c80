/**
 * What the `platform registry token` commands share: the registry of the configured platform
 * (`plugins.registry` of `--config`), over its store directly (an admin tool: nothing is served,
 * migrations run if the store is new), released when the command is done.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as path from "node:path"
import { loadConfig } from "../../../core/Config.ts"
import { RegistryConfig } from "../Config.ts"
import * as Registry from "../Registry.ts"
import * as Store from "../Store.ts"

const KERNEL_KEYS = new Set(["enabled", "listener", "module"])

/** Runs `f` over the registry of the platform configured by `configFile`; rejects with a readable Error. */
export const withRegistry = async <A>(configFile: string | undefined, f: (registry: Registry.RegistryService) => Effect.Effect<A, Store.StoreUnavailable>): Promise<A> => {
  const loaded = await loadConfig({ path: configFile })
  const section = loaded.config.plugins.registry as Record<string, unknown> | undefined
  if (section === undefined) throw new Error(`${loaded.file}: no plugins.registry section`)
  const decoded = Schema.decodeUnknownEither(RegistryConfig)(Object.fromEntries(Object.entries(section).filter(([k]) => !KERNEL_KEYS.has(k))), { errors: "all", onExcessProperty: "error" })
  if (Either.isLeft(decoded)) throw new Error(`${loaded.file}: plugins.registry: ${ParseResult.TreeFormatter.formatErrorSync(decoded.left)}`)
  const config = decoded.right
  const dataDir = path.join(path.resolve(loaded.dir, loaded.config.data_dir), "registry")
  const layer = Registry.layer(config.limits).pipe(Layer.provide(Store.layerConfig(config, dataDir)))
  const scope = Effect.runSync(Scope.make())
  const exit = await Effect.runPromiseExit(
    Layer.buildWithScope(layer, scope).pipe(Effect.flatMap((ctx) => f(Context.get(ctx, Registry.Registry))))
  )
  await Effect.runPromise(Scope.close(scope, Exit.void))
  if (Exit.isFailure(exit)) {
    const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
    throw new Error(failure ? failure.error : String(exit.cause))
  }
  return exit.value
}
