/**
 * JSON-level simulation API over the switch-level engine (spec: chip-simulation.md, POST
 * /v1/boot, POST /v1/step, Meta). Framework-free and synchronous: every call decodes the
 * machine it is given, runs, and encodes the machine it returns; nothing of one request
 * survives into the next except the static netlist tables and the chip's half-cycle memo, a
 * cache whose records are replayed only when their whole key equals the state (Memo.ts), which
 * changes speed, never results. Settling is the
 * visual6502/perfect6502 event scheme (see ChipSettle.ts), node for node.
 *
 * Conventions (shared/chip-sim/README.md, which the golden traces follow):
 * - power-on: all nodes low and floating but `vcc`, transistors off, `segdefs.js` pull-ups;
 *   pins driven in the order res=0, clk0=1, rdy=1, so=0, irq=1, nmi=1, settling after each;
 *   then every node settled once, in node order;
 * - reset: 16 half-cycles with `res` low, then `res` high and settle;
 * - boot point: first half-cycle with `sync` high, `clk0` low and the address bus equal to the
 *   reset vector; it is `half_cycle` 0;
 * - a half-cycle inverts `clk0` and settles; on the rising edge the bus is served (read:
 *   `memory[addr]` driven onto `db0..db7` and settled; write: data bus stored).
 *
 * `last_fetch` is bookkeeping, not chip state: the most recent opcode-fetch row (`sync` high,
 * `clk0` low; the rows `until: "instruction"` stops at) as `{addr, opcode}`, `opcode` being
 * `memory[addr]` at that half-cycle, the byte the chip latches on the following rising edge.
 */
import { Chip, makeTables, type ChipTables } from "./Chip.ts"
import {
  decodeBits,
  encodeBits,
  ENCODING_STATEMENT,
  EngineStateError,
  NODE_BITS,
  TRANSISTOR_BITS
} from "./Encoding.ts"
import { decodeMemory, encodeMemory, memoryFill, type SparseMemory } from "./Memory.ts"
import { loadNetlist, NetlistInvalid, type Netlist } from "./Netlist.ts"
import { nodeCatalog, resolveWatch, type NodeCatalog, type NodeEntry } from "./Nodes.ts"
import { Observer, TRACE_COLUMNS, type Observation } from "./Observe.ts"

/** Half-cycles one request may run. */
export const MAX_STEP = 200_000
/** Half-cycles one request may run with `trace` on. */
export const MAX_TRACED = 10_000
/** Default bound of `until` / `untilPc` runs. */
export const DEFAULT_MAX_HALF_CYCLES = 200
/** Half-cycles of the reset sequence (README convention 2). */
export const RESET_HALF_CYCLES = 16
/** Boot gives up when the boot point is not reached within this many half-cycles after reset. */
export const BOOT_BOUND = 10_000

/** `/v1/meta` body. */
export const META = {
  chip: "MOS 6502 (NMOS, revision D), visual6502 netlist, switch-level",
  nodes: NODE_BITS,
  transistors: TRANSISTOR_BITS,
  max_step: MAX_STEP,
  max_traced: MAX_TRACED,
  encoding: ENCODING_STATEMENT
} as const

/**
 * A step request outside the limits or self-contradictory (HTTP 422).
 *
 * The engine's errors are plain `Error`s, not `Schema.TaggedError`s: the engine runs in the
 * simulator threads and the `chip` CLI, which load no Effect; `effect/Schema` (about 400 modules
 * with fast-check) took a simulator thread from 318 to 734 ms to start and `platform chip
 * assemble` from 496 to 943 ms when tried. The routes map them to their status by hand.
 */
export class StepRequestError extends Error {
  readonly _tag: string = "StepRequestError"
  readonly status = 422
  constructor(message: string) {
    super(message)
    this.name = "StepRequestError"
  }
}

