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
import { definePlugin, lazySetup } from "../../core/Plugin.ts"
import { ArtInput, ClaimRequest, PublishRequest, RegistryIndex, RomEntry, RomList, UpdateRequest } from "./Api.ts"
import { RegistryConfig } from "./Config.ts"

const setup = lazySetup(() => import("./Setup.ts"))

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
  setup
})
