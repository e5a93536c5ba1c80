/**
 * The chip-sim service: wire requests (decoded by `Domain.ts`) to the engine's simulator.
 * Boot with a `rom` assembles it, lays the image over memory at its org and, unless the request
 * gives `reset_vector`, points the reset vector at that org; the response carries the listing.
 */
import { AssembleError } from "./assembler/AssembleError.ts"
import { assemble } from "./assembler/Assembler.ts"
import type { BootRequest, StepRequest } from "./Domain.ts"
import { decodeMemory, memoryFill } from "./engine/Memory.ts"
import { TRACE_ROWS_STATEMENT } from "./engine/Observe.ts"
import { makeSimulator, type FramesRequest, type FramesResult, type NodeCatalog, type Simulator, type StepResult } from "./engine/index.ts"
import type { ListingLine } from "./assembler/Assembler.ts"

/** OpenAPI description of `trace_rows` columns. */
export const TRACE_ROW_COLUMNS_DOC = TRACE_ROWS_STATEMENT

/** What the routes call. Synchronous: one request's run never interleaves with another's. */
export interface ChipSimulator {
  readonly meta: Simulator["meta"]
  nodes(): NodeCatalog
  /** @throws AssembleError (422), UnknownWatchNode (400), EngineStateError (400) */
  boot(req: BootRequest): StepResult & { listing?: ReadonlyArray<ListingLine> }
  /** @throws EngineStateError / UnknownWatchNode (400), StepRequestError (422) */
  step(req: StepRequest): StepResult
  /** Console frames (engine `frames`). @throws EngineStateError (400), StepRequestError (422) */
  frames(req: FramesRequest): FramesResult
}

/** Loads the netlist from `netlistDir` and builds the service. @throws NetlistMissing, NetlistInvalid */
export const makeChipSimulator = (netlistDir: string): ChipSimulator => {
  const sim = makeSimulator(netlistDir)
  return {
    meta: sim.meta,
    nodes: () => sim.nodes(),
    boot(req) {
      if (!req.rom) {
        return sim.boot({ memory: req.memory, resetVector: req.reset_vector, watch: req.watch })
      }
      const image = assemble(req.rom.source, req.rom.org)
      if (image.org + image.size > 0x10000) throw new AssembleError(0, `image of ${image.size} bytes at $${image.org.toString(16)} runs past $FFFF`)
      const memory = decodeMemory(req.memory)
      memory.set(image.image, image.org)
      const result = sim.boot({ memory, fill: memoryFill(req.memory), resetVector: req.reset_vector ?? image.org, watch: req.watch })
      return { ...result, listing: image.listing }
    },
    step(req) {
      return sim.step({
        machine: req.machine as never,
        halfCycles: req.half_cycles,
        until: req.until ?? (req.until_pc !== undefined ? "instruction" : undefined),
        untilPc: req.until_pc,
        maxHalfCycles: req.max_half_cycles,
        pins: req.pins,
        watch: req.watch,
        trace: req.trace,
        format: req.format
      })
    },
    frames: (req) => sim.frames(req)
  }
}