/** A run longer than {@link MAX_STEP}, or than {@link MAX_TRACED} with trace on (HTTP 422). */
export class StepLimitExceeded extends StepRequestError {
  override readonly _tag = "StepLimitExceeded"
  constructor(readonly requested: number, readonly limit: number, traced: boolean) {
    super(
      `${requested} half-cycles requested; at most ${limit} per request${traced ? " with trace on" : ""}: ` +
        "split the run into several requests"
    )
    this.name = "StepLimitExceeded"
  }
}

/** ChipState JSON. Blobs per {@link ENCODING_STATEMENT}. */
export interface ChipStateJson {
  version: 1
  half_cycle: number
  last_fetch: { addr: number; opcode: number } | null
  value: string
  pullup: string
  pulldown: string
  trans_on: string
}

/** Machine JSON: the whole session, carried by the client. */
export interface MachineJson {
  state: ChipStateJson
  memory: SparseMemory
}

/** Columnar trace: `columns` = {@link TRACE_COLUMNS} then watched names. */
export interface TraceRows {
  columns: Array<string>
  rows: Array<Array<number | string>>
}

/** What boot and step return. */
export interface StepResult {
  machine: { state: ChipStateJson; memory: { fill: string; pages: Record<string, string> } }
  observe: Observation
  /** Half-cycles advanced by this request (0 for boot). */
  stepped: number
  /** False when a bounded `until` run hit `maxHalfCycles` first. */
  completed: boolean
  trace?: Array<Observation>
  trace_rows?: TraceRows
}

export interface BootRequest {
  /** Memory image (copied, never mutated) or SparseMemory; default all zero. */
  memory?: Uint8Array | SparseMemory
  /** Fill byte for the returned SparseMemory when `memory` is a Uint8Array (default 0). */
  fill?: number
  /** Written little-endian at $FFFC/$FFFD before power-on when given (0..65535). */
  resetVector?: number
  watch?: ReadonlyArray<string>
}

export type PinName = "res" | "irq" | "nmi" | "rdy" | "so"
/** Pins in the order a step applies them. */
export const PIN_ORDER: ReadonlyArray<PinName> = ["res", "irq", "nmi", "rdy", "so"]

export interface StepRequest {
  machine: MachineJson
  /** Run exactly this many half-cycles (0..MAX_STEP). Exclusive with `until`/`untilPc`. */
  halfCycles?: number
  /** `instruction`: to the next opcode-fetch row; `cycle`: two half-cycles. */
  until?: "instruction" | "cycle"
  /** Run to the opcode-fetch row at this address; wins over `until` when both are given. */
  untilPc?: number
  /** Bound of `until`/`untilPc` runs, default 200. */
  maxHalfCycles?: number
  /** Pin levels, applied (driven and settled) in {@link PIN_ORDER} before stepping; they persist. */
  pins?: Partial<Record<PinName, 0 | 1>>
  watch?: ReadonlyArray<string>
  trace?: boolean
  format?: "objects" | "rows"
}

/**
 * Frames of the console's frame protocol (spec: "Frame protocol for cartridges"): before each
 * frame the host clears `tick` and writes the held `input` byte; the chip runs until the ROM
 * raises `tick` (a non-zero byte there after a half-cycle), at most `maxHalfCycles` per frame.
 */
export interface FramesRequest {
  machine: MachineJson
  frames: number
  /** Addresses of the contract bytes (0..65535). */
  tick: number
  input: number
  /** The controller byte held during every frame (0..255). */
  inputByte: number
  /** Bound of one frame, in half-cycles (1..MAX_STEP). */
  maxHalfCycles: number
  /** The screen region returned after each frame: `length` bytes from `addr`. */
  screen: { addr: number; length: number }
  /** Addresses whose bytes are returned after the last frame (`read`). */
  read?: ReadonlyArray<number>
  watch?: ReadonlyArray<string>
}

/** One frame: whether the ROM raised `tick` within the bound, the half-cycles it took, the screen after it (hex). */
export interface FrameResult {
  completed: boolean
  half_cycles: number
  screen: string
}

