/**
 * Plugin `registry`: the builder registry of the chip-simulation spec ("Registry art",
 * "Registry token", "Registry reads", "Authentication") on the `chip` listener beside chip-sim,
 * under `/api/v1/registry`. Builders claim a handle with a token minted by
 * `platform registry token mint`, publish cartridges minted by chip-sim (checked again on arrival
 * through chip-sim's Contract), and set avatar and cover art.
 *
 * Storage: `store: embedded` (one SQLite file, `<data_dir>/registry/registry.sqlite`) or
 * `store: postgres` (every instance on one database); migrations run when the platform serves.
 */
import { Context, Effect, Layer } from "effect"
import { definePlugin, PluginUnavailable } from "../../core/Plugin.ts"
import { ArtInput, ClaimRequest, PublishRequest, RegistryIndex, RomEntry, RomList, UpdateRequest } from "./Api.ts"
import { RegistryConfig } from "./Config.ts"
import { routes } from "./Http.ts"
import * as Registry from "./Registry.ts"
import * as Store from "./Store.ts"

export default definePlugin({
  name: "registry",
  version: "0.1.0",
  description: "Builder registry: tokens, handles, published cartridges with avatar and cover art; embedded SQLite or PostgreSQL",
  defaultListener: "chip",
  config: RegistryConfig,
  resources: {
    RegistryClaimRequest: ClaimRequest,
    RegistryArtInput: ArtInput,
    RegistryPublishRequest: PublishRequest,
    RegistryUpdateRequest: UpdateRequest,
    RegistryIndex,
    RegistryRomList: RomList,
    RegistryRom: RomEntry
  },
  setup: (ctx) =>
    Effect.gen(function* () {
      // Inspection lists routes only: it opens the store without migrating (nothing is served).
      const layer = Registry.layer(ctx.config.limits).pipe(Layer.provide(Store.layerConfig(ctx.config, ctx.dataDir, { migrate: ctx.mode === "serve" })))
      // A database that cannot be reached leaves the rest of the platform serving.
      const registry = Context.get(yield* Layer.build(layer).pipe(Effect.mapError((e) => new PluginUnavailable({ reason: e.error }))), Registry.Registry)
      yield* Effect.logInfo(`registry: ${ctx.config.store} store ready`)
      return { routes: routes(registry), status: () => ({ store: ctx.config.store }) }
    })
})
