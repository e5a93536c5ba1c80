/**
 * Wire resources of the chip-simulation service (`../shared/specs/chip-simulation.md`): Rom,
 * SparseMemory, ChipState, Machine, Observation, StepResponse, Meta, and the boot/step requests.
 * Request Schemas refuse malformed blobs (length, hex, padding bits) with 422 before the engine.
 */
import * as Schema from "effect/Schema"
import { BLOB_HEX_LENGTH, blobProblem } from "./Blob.ts"

const hexByte = Schema.String.pipe(Schema.pattern(/^[0-9a-fA-F]{2}$/, { message: () => "expected two hex digits" }))
const u16 = Schema.Int.pipe(Schema.between(0, 65535))

/** A state bitset of one kind, checked for exact length, hex digits and clear padding bits. */
const blob = (kind: keyof typeof BLOB_HEX_LENGTH) =>
  Schema.String.pipe(
    Schema.filter((s) => blobProblem(s, kind) ?? true, { identifier: `${kind}Blob` }),
    Schema.annotations({
      description: `${BLOB_HEX_LENGTH[kind]} hex characters; bit layout in GET /api/v1/meta (encoding)`,
      jsonSchema: { type: "string", pattern: `^[0-9a-fA-F]{${BLOB_HEX_LENGTH[kind]}}$` }
    })
  )

/** `{source, org}`; `org` default 512 ($0200); a `.org` in the source wins. */
export const Rom = Schema.Struct({
  source: Schema.String,
  org: Schema.optionalWith(u16, { default: () => 0x0200 })
}).annotations({ identifier: "Rom", description: "6502 assembly source and its load address" })

/**
 * Sparse 64 KiB memory: `fill` everywhere except the listed 256-byte pages. A page key that is
 * not two hex digits (`"100"` is past the last page) is refused, not ignored.
 */
export const SparseMemory = Schema.Struct({
  fill: Schema.optionalWith(hexByte, { default: () => "00" }),
  pages: Schema.optionalWith(
    Schema.Record({
      key: Schema.String.pipe(Schema.pattern(/^[0-9a-fA-F]{2}$/, { message: () => "page keys are two hex digits, 00 to ff" })),
      value: Schema.String.pipe(Schema.pattern(/^[0-9a-fA-F]{512}$/, { message: () => "a page is exactly 512 hex characters (256 bytes)" }))
    }).annotations({ parseOptions: { onExcessProperty: "error" } }),
    { default: () => ({}) }
  )
}).annotations({ identifier: "SparseMemory", description: "64 KiB memory: `fill` byte plus listed pages (key = page number in hex)" })

/** Complete chip state: node levels, pull state and transistor states (version 1). */
export const ChipState = Schema.Struct({
  version: Schema.Literal(1),
  half_cycle: Schema.Int.pipe(Schema.nonNegative()),
  last_fetch: Schema.NullOr(Schema.Struct({ addr: u16, opcode: Schema.Int.pipe(Schema.between(0, 255)) })),
  value: blob("value"),
  pullup: blob("pullup"),
  pulldown: blob("pulldown"),
  trans_on: blob("trans_on")
}).annotations({ identifier: "ChipState" })

/** The whole machine; POST it back to continue exactly where the last response stopped. */
export const Machine = Schema.Struct({ state: ChipState, memory: SparseMemory }).annotations({ identifier: "Machine" })

const watch = Schema.Array(Schema.String).annotations({ description: "node names (any name in GET /api/v1/nodes) read into each observation" })

/** POST /v1/boot request. */
export const BootRequest = Schema.Struct({
  rom: Schema.optional(Rom),
  memory: Schema.optional(SparseMemory),
  reset_vector: Schema.optional(u16),
  watch: Schema.optional(watch)
}).annotations({ identifier: "BootRequest" })
export type BootRequest = typeof BootRequest.Type

const pinLevel = Schema.Literal(0, 1)

/** Pin levels to drive before stepping; they persist in the machine's pull state. */
export const Pins = Schema.Struct({
  res: Schema.optional(pinLevel),
  irq: Schema.optional(pinLevel),
  nmi: Schema.optional(pinLevel),
  rdy: Schema.optional(pinLevel),
  so: Schema.optional(pinLevel)
}).annotations({
  identifier: "Pins",
  description: "0 or 1 per pin; res, irq, nmi and so are active low; any other name is refused (422)",
  // an unknown pin name must not be dropped silently (the request would run without it)
  parseOptions: { onExcessProperty: "error" }
})