/** What `frames` returns: the machine after the last frame run, its observation, each frame. */
export interface FramesResult {
  machine: StepResult["machine"]
  observe: Observation
  /** The screen before the first frame (hex), then one entry per frame run (stops after a frame that did not complete). */
  screen_before: string
  frames: Array<FrameResult>
  /** The byte at each requested `read` address after the last frame run, keyed by address. */
  read: Record<number, number>
}

/** The engine for one netlist. Reuse across requests; calls must not interleave (synchronous). */
export interface Simulator {
  readonly netlist: Netlist
  readonly meta: typeof META
  /** Power-on, reset, run to the boot point. @throws UnknownWatchNode, MemoryFormatError */
  boot(req: BootRequest): StepResult
  /**
   * Continue a machine. @throws EngineStateError (bad state blob or memory, 400),
   * UnknownWatchNode (400), StepRequestError / StepLimitExceeded (422).
   */
  step(req: StepRequest): StepResult
  /**
   * Runs frames of the console protocol (see FramesRequest); stops after the first frame whose
   * ROM does not raise `tick` within the bound. @throws EngineStateError (400), StepRequestError (422)
   */
  frames(req: FramesRequest): FramesResult
  /** `/v1/nodes` body. */
  nodes(): NodeCatalog
  /** Memo counters since construction: settles replayed and simulated, half-cycles carried by span replays. */
  memoStats(): { hits: number; misses: number; spanHalfCycles: number }
}

const isInt = (v: unknown, lo: number, hi: number): v is number =>
  typeof v === "number" && Number.isInteger(v) && v >= lo && v <= hi

/** Decodes ChipState JSON. @throws EngineStateError */
export const decodeState = (s: unknown): { value: Uint8Array; pullup: Uint8Array; pulldown: Uint8Array; transOn: Uint8Array; halfCycle: number; lastFetch: ChipStateJson["last_fetch"] } => {
  if (typeof s !== "object" || s === null) throw new EngineStateError("state: not an object")
  const st = s as Record<string, unknown>
  if (st.version !== 1) throw new EngineStateError(`state.version: ${String(st.version)} is not 1`)
  if (!isInt(st.half_cycle, 0, Number.MAX_SAFE_INTEGER)) throw new EngineStateError("state.half_cycle: not a non-negative integer")
  let lastFetch: ChipStateJson["last_fetch"] = null
  if (st.last_fetch !== null && st.last_fetch !== undefined) {
    const lf = st.last_fetch as Record<string, unknown>
    if (typeof lf !== "object" || !isInt(lf.addr, 0, 0xffff) || !isInt(lf.opcode, 0, 0xff)) {
      throw new EngineStateError("state.last_fetch: expected null or {addr: 0..65535, opcode: 0..255}")
    }
    lastFetch = { addr: lf.addr, opcode: lf.opcode }
  }
  return {
    value: decodeBits(st.value as string, "nodes", "value"),
    pullup: decodeBits(st.pullup as string, "nodes", "pullup"),
    pulldown: decodeBits(st.pulldown as string, "nodes", "pulldown"),
    transOn: decodeBits(st.trans_on as string, "transistors", "trans_on"),
    halfCycle: st.half_cycle,
    lastFetch
  }
}

class SimulatorImpl implements Simulator {
  readonly meta = META
  private readonly tables: ChipTables
  private readonly chip: Chip
  private readonly observer: Observer
  private catalog: NodeCatalog | undefined

  constructor(readonly netlist: Netlist, options: SimulatorOptions) {
    if (netlist.nodeCount !== NODE_BITS || netlist.transistorCount !== TRANSISTOR_BITS) {
      throw new NetlistInvalid(
        "segdefs.js/transdefs.js",
        `expected ${NODE_BITS} nodes and ${TRANSISTOR_BITS} transistors, found ${netlist.nodeCount} and ${netlist.transistorCount}`
      )
    }
    this.tables = makeTables(netlist)
    this.chip = new Chip(this.tables, { memo: options.memo ?? true })
    this.observer = new Observer(netlist)
  }

