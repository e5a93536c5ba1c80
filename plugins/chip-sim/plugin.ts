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
import { Effect, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { definePlugin, PluginUnavailable } from "../../core/Plugin.ts"
import { routes } from "./Api.ts"
import { makeAtlasService } from "./atlas/Atlas.ts"
import { atlasRoutes } from "./atlas/Http.ts"
import { atlasTool } from "./atlas/Tool.ts"
import { mcpTools } from "./Mcp.ts"
import { NETLIST_FILES } from "./engine/Netlist.ts"
import * as Domain from "./Domain.ts"
import { makeChipSimulator } from "./Simulation.ts"
import { defaultPoolSize, makeSimulatorPool } from "./SimulatorPool.ts"

export const ChipSimConfig = Schema.Struct({
  netlist_dir: Schema.optional(Schema.String).annotations({
    description: "folder with segdefs.js, transdefs.js, nodenames.js (default: $CHIP_SIM_NETLIST, ./data/netlist, ../shared/chip-sim/netlist)"
  }),
  workers: Schema.optional(Schema.Int.pipe(Schema.between(0, 64))).annotations({
    description: "worker threads running boot/step, so long runs never block the other listeners (default: one per core, at most 4; 0 runs them on the event loop)"
  })
}).annotations({ identifier: "ChipSimConfig" })

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
  setup: (ctx) =>
    Effect.gen(function* () {
      const candidates = netlistCandidates(ctx.configDir, ctx.config.netlist_dir)
      const dir = candidates.find(hasNetlist)
      if (!dir) {
        return yield* Effect.fail(new PluginUnavailable({
          reason: `visual6502 netlist not found (segdefs.js, transdefs.js, nodenames.js) in ${candidates.join(", ")}; run \`platform chip fetch-netlist\` or set CHIP_SIM_NETLIST`
        }))
      }
      const sim = yield* Effect.try({
        try: () => makeChipSimulator(dir),
        catch: (e) => new PluginUnavailable({ reason: `netlist in ${dir} could not be loaded: ${(e as Error).message}` })
      })
      // Threads only where requests are served: inspection runs none.
      const size = ctx.mode === "serve" ? ctx.config.workers ?? defaultPoolSize() : 0
      const pool = yield* Effect.acquireRelease(
        Effect.tryPromise({
          try: () => makeSimulatorPool(dir, size, sim),
          catch: (e) => new PluginUnavailable({ reason: `simulator workers could not start: ${(e as Error).message}` })
        }),
        (p) => Effect.promise(() => p.close())
      )
      yield* Effect.logInfo(`chip-sim: netlist loaded from ${dir}; ${size} simulator worker thread(s)`)
      // The atlas is derived on its first request (about 0.1 s), not here: inspection never needs it.
      const atlas = makeAtlasService(dir)
      return {
        routes: [...routes(sim, pool), ...atlasRoutes(atlas)],
        mcpTools: [...mcpTools(pool), atlasTool(atlas)],
        status: () => ({ netlist_dir: dir, workers: size })
      }
    })
})
