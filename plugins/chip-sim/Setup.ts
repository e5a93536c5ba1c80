/** The `chip-sim` plugin's implementation, imported when the plugin is set up (see `plugin.ts`). */
import * as Effect from "effect/Effect"
import { type PluginContext, PluginUnavailable } from "../../core/Plugin.ts"
import { routes } from "./Api.ts"
import { makeAtlasService } from "./atlas/Atlas.ts"
import { atlasRoutes } from "./atlas/Http.ts"
import { atlasTool } from "./atlas/Tool.ts"
import { mcpTools } from "./Mcp.ts"
import { type ChipSimConfig, hasNetlist, netlistCandidates } from "./plugin.ts"
import { makeChipSimulator } from "./Simulation.ts"
import { defaultPoolSize, makeSimulatorPool } from "./SimulatorPool.ts"

/**
 * `setup` of the plugin: unavailable without the netlist; else the simulator, its worker pool
 * (threads only when serving), the routes, the MCP tools and the atlas (derived on first use).
 */
export const setup = (ctx: PluginContext<ChipSimConfig>) =>
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