  memoStats(): { hits: number; misses: number; spanHalfCycles: number } {
    return { hits: this.chip.memoHits, misses: this.chip.memoMisses, spanHalfCycles: this.chip.macroHalfCycles }
  }

  nodes(): NodeCatalog {
    this.catalog ??= nodeCatalog(this.netlist)
    return this.catalog
  }

  private encodeState(halfCycle: number, lastFetch: ChipStateJson["last_fetch"]): ChipStateJson {
    const c = this.chip
    const pad = (bits: Uint8Array, n: number) => (bits.length === n ? bits : bits.subarray(0, n))
    return {
      version: 1,
      half_cycle: halfCycle,
      last_fetch: lastFetch,
      value: encodeBits(pad(c.value, NODE_BITS), "nodes"),
      pullup: encodeBits(pad(c.pullup, NODE_BITS), "nodes"),
      pulldown: encodeBits(pad(c.pulldown, NODE_BITS), "nodes"),
      trans_on: encodeBits(pad(c.transOn, TRANSISTOR_BITS), "transistors")
    }
  }

  boot(req: BootRequest): StepResult {
    const watch = resolveWatch(this.netlist, req.watch)
    let mem: Uint8Array
    let fill: number
    if (req.memory instanceof Uint8Array) {
      if (req.memory.length !== 65536) throw new EngineStateError(`memory: ${req.memory.length} bytes, expected 65536`)
      mem = Uint8Array.from(req.memory)
      fill = req.fill ?? 0
    } else {
      mem = decodeMemory(req.memory)
      fill = memoryFill(req.memory)
    }
    if (req.resetVector !== undefined) {
      if (!isInt(req.resetVector, 0, 0xffff)) throw new StepRequestError("reset_vector: expected an integer 0..65535")
      mem[0xfffc] = req.resetVector & 0xff
      mem[0xfffd] = req.resetVector >> 8
    }
    const vector = mem[0xfffc]! | (mem[0xfffd]! << 8)
    const c = this.chip
    const pins = this.tables.pins
    c.powerOn()
    c.setPin(pins.res, 0)
    c.setPin(pins.clk0, 1)
    c.setPin(pins.rdy, 1)
    c.setPin(pins.so, 0)
    c.setPin(pins.irq, 1)
    c.setPin(pins.nmi, 1)
    c.settleAll()
    for (let i = 0; i < RESET_HALF_CYCLES; i++) c.halfStep(mem)
    c.setPin(pins.res, 1)
    let n = 0
    while (!(c.value[pins.sync] && !c.value[pins.clk0] && c.readBits(pins.ab) === vector)) {
      if (++n > BOOT_BOUND) throw new Error(`boot point not reached within ${BOOT_BOUND} half-cycles of reset`)
      c.halfStep(mem)
    }
    const lastFetch = { addr: vector, opcode: mem[vector]! }
    return {
      machine: { state: this.encodeState(0, lastFetch), memory: encodeMemory(mem, fill) },
      observe: this.observer.observe(c.value, 0, watch),
      stepped: 0,
      completed: true
    }
  }

