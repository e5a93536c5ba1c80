/**
 * The chip-sim MCP tools (spec: chip-simulation.md, "MCP"), served by the kernel's stateless
 * Streamable HTTP endpoint at `/api/mcp` on the chip listener: `console_spec`, `assemble`, `run`,
 * `mint_cartridge` (the fifth, `chip_atlas`, is in atlas/Tool.ts). Addresses are hex with or without a leading `$` (numbers are taken as given).
 * Refusals come back as results with `isError` and the reason, never as JSON-RPC errors.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { McpTool, McpToolResult } from "../../core/Contribution.ts"
import { AssembleError } from "./assembler/AssembleError.ts"
import { assemble, toAssembleResponse } from "./assembler/Assembler.ts"
import { CartridgeLayoutError, mintCartridge } from "./console/Cartridge.ts"
import { CONSOLE_DOCUMENT, DEFAULT_INPUT, DEFAULT_ORG, DEFAULT_SCREEN, DEFAULT_TICK } from "./console/Console.ts"
import { TileFormatError } from "./console/Tiles.ts"
import { CartridgeRequest } from "./Domain.ts"
import { decodeMemory } from "./engine/Memory.ts"
import { MAX_STEP } from "./engine/Simulator.ts"
import type { SimulatorPool } from "./SimulatorPool.ts"

const text = (value: unknown, isError = false): McpToolResult => ({
  content: [{ type: "text", text: typeof value === "string" ? value : JSON.stringify(value, null, 1) }],
  ...(typeof value === "object" && value !== null && !isError ? { structuredContent: value as Record<string, unknown> } : {}),
  ...(isError ? { isError: true } : {})
})

/** Engine and assembler refusals as tool results with `isError`. */
const refusal = (e: unknown): McpToolResult => {
  if (e instanceof AssembleError) return text(`assembly failed at line ${e.line}: ${e.message}`, true)
  if (e instanceof CartridgeLayoutError) return text(`${e.reason}; ${e.fix}`, true)
  if (e instanceof TileFormatError) return text(e.message, true)
  return text(`refused: ${(e as Error).message}`, true)
}

const run = (f: () => Promise<McpToolResult>): Effect.Effect<McpToolResult> =>
  Effect.promise(() => f().catch(refusal))

/** An address: an integer, or hex digits with or without `$` (`"0400"`, `"$3469"`). */
const Address = Schema.Union(
  Schema.Int.pipe(Schema.between(0, 0xffff)),
  Schema.String.pipe(Schema.pattern(/^\$?[0-9a-fA-F]{1,4}$/, { message: () => "an address: 1 to 4 hex digits, with or without $" }))
).annotations({ description: "address: hex digits with or without a leading $, or an integer" })
const addressOf = (a: number | string): number => (typeof a === "number" ? a : parseInt(a.replace(/^\$/, ""), 16))

const hex2 = (n: number) => n.toString(16).padStart(2, "0")

const RunInput = Schema.Struct({
  source: Schema.String.annotations({ description: "6502 assembly source (booted with its org as the reset vector)" }),
  org: Schema.optional(Address),
  half_cycles: Schema.optional(Schema.Int.pipe(Schema.between(1, MAX_STEP))),
  until_pc: Schema.optional(Address),
  frames: Schema.optional(Schema.Int.pipe(Schema.between(1, 60))),
  max_half_cycles: Schema.optional(Schema.Int.pipe(Schema.between(1, MAX_STEP))).annotations({ description: "bound of an until_pc run, or of one frame" }),
  read: Schema.optional(Schema.Array(Address)).annotations({ description: "addresses whose bytes to return" }),
  watch: Schema.optional(Schema.Array(Schema.String)).annotations({ description: "node names (see GET /api/v1/nodes)" }),
  input: Schema.optional(Schema.Int.pipe(Schema.between(0, 255))).annotations({ description: "controller byte held during frames" }),
  screen: Schema.optional(Schema.Struct({ addr: Schema.optional(Address), width: Schema.Int.pipe(Schema.between(1, 64)), height: Schema.Int.pipe(Schema.between(1, 64)) })),
  tick: Schema.optional(Address)
}).pipe(
  Schema.filter((r) => [r.half_cycles, r.until_pc, r.frames].filter((x) => x !== undefined).length === 1 || "give exactly one of half_cycles, until_pc, frames")
)