/** Per-request limits (spec, Limits). */
export const MAX_STEP = 200_000
export const MAX_TRACED = 10_000
export const DEFAULT_MAX_HALF_CYCLES = 200

/**
 * POST /v1/step request. Exactly one of `half_cycles` and `until` (`until_pc` alone counts as
 * `until: "instruction"` with a breakpoint); a traced run may cover at most 10,000 half-cycles.
 */
export const StepRequest = Schema.Struct({
  machine: Machine,
  half_cycles: Schema.optional(Schema.Int.pipe(Schema.between(1, MAX_STEP))),
  until: Schema.optional(Schema.Literal("instruction", "cycle")),
  until_pc: Schema.optional(u16),
  max_half_cycles: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, MAX_STEP)), { default: () => DEFAULT_MAX_HALF_CYCLES }),
  pins: Schema.optional(Pins),
  watch: Schema.optional(watch),
  trace: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  format: Schema.optionalWith(Schema.Literal("objects", "rows"), { default: () => "objects" as const })
}).pipe(
  Schema.filter((r) => {
    const untilGiven = r.until !== undefined || r.until_pc !== undefined
    if (r.half_cycles !== undefined && untilGiven) return { path: ["half_cycles"], message: "give exactly one of half_cycles or until (until_pc), not both" }
    if (r.half_cycles === undefined && !untilGiven) return { path: ["half_cycles"], message: "give exactly one of half_cycles or until (until_pc)" }
    if (r.until === "cycle" && r.until_pc !== undefined) return { path: ["until_pc"], message: "until_pc runs to an opcode fetch; it cannot be combined with until: cycle" }
    const bound = r.half_cycles ?? (r.until === "cycle" ? 2 : r.max_half_cycles)
    if (r.trace && bound > MAX_TRACED) return { path: [r.half_cycles !== undefined ? "half_cycles" : "max_half_cycles"], message: `a traced run covers at most ${MAX_TRACED} half-cycles` }
    return true
  })
).annotations({ identifier: "StepRequest" })
export type StepRequest = typeof StepRequest.Type

/** One reading of the chip (spec Observation; watched nodes appear by name as 0/1). */
export const Observation = Schema.Struct({
  half_cycle: Schema.Int,
  cycle: Schema.Int,
  clk0: Schema.Int,
  phase: Schema.Literal("phi1", "phi2"),
  addr: Schema.String,
  data: Schema.String,
  rw: Schema.Int,
  sync: Schema.Int,
  pc: Schema.String,
  a: Schema.String,
  x: Schema.String,
  y: Schema.String,
  s: Schema.String,
  p: Schema.String,
  ir: Schema.String,
  flags: Schema.String,
  tstates: Schema.String,
  hidden: Schema.String,
  store_data: Schema.String,
  alu: Schema.String,
  alua: Schema.String,
  alub: Schema.String,
  sb: Schema.String,
  idb: Schema.String,
  idl: Schema.String,
  dor: Schema.String,
  adl: Schema.String,
  adh: Schema.String,
  abl: Schema.String,
  abh: Schema.String,
  pclp: Schema.String,
  pchp: Schema.String
}).pipe(Schema.extend(Schema.Record({ key: Schema.String, value: Schema.Union(Schema.Int, Schema.String) })))
  .annotations({ identifier: "Observation", description: "Registers and buses as lower-case hex; watched nodes by name as 0 or 1" })

/** Listing line of an assembled Rom. */
export const ListingLine = Schema.Struct({
  n: Schema.Int,
  text: Schema.String,
  label: Schema.NullOr(Schema.String),
  addr: Schema.NullOr(Schema.Int),
  bytes: Schema.NullOr(Schema.String)
}).annotations({ identifier: "ListingLine" })

/** POST /v1/assemble response. */
export const AssembleResponse = Schema.Struct({
  org: Schema.Int,
  end: Schema.Int.annotations({ description: "address of the last byte (inclusive)" }),
  size: Schema.Int,
  bytes: Schema.String,
  labels: Schema.Record({ key: Schema.String, value: Schema.Int }),
  listing: Schema.Array(ListingLine)
}).annotations({ identifier: "AssembleResponse" })