  step(req: StepRequest): StepResult {
    const byCount = req.halfCycles !== undefined
    const byTarget = req.until !== undefined || req.untilPc !== undefined
    if (byCount === byTarget) throw new StepRequestError("give exactly one of half_cycles or until/until_pc")
    if (req.until !== undefined && req.until !== "instruction" && req.until !== "cycle") {
      throw new StepRequestError(`until: "${String(req.until)}" is not "instruction" or "cycle"`)
    }
    if (req.untilPc !== undefined && !isInt(req.untilPc, 0, 0xffff)) throw new StepRequestError("until_pc: expected an integer 0..65535")
    const format = req.format ?? "objects"
    if (format !== "objects" && format !== "rows") throw new StepRequestError(`format: "${String(format)}" is not "objects" or "rows"`)
    const trace = req.trace === true
    const bound = byCount ? req.halfCycles! : (req.maxHalfCycles ?? DEFAULT_MAX_HALF_CYCLES)
    if (typeof bound !== "number" || !Number.isInteger(bound) || bound < 0) {
      throw new StepRequestError(`${byCount ? "half_cycles" : "max_half_cycles"}: expected a non-negative integer`)
    }
    const limit = trace ? MAX_TRACED : MAX_STEP
    if (bound > limit) throw new StepLimitExceeded(bound, limit, trace)
    const pinLevels: Array<[number, number]> = []
    for (const name of PIN_ORDER) {
      const level = req.pins?.[name]
      if (level === undefined) continue
      if (level !== 0 && level !== 1) throw new StepRequestError(`pins.${name}: expected 0 or 1`)
      pinLevels.push([this.tables.pins[name], level])
    }
    for (const name of Object.keys(req.pins ?? {})) {
      if (!PIN_ORDER.includes(name as PinName)) throw new StepRequestError(`pins: unknown pin "${name}" (res, irq, nmi, rdy, so)`)
    }
    const watch = resolveWatch(this.netlist, req.watch)
    const { st, mem, fill } = this.loadMachine(req.machine)
    const c = this.chip
    for (const [node, level] of pinLevels) c.setPin(node, level)
    const run = this.run(c, mem, st.halfCycle, st.lastFetch, {
      count: byCount ? bound : undefined,
      bound,
      until: req.untilPc !== undefined ? "pc" : req.until,
      pc: req.untilPc,
      trace: trace ? format : undefined,
      watch
    })
    const result: StepResult = {
      machine: { state: this.encodeState(run.halfCycle, run.lastFetch), memory: encodeMemory(mem, fill) },
      observe: this.observer.observe(c.value, run.halfCycle, watch),
      stepped: run.stepped,
      completed: run.completed
    }
    if (run.trace !== undefined) result.trace = run.trace
    if (run.rows !== undefined) result.trace_rows = { columns: [...TRACE_COLUMNS, ...watch.map((w) => w.name)], rows: run.rows }
    return result
  }

  /** Decodes a Machine and loads its state into the chip. @throws EngineStateError */
  private loadMachine(machine: MachineJson): { st: ReturnType<typeof decodeState>; mem: Uint8Array; fill: number } {
    if (typeof machine !== "object" || machine === null) throw new EngineStateError("machine: not an object")
    const st = decodeState(machine.state)
    const mem = decodeMemory(machine.memory)
    const fill = memoryFill(machine.memory)
    this.chip.load(st)
    return { st, mem, fill }
  }

  frames(req: FramesRequest): FramesResult {
    if (!isInt(req.frames, 0, 1000)) throw new StepRequestError("frames: expected an integer 0..1000")
    for (const [name, v] of [["tick", req.tick], ["input", req.input], ["screen.addr", req.screen.addr]] as const) {
      if (!isInt(v, 0, 0xffff)) throw new StepRequestError(`${name}: expected an address 0..65535`)
    }
    if (!isInt(req.inputByte, 0, 255)) throw new StepRequestError("input byte: expected 0..255")
    if (!isInt(req.maxHalfCycles, 1, MAX_STEP)) throw new StepLimitExceeded(req.maxHalfCycles, MAX_STEP, false)
    if (!isInt(req.screen.length, 0, 0x10000 - req.screen.addr)) throw new StepRequestError("screen: the region runs past $FFFF")
    for (const a of req.read ?? []) if (!isInt(a, 0, 0xffff)) throw new StepRequestError("read: expected addresses 0..65535")
    const watch = resolveWatch(this.netlist, req.watch)
    const { st, mem, fill } = this.loadMachine(req.machine)
    const c = this.chip
    const screen = () => Buffer.from(mem.subarray(req.screen.addr, req.screen.addr + req.screen.length)).toString("hex")
    const pins = this.tables.pins
    let halfCycle = st.halfCycle
    let lastFetch = st.lastFetch
    const screenBefore = screen()
    const frames: Array<FrameResult> = []
    for (let f = 0; f < req.frames; f++) {
      mem[req.tick] = 0
      mem[req.input] = req.inputByte
      let n = 0
      // One half-cycle at a time: the frame ends exactly where the ROM's write of tick lands.
      while (n < req.maxHalfCycles && mem[req.tick] === 0) {
        c.halfStep(mem)
        n++
        if (c.value[pins.sync] === 1 && c.value[pins.clk0] === 0) {
          const addr = c.readBits(pins.ab)
          lastFetch = { addr, opcode: mem[addr]! }
        }
      }
      halfCycle += n
      const completed = mem[req.tick] !== 0
      frames.push({ completed, half_cycles: n, screen: screen() })
      if (!completed) break
    }
    return {
      machine: { state: this.encodeState(halfCycle, lastFetch), memory: encodeMemory(mem, fill) },
      observe: this.observer.observe(c.value, halfCycle, watch),
      screen_before: screenBefore,
      frames,
      read: Object.fromEntries((req.read ?? []).map((a) => [a, mem[a]!]))
    }
  }