/** The four tools, running chip work on `pool`. */
export const mcpTools = (pool: SimulatorPool): ReadonlyArray<McpTool> => [
  {
    name: "console_spec",
    description: "What a ROM must agree with to be a cartridge: contract addresses (tick, input, status), memory map, tile format, palette, cartridge format, the smallest ROM that is a cartridge.",
    input: Schema.Struct({}),
    handler: () => Effect.succeed(text(CONSOLE_DOCUMENT))
  },
  {
    name: "assemble",
    description: "Assemble 6502 source: bytes (hex), labels, listing. An error carries the line.",
    input: Schema.Struct({ source: Schema.String, org: Schema.optional(Address) }),
    handler: ({ source, org }: { source: string; org?: number | string }) =>
      run(async () => text(toAssembleResponse(assemble(source, org === undefined ? DEFAULT_ORG : addressOf(org)))))
  },
  {
    name: "run",
    description:
      "Boot `source` on the transistor-level 6502 and run exactly one of: half_cycles, until_pc (an opcode fetch at that address), frames " +
      "(console frame protocol, with a held controller byte `input`). Returns registers, flags, the bytes at `read` addresses, watched wires, " +
      "and the screen as two hex characters per cell, row major.",
    input: RunInput,
    handler: (req: typeof RunInput.Type) =>
      run(async () => {
        const org = req.org === undefined ? DEFAULT_ORG : addressOf(req.org)
        const watch = req.watch ?? []
        const boot = await pool.boot({ rom: { source: req.source, org }, watch })
        const screenAddr = req.screen?.addr === undefined ? DEFAULT_SCREEN : addressOf(req.screen.addr)
        const cells = req.screen ? req.screen.width * req.screen.height : 0
        const reads = (req.read ?? []).map(addressOf)
        let machine = boot.machine
        let observe = boot.observe
        let extra: Record<string, unknown> = {}
        if (req.frames !== undefined) {
          const r = await pool.frames({
            machine: boot.machine as never,
            frames: req.frames,
            tick: req.tick === undefined ? DEFAULT_TICK : addressOf(req.tick),
            input: DEFAULT_INPUT,
            inputByte: req.input ?? 0,
            maxHalfCycles: req.max_half_cycles ?? MAX_STEP,
            screen: { addr: screenAddr, length: cells },
            watch
          })
          machine = r.machine
          observe = r.observe
          extra = { frames: r.frames.map((f) => ({ completed: f.completed, half_cycles: f.half_cycles })) }
        } else {
          const r = await pool.step({
            machine: boot.machine as never,
            ...(req.half_cycles !== undefined ? { half_cycles: req.half_cycles } : { until_pc: addressOf(req.until_pc!) }),
            max_half_cycles: req.max_half_cycles ?? MAX_STEP,
            watch,
            trace: false,
            format: "objects"
          })
          machine = r.machine
          observe = r.observe
          extra = { stepped: r.stepped, completed: r.completed }
        }
        const mem = decodeMemory(machine.memory)
        const screen = cells > 0 ? Array.from(mem.subarray(screenAddr, screenAddr + cells), hex2).join("") : undefined
        return text({
          ...extra,
          observe,
          read: Object.fromEntries(reads.map((a) => [`$${a.toString(16).padStart(4, "0")}`, hex2(mem[a]!)])),
          ...(screen !== undefined ? { screen, screen_width: req.screen!.width } : {})
        })
      })
  },
  {
    name: "mint_cartridge",
    description: "Assemble, check, verify on the chip and pack a cartridge (the POST /api/v1/cartridge request): the gzipped file as base64, with its verify report and notes.",
    input: CartridgeRequest,
    handler: (req: typeof CartridgeRequest.Type) =>
      run(async () => {
        const minted = await mintCartridge(req, { boot: (r) => pool.boot(r as never), frames: (r) => pool.frames(r) })
        return text({
          name: minted.document.meta.name,
          bytes: minted.gzip.length,
          verify: minted.document.verify,
          notes: minted.document.notes,
          cartridge_base64: minted.gzip.toString("base64")
        })
      })
  }
]
