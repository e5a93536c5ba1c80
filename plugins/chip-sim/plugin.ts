/**
 * chip-sim: a stateless HTTP API simulating the NMOS 6502 at transistor level
 * (`../shared/specs/chip-simulation.md`), on listener `chip` (default port 9004), with the die
 * atlas derived from the same netlist on first use (`atlas/`).
 *
 * Config: `netlist_dir` — folder holding the visual6502 files `segdefs.js`, `transdefs.js`,
 * `nodenames.js` (never committed: licence). Default search: env `CHIP_SIM_NETLIST`, then
 * `./data/netlist`, then `../shared/chip-sim/netlist` (both relative to the config file).
 * Without the files the plugin is unavailable and says which folders it tried and that
 * `platform chip fetch-netlist` downloads them.
 */
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"
import { definePlugin, lazySetup } from "../../core/Plugin.ts"
import { NETLIST_FILES } from "./engine/Netlist.ts"
import * as Domain from "./Domain.ts"

export const ChipSimConfig = Schema.Struct({
  netlist_dir: Schema.optional(Schema.String).annotations({
    description: "folder with segdefs.js, transdefs.js, nodenames.js (default: $CHIP_SIM_NETLIST, ./data/netlist, ../shared/chip-sim/netlist)"
  }),
  workers: Schema.optional(Schema.Int.pipe(Schema.between(0, 64))).annotations({
    description: "worker threads running boot/step, so long runs never block the other listeners (default: one per core, at most 4; 0 runs them on the event loop)"
  })
}).annotations({ identifier: "ChipSimConfig" })
export type ChipSimConfig = typeof ChipSimConfig.Type

/** Folders searched for the netlist, in order, for a config directory. */
export const netlistCandidates = (configDir: string, configured?: string): Array<string> =>
  configured
    ? [path.resolve(configDir, configured)]
    : [
        ...(process.env.CHIP_SIM_NETLIST ? [path.resolve(configDir, process.env.CHIP_SIM_NETLIST)] : []),
        path.resolve(configDir, "data/netlist"),
        path.resolve(configDir, "../shared/chip-sim/netlist")
      ]

/** True when `dir` holds all three netlist files. */
export const hasNetlist = (dir: string): boolean => NETLIST_FILES.every((f) => fs.existsSync(path.join(dir, f)))

const setup = lazySetup(() => import("./Setup.ts"))

export default definePlugin({
  name: "chip-sim",
  version: "0.1.0",
  description: "Transistor-level NMOS 6502 simulation: assemble, boot, step (stateless machines)",
  defaultListener: "chip",
  config: ChipSimConfig,
  resources: {
    Rom: Domain.Rom,
    SparseMemory: Domain.SparseMemory,
    ChipState: Domain.ChipState,
    Machine: Domain.Machine,
    BootRequest: Domain.BootRequest,
    StepRequest: Domain.StepRequest,
    StepResponse: Domain.StepResponse,
    Observation: Domain.Observation,
    AssembleResponse: Domain.AssembleResponse,
    Meta: Domain.Meta,
    CartridgeRequest: Domain.CartridgeRequest
  },
  setup
})