/** `trace_rows`: columns named once, one row per half-cycle. */
export const TraceRows = Schema.Struct({
  columns: Schema.Array(Schema.String),
  rows: Schema.Array(Schema.Array(Schema.Union(Schema.Int, Schema.String)))
}).annotations({ identifier: "TraceRows" })

/** Response of boot and step. */
export const StepResponse = Schema.Struct({
  machine: Machine,
  observe: Observation,
  stepped: Schema.Int,
  completed: Schema.Boolean,
  listing: Schema.optional(Schema.Array(ListingLine)),
  trace: Schema.optional(Schema.Array(Observation)),
  trace_rows: Schema.optional(TraceRows)
}).annotations({ identifier: "StepResponse" })

/** GET /v1/meta. */
export const Meta = Schema.Struct({
  chip: Schema.String,
  nodes: Schema.Int,
  transistors: Schema.Int,
  max_step: Schema.Int,
  max_traced: Schema.Int,
  encoding: Schema.Unknown
}).annotations({ identifier: "Meta" })

/** `{error, line}` of a failed assembly (422). */
export const AssembleErrorBody = Schema.Struct({ error: Schema.String, line: Schema.Int }).annotations({ identifier: "AssembleErrorBody" })

const strict = { parseOptions: { onExcessProperty: "error" as const } }

/** The `console` member of POST /v1/cartridge: contract addresses and the screen's geometry. */
export const ConsoleFields = Schema.Struct({
  tick: Schema.optional(u16).annotations({ description: "address the ROM raises when a frame is done (default $000D)" }),
  input: Schema.optional(u16).annotations({ description: "address of the controller byte (default $0002)" }),
  screen: Schema.optional(u16).annotations({ description: "first cell of the screen (default $0500)" }),
  width: Schema.Int.pipe(Schema.between(1, 64)).annotations({ description: "screen width in cells (tiles)" }),
  height: Schema.Int.pipe(Schema.between(1, 64)).annotations({ description: "screen height in cells (tiles)" }),
  status: Schema.optional(u16).annotations({ description: "address the ROM raises when the game is over" }),
  score: Schema.optional(u16),
  entropy: Schema.optional(u16),
  gate_mask: Schema.optional(Schema.Int.pipe(Schema.between(0, 255))),
  frame_cost: Schema.optional(Schema.Int.pipe(Schema.between(1, MAX_STEP))).annotations({ description: "bound of one frame when verifying, in half-cycles (default 200000)" }),
  dirs: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Int.pipe(Schema.between(0, 255)) })).annotations({ description: "controller bits by direction name" }),
  watch: Schema.optional(watch)
}).annotations({ identifier: "ConsoleFields", ...strict })

/** Tile art: exactly one of `pixels` (tiles of eight rows of eight `0`-`3`) or `chr` (hex). */
export const TilesInput = Schema.Struct({
  pixels: Schema.optional(Schema.Array(Schema.Array(Schema.String))),
  chr: Schema.optional(Schema.String)
}).pipe(
  Schema.filter((t) => (t.pixels === undefined) !== (t.chr === undefined) || { path: ["pixels"], message: "give exactly one of pixels or chr" })
).annotations({ identifier: "TilesInput", ...strict })

/** POST /v1/cartridge request. */
export const CartridgeRequest = Schema.Struct({
  rom: Rom,
  console: ConsoleFields,
  tiles: TilesInput,
  meta: Schema.optional(Schema.Struct({
    name: Schema.optional(Schema.String.pipe(Schema.maxLength(80))),
    author: Schema.optional(Schema.String.pipe(Schema.maxLength(80))),
    blurb: Schema.optional(Schema.String.pipe(Schema.maxLength(280)))
  }).annotations(strict)),
  frames: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 60)), { default: () => 3 }).annotations({ description: "frames to run when verifying; 0 skips verification" }),
  input: Schema.optional(Schema.Int.pipe(Schema.between(0, 255))).annotations({ description: "controller byte held while verifying (default 0)" })
}).annotations({ identifier: "CartridgeRequest", ...strict })
export type CartridgeRequest = typeof CartridgeRequest.Type

/** A refused cartridge layout: the reason and what to do. */
export const CartridgeLayoutBody = Schema.Struct({ error: Schema.String, reason: Schema.String, fix: Schema.String }).annotations({ identifier: "CartridgeLayoutBody" })