  private run(
    c: Chip,
    mem: Uint8Array,
    halfCycle: number,
    lastFetch: ChipStateJson["last_fetch"],
    o: {
      count: number | undefined
      bound: number
      until: "instruction" | "cycle" | "pc" | undefined
      pc: number | undefined
      trace: "objects" | "rows" | undefined
      watch: ReadonlyArray<NodeEntry>
    }
  ) {
    const pins = this.tables.pins
    const trace: Array<Observation> | undefined = o.trace === "objects" ? [] : undefined
    const rows: Array<Array<number | string>> | undefined = o.trace === "rows" ? [] : undefined
    if (o.trace === undefined && (o.count !== undefined || o.until === "pc")) {
      // Untraced counted and breakpoint runs go through the chip's span replay (same result as
      // stepping one by one).
      const r = c.runHalfCycles(mem, o.bound, o.until === "pc" ? o.pc! : -1)
      const completed = o.count !== undefined || r.stopped
      return { stepped: r.done, completed, halfCycle: halfCycle + r.done, lastFetch: r.last ?? lastFetch, trace, rows }
    }
    let stepped = 0
    let completed = o.count !== undefined && o.count === 0
    while (stepped < o.bound) {
      c.halfStep(mem)
      stepped++
      halfCycle++
      const fetch = c.value[pins.sync] === 1 && c.value[pins.clk0] === 0
      let addr = -1
      if (fetch) {
        addr = c.readBits(pins.ab)
        lastFetch = { addr, opcode: mem[addr]! }
      }
      if (trace !== undefined) trace.push(this.observer.observe(c.value, halfCycle, o.watch))
      if (rows !== undefined) rows.push(this.observer.row(c.value, halfCycle, o.watch))
      if (o.count !== undefined) {
        if (stepped === o.count) completed = true
        continue
      }
      if ((o.until === "cycle" && stepped === 2) || (o.until === "instruction" && fetch) || (o.until === "pc" && fetch && addr === o.pc)) {
        completed = true
        break
      }
    }
    return { stepped, completed, halfCycle, lastFetch, trace, rows }
  }
}

/** Engine options; the defaults are what the service runs. */
export interface SimulatorOptions {
  /**
   * Replay recurring half-cycles from the memo (default true: where it pays); false settles every
   * half-cycle, "always" keeps the memo on even where it does not pay (measurements, tests).
   */
  readonly memo?: boolean | "always"
}

/**
 * Loads the netlist from `netlistDir` and builds a simulator (about 0.2 s).
 * @throws NetlistMissing when the folder lacks the netlist files; NetlistInvalid otherwise.
 */
export const makeSimulator = (netlistDir: string, options: SimulatorOptions = {}): Simulator =>
  new SimulatorImpl(loadNetlist(netlistDir), options)

/** Builds a simulator from an already parsed netlist. */
export const makeSimulatorFromNetlist = (netlist: Netlist, options: SimulatorOptions = {}): Simulator =>
  new SimulatorImpl(netlist, options)

