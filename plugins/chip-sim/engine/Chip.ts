/**
 * Switch-level simulation of the visual6502 NMOS 6502 netlist over typed arrays.
 *
 * Nothing of the processor is modelled: every node is a wire with a logic level, every
 * transistor a switch closed while its gate node is high. Settling follows the event scheme of
 * the visual6502 / perfect6502 simulators, which the reference traces in
 * `shared/chip-sim/golden` were recorded with, because where the netlist races (a latch loading
 * while its clock falls) the outcome depends on the order events are processed in:
 *
 * - a settle works on a list of nodes in passes (at most 100); each node of the pass is
 *   recomputed in list order, in place, so later nodes of a pass see earlier results;
 * - recomputing a node finds its group: every node reachable through conducting transistors,
 *   collected depth-first in transistor-row order, stopping at the rails;
 * - the group's level, by priority: ground, power, a pulled-down node, a pulled-up node, a node
 *   already high (stored charge), else low;
 * - each group node whose level changes switches the transistors it gates and queues, for the
 *   next pass, the non-rail channel terminals of those transistors: both when they turn off,
 *   one (the first non-rail one) when they turn on, since on they share one group.
 *
 * The settle loop runs as WebAssembly (SettleKernel.ts, assembled at load time from the text in
 * that file) over a memory holding the node levels and caches, which the TypeScript code here
 * reads and writes through typed-array views; states whose transistors do not follow their gates
 * settle in TypeScript (settleGeneral), the same scheme.
 *
 * The whole machine state is the four arrays `value`, `pullup`, `pulldown`, `transOn` (see
 * Encoding.ts for their wire form); everything else here is a cache derived from them,
 * including a memo of whole settles and of 32-half-cycle spans (Memo.ts), keyed by the complete
 * state and confirmed word for word before a replay, which only changes how fast a state that
 * recurs is carried forward: tests compare results with the memo on and off over millions of
 * half-cycles of Klaus Dormann's functional test.
 */
import { makeKey, MemoTable, SPAN_EVENT, type SettleRecord, type SpanRecord } from "./Memo.ts"
import { DRV_GND, DRV_PULLDOWN, DRV_PULLUP, DRV_VCC, RANK_HIGH, rankOf, type ChipTables } from "./Tables.ts"
import {
  makeKernel,
  NOTE_HASH,
  NOTE_MACRO,
  NOTE_RECORD,
  REG_GEN,
  REG_GGEN,
  REG_H,
  REG_MACRO_COUNT,
  REG_MACRO_GEN,
  REG_REC_COUNT,
  REG_REC_GEN,
  type Kernel
} from "./SettleKernel.ts"

/** Settling gives up after this many passes, as visual6502/perfect6502 do (an oscillating loop). */
export const MAX_SETTLE_PASSES = 100

/**
 * Bounds of the half-cycle memo: recorded settles per generation (two generations are kept,
 * a few hundred bytes each), and fingerprints remembered as seen once.
 */
export const MEMO_ENTRIES_MAX = 8192
export const MEMO_SEEN_MAX = 1 << 16
/**
 * The memo judges itself over windows of this many settles: unless a quarter of them were
 * replayed or were states already seen (a loop longer than the memo has learnt so far), it
 * switches off, fingerprints included, for a back-off that doubles from 16384 settles up to
 * 2^18 each time a trial window fails, so a run that never repeats pays little.
 */
const MEMO_WINDOW = 16384
const MEMO_BACKOFF_MIN = 16384
const MEMO_BACKOFF_MAX = 1 << 18

/**
 * Span of a macro, in half-cycles: a run of half-cycles from a recurring state, stored as its
 * bus traffic (reads to check, writes to redo, opcode fetches) and its net node flips; replayed
 * whole when every read finds the same byte. Macros per generation (two kept) are bounded too.
 */
export const MACRO_HALF_CYCLES = 32
export const MACRO_ENTRIES_MAX = 4096

export { DRV_GND, DRV_PULLDOWN, DRV_PULLUP, DRV_VCC, makeTables, type ChipTables, type PinIds } from "./Tables.ts"

/** The four arrays that are the whole electrical state of the chip. */
export interface NodeState {
  readonly value: Uint8Array
  readonly pullup: Uint8Array
  readonly pulldown: Uint8Array
  readonly transOn: Uint8Array
}

/**
 * One chip: its electrical state plus caches and scratch space for settling. Not re-entrant;
 * the Simulator keeps one and reloads its state for every request.
 *
 * Speed without changing the order of events (checked node for node against a plain
 * implementation of the scheme on every golden program): each node keeps two words, a drive
 * word (its pulls and its counts of conducting transistors to ground and to power) and a bitmask
 * of its conducting node-to-node transistors, both updated by adding or subtracting a node's
 * precomputed effect list when it changes level. A node whose mask is 0 is alone in its group
 * and is recomputed from its drive word alone; a group walk visits only set bits, lowest first,
 * which is the transistor-row order a recursive walk would take.
 *
 * On top, states that recur are carried forward from memos (Memo.ts) keyed by the complete
 * state: single settles (halfStep) and spans of 32 half-cycles (runHalfCycles). A record is
 * replayed only after its key has been compared word for word with the present state.
 */
export class Chip {
  /** Node levels (a view of the settle kernel's memory: written in place, never replaced). */
  readonly value: Uint8Array
  pullup: Uint8Array
  pulldown: Uint8Array
  /**
   * Transistor conduction. While the state is consistent it is only written back on demand
   * (transistors conduct as their gates say, so nothing in settling reads it): see transOn.
   */
  private trans: Uint8Array
  private transStale = false

  /** Conduction of every transistor (read-only view; brought up to date first). */
  get transOn(): Uint8Array {
    if (this.transStale) {
      const gate = this.tables.netlist.gate
      const value = this.value
      const trans = this.trans
      for (let i = 0; i < trans.length; i++) trans[i] = value[gate[i]!]!
      this.transStale = false
    }
    return this.trans
  }

  /**
   * Two words per node, caches of transOn and the pulls: ns[2n] has bit k set while the k-th
   * transistor of n's nnT list conducts (0: n is alone in its group, and a walk visits only the
   * set bits); ns[2n+1] is n's drive word (DRV_PULLUP etc.: pulls and rail contacts).
   */
  private ns: Int32Array
  private stackMask: Int32Array
  private listA: Int32Array
  private listB: Int32Array
  private listStamp: Int32Array
  private listGen = 0
  private groupStamp: Int32Array
  private groupGen = 0
  private group: Int32Array
  /** Walk stack: nnStart offset of each node on the path and its not yet followed channels. */
  private stackNode: Int32Array
  /** The WebAssembly settle loop (SettleKernel.ts) and views of its registers and scratch. */
  private readonly kernel: Kernel
  private readonly regs: Int32Array
  private readonly scratch: Int32Array

  /**
   * Every transistor conducts exactly when its gate is high. Settling keeps this true, so it is
   * decided when a state is loaded; while it holds, a node's change switches all its gated
   * transistors and the caches follow from the static effect lists of ChipTables.
   */
  private consistent = true
  /**
   * Every node outside ChipTables.drivenNodes has the pull-up `segdefs.js` gives it and no
   * pull-down (true of every state the engine makes; a loaded state may differ). With
   * `consistent`, the memo's key (packed levels, driven pins' pulls) is then the whole state.
   */
  private pullsStandard = true
  /** Pulls of the driven pins, bits 2i (pull-up) and 2i+1 (pull-down) for slot i. */
  private pinPulls = 0
  /** Packed node levels (a view of the kernel's vbits), kept while the memo is on. */
  private readonly levels: Uint32Array
  /** Zobrist fingerprint of the state (ChipTables.zValue), kept while the memo is on. */
  private h1 = 0
  /** Recorded settles (see halfStep) and spans (see runHalfCycles); see Memo.ts. */
  private readonly settles = new MemoTable<SettleRecord>(MEMO_ENTRIES_MAX)
  private readonly spans = new MemoTable<SpanRecord>(MACRO_ENTRIES_MAX)
  private readonly seen = new Set<number>()
  private recording = false
  private recStamp: Int32Array
  private recGen = 0
  /** Nodes changed by the settle being recorded (each once, by recStamp) and their level before. */
  private recNodes: Int32Array
  private recNodeWas: Uint8Array
  private recCount = 0
  /** Settles replayed and simulated through the memo since construction (bench, tests). */
  memoHits = 0
  memoMisses = 0
  /** Half-cycles carried by span replays since construction (bench, tests). */
  macroHalfCycles = 0
  /** The span being recorded: its hash and key, length so far, bus events and nodes changed. */
  private macroRec = false
  private macroHash = 0
  private macroKey: Uint32Array | undefined
  private macroLen = 0
  /** Bus events of the span being recorded (triples, see SpanRecord.events). */
  private macroEvents: Int32Array
  private macroEventCount = 0
  private macroNodes: Int32Array
  private macroNodeCount = 0
  /** Memory bytes overwritten by a span replay, to undo when a later read does not match. */
  private undoAddr: Int32Array
  private undoByte: Uint8Array
  private macroStamp: Int32Array
  private macroOrig: Uint8Array
  private macroGen = 0
  private readonly memoEnabled: boolean
  /** Whether the memo judges itself and switches off where it does not pay (see MEMO_WINDOW). */
  private readonly memoAdaptive: boolean
  /**
   * Whether the fingerprint and packed levels are kept and the memo consulted; speed only, never
   * results. Only ever true while the state is consistent with standard pulls (memoUsable).
   */
  private memoActive: boolean
  private memoWindow = 0
  private memoWindowHits = 0
  private memoWindowRepeats = 0
  private memoCooldown = 0
  private memoBackoff = MEMO_BACKOFF_MIN

  /**
   * `memo: false` settles every half-cycle from scratch; `"always"` keeps the memo on wherever it
   * can be used, never judging whether it pays (tests and the differential run compare all three).
   */
  constructor(readonly tables: ChipTables, options: { memo?: boolean | "always" } = {}) {
    this.memoEnabled = options.memo !== false
    this.memoAdaptive = options.memo !== "always"
    this.memoActive = this.memoEnabled
    const nn = tables.nodeCount
    // Levels, node words and settling scratch live in the kernel's memory (shared views).
    const kernel = makeKernel(tables, MAX_SETTLE_PASSES)
    const L = kernel.layout
    const buf = kernel.memory.buffer
    this.kernel = kernel
    this.regs = new Int32Array(buf, L.regs, 16)
    this.scratch = new Int32Array(buf, L.scratch, nn)
    this.value = new Uint8Array(buf, L.value, nn)
    this.levels = new Uint32Array(buf, L.vbits, (nn + 31) >> 5)
    this.pullup = new Uint8Array(nn)
    this.pulldown = new Uint8Array(nn)
    this.trans = new Uint8Array(tables.transistorCount)
    this.ns = new Int32Array(buf, L.ns, 2 * nn)
    this.stackMask = new Int32Array(buf, L.stackMask, nn + 1)
    this.listA = new Int32Array(buf, L.listA, nn)
    this.listB = new Int32Array(buf, L.listB, nn)
    this.listStamp = new Int32Array(buf, L.listStamp, nn)
    this.groupStamp = new Int32Array(buf, L.groupStamp, nn)
    this.group = new Int32Array(buf, L.group, nn)
    this.stackNode = new Int32Array(buf, L.stackNode, nn + 1)
    this.recStamp = new Int32Array(buf, L.recStamp, nn)
    this.macroStamp = new Int32Array(buf, L.macroStamp, nn)
    this.macroOrig = new Uint8Array(buf, L.macroOrig, nn)
    this.recNodes = new Int32Array(buf, L.recNodes, nn)
    this.recNodeWas = new Uint8Array(buf, L.recNodeWas, nn)
    this.macroNodes = new Int32Array(buf, L.macroNodes, nn)
    // a half-cycle has at most a read or a write, and a fetch row
    this.macroEvents = new Int32Array(3 * 2 * MACRO_HALF_CYCLES)
    this.undoAddr = new Int32Array(MACRO_HALF_CYCLES)
    this.undoByte = new Uint8Array(MACRO_HALF_CYCLES)
  }

  /** Replaces the electrical state with copies of `s` (lengths must match the netlist). */
  load(s: NodeState): void {
    this.value.set(s.value)
    this.pullup = Uint8Array.from(s.pullup)
    this.pulldown = Uint8Array.from(s.pulldown)
    this.trans = Uint8Array.from(s.transOn)
    this.transStale = false
    this.resetScratch()
  }

  /** Copies of the electrical state. */
  save(): NodeState {
    return {
      value: Uint8Array.from(this.value),
      pullup: Uint8Array.from(this.pullup),
      pulldown: Uint8Array.from(this.pulldown),
      transOn: Uint8Array.from(this.transOn)
    }
  }

  /** Empties the half-cycle memo and switches it on (tests, benchmarks); results are unaffected. */
  memoReset(): void {
    this.settles.clear()
    this.spans.clear()
    this.seen.clear()
    this.macroRec = false
    this.memoActive = this.memoEnabled && this.memoUsable()
    this.memoBackoff = MEMO_BACKOFF_MIN
    this.memoWindow = 0
    this.memoWindowHits = 0
    this.memoWindowRepeats = 0
    this.fingerprint()
  }

  /** Whether the memo's key is the whole state (see pullsStandard); decided on load. */
  private memoUsable(): boolean {
    return this.consistent && this.pullsStandard
  }

  /** Rebuilds the caches and the fingerprint from the state; clears the generation stamps. */
  private resetScratch(): void {
    this.resetCaches()
    if (!this.memoUsable()) this.memoActive = false
    else if (this.memoEnabled && this.memoCooldown <= 0) this.memoActive = true
    this.fingerprint()
  }

  /** Recomputes the fingerprint and the packed levels from the state. */
  private fingerprint(): void {
    const t = this.tables
    let h1 = 0
    const fold = (z: Int32Array, bits: Uint8Array) => {
      for (let i = 0; i < bits.length; i++) {
        if (!bits[i]) continue
        h1 ^= z[i]!
      }
    }
    fold(t.zValue, this.value)
    fold(t.zPullup, this.pullup)
    fold(t.zPulldown, this.pulldown)
    fold(t.zTrans, this.transOn)
    this.h1 = h1
    const levels = this.levels
    levels.fill(0)
    for (let n = 0; n < t.nodeCount; n++) if (this.value[n]) levels[n >> 5]! |= 1 << (n & 31)
  }

  private resetCaches(): void {
    const t = this.tables
    this.macroRec = false
    const gate = t.netlist.gate
    this.consistent = true
    for (let i = 0; i < t.transistorCount; i++) {
      if (this.transOn[i] !== this.value[gate[i]!]) {
        this.consistent = false
        break
      }
    }
    this.pullsStandard = true
    this.pinPulls = 0
    const standardUp = t.netlist.pullup
    for (let n = 0; n < t.nodeCount; n++) {
      const slot = t.drivenSlot[n]!
      if (slot >= 0) this.pinPulls |= (this.pullup[n]! << (2 * slot)) | (this.pulldown[n]! << (2 * slot + 1))
      else if (this.pullup[n] !== standardUp[n] || this.pulldown[n] !== 0) this.pullsStandard = false
    }
    this.recStamp.fill(0)
    this.recGen = 0
    this.macroStamp.fill(0)
    this.macroGen = 0
    this.listStamp.fill(0)
    this.listGen = 0
    this.groupStamp.fill(0)
    this.groupGen = 0
    const ns = this.ns
    for (let n = 0; n < t.nodeCount; n++) {
      ns[2 * n] = 0
      ns[2 * n + 1] = (this.pullup[n] ? DRV_PULLUP : 0) | (this.pulldown[n] ? DRV_PULLDOWN : 0)
    }
    for (let i = 0; i < t.transistorCount; i++) {
      if (!this.transOn[i]) continue
      const k = t.tKind[i]!
      if (k === 1) ns[2 * t.tNode1[i]! + 1]! += DRV_GND
      else if (k === 2) ns[2 * t.tNode1[i]! + 1]! += DRV_VCC
      else if (k === 3) {
        ns[2 * t.tNode1[i]!]! |= t.tBit1[i]!
        ns[2 * t.tNode2[i]!]! |= t.tBit2[i]!
      }
    }
  }

  /**
   * Power-on state: every node low and floating except `vcc` high, every transistor off,
   * pull-ups as `segdefs.js` marks them, no pull-downs.
   */
  powerOn(): void {
    const t = this.tables
    this.value.fill(0)
    this.value[t.vcc] = 1
    this.pullup = Uint8Array.from(t.netlist.pullup)
    this.pulldown = new Uint8Array(t.nodeCount)
    this.trans = new Uint8Array(t.transistorCount)
    this.transStale = false
    this.resetScratch()
  }

  /** Drives a pin: pull-up to `level`, pull-down to its opposite, then settles from it. */
  setPin(node: number, level: number): void {
    this.drive(node, level)
    // a rail is never settled (the kernel's lists hold no rails)
    if (node === this.tables.vss || node === this.tables.vcc) return
    this.listA[0] = node
    this.settle(1)
  }

  /** Sets a node's pulls for `level`, keeping the fingerprint while the memo is on. */
  private drive(node: number, level: number): void {
    const t = this.tables
    const up = level ? 1 : 0
    const down = up ^ 1
    const slot = t.drivenSlot[node]!
    if (slot < 0 && (this.pullup[node] !== up || this.pulldown[node] !== down)) {
      // a node outside the driven pins: the memo's key would no longer be the whole state
      this.pullsStandard = false
      this.memoActive = false
      this.macroRec = false
    }
    if (this.pullup[node] !== up) {
      this.pullup[node] = up
      this.ns[2 * node + 1]! ^= DRV_PULLUP
      if (slot >= 0) this.pinPulls ^= 1 << (2 * slot)
      if (this.memoActive) {
        this.h1 ^= t.zPullup[node]!
      }
    }
    if (this.pulldown[node] !== down) {
      this.pulldown[node] = down
      this.ns[2 * node + 1]! ^= DRV_PULLDOWN
      if (slot >= 0) this.pinPulls ^= 1 << (2 * slot + 1)
      if (this.memoActive) {
        this.h1 ^= t.zPulldown[node]!
      }
    }
  }

  /** Settles starting from every node, in node order (the end of power-on). */
  settleAll(): void {
    const t = this.tables
    let count = 0
    // rails are never settled: left out of the list (the kernel's lists hold no rails)
    for (let i = 0; i < t.nodeCount; i++) if (i !== t.vss && i !== t.vcc) this.listA[count++] = i
    this.settle(count)
  }

  /** Level (0/1) of a node. */
  get(node: number): number {
    return this.value[node]!
  }

  /** Reads `ids` as a little-endian number (bit i = node ids[i]). */
  readBits(ids: Int32Array): number {
    let v = 0
    for (let i = 0; i < ids.length; i++) if (this.value[ids[i]!]) v |= 1 << i
    return v >>> 0
  }

  /**
   * One half-cycle with bus service, per shared/chip-sim/README.md: invert `clk0` and settle;
   * on a rising edge, a read (`rw` high) drives `db0..db7` from `memory[addr]` and settles, a
   * write stores the data bus into `memory[addr]`.
   *
   * Both settles go through the memo: a settle is a function of the whole state after the
   * drive and of the node it starts from, so when that state recurs (a program idling in a
   * loop) the recorded net node flips are replayed instead of re-simulated, once the record's
   * key has been found equal to the state. The memo switches itself off on runs that do not
   * repeat.
   */
  halfStep(memory: Uint8Array): void {
    const p = this.tables.pins
    const wasHigh = this.value[p.clk0]!
    this.memoSettle(p.clk0, wasHigh ? 0 : 1, -1)
    if (wasHigh) return
    const addr = this.readBits(p.ab)
    if (this.value[p.rw]) {
      const byte = memory[addr]!
      if (this.macroRec) this.macroEvent(0, addr, byte)
      this.memoSettle(-1, 0, byte)
    } else {
      const byte = this.readBits(p.db)
      if (this.macroRec) this.macroEvent(1, addr, byte)
      memory[addr] = byte
    }
  }

  /**
   * Runs up to `n` half-cycles (as many {@link halfStep}s), stopping early after the first
   * opcode-fetch row (`sync` high, `clk0` low) at address `stopPc` when one is given (>= 0).
   * Returns the half-cycles run, whether it stopped at `stopPc`, and the last fetch row met as
   * `{addr, opcode = memory[addr]}` (or null).
   *
   * Where a state recurs, whole spans of MACRO_HALF_CYCLES half-cycles are replayed: a span
   * recorded from the same state (key compared in full) applies when each of its reads finds in
   * memory the byte it found when recorded (its writes are redone in order first, so reads of
   * bytes it wrote itself check too) and it holds no fetch at `stopPc`; otherwise the memory is
   * restored and the half-cycles are simulated. Same end state, memory and fetch as stepping
   * one by one.
   */
  runHalfCycles(
    memory: Uint8Array,
    n: number,
    stopPc = -1
  ): { done: number; stopped: boolean; last: { addr: number; opcode: number } | null } {
    const p = this.tables.pins
    let last: { addr: number; opcode: number } | null = null
    let done = 0
    let stopped = false
    while (done < n) {
      if (!this.macroRec && this.memoActive && n - done >= MACRO_HALF_CYCLES) {
        const hash = (this.h1 ^ 0x5bd1e995) & 0x3fffffff
        const m = this.spans.find(hash, this.levels, this.pinPulls, SPAN_EVENT)
        if (m !== undefined) {
          const fetch = this.applyMacro(memory, m, stopPc)
          if (fetch !== undefined) {
            if (fetch !== null) last = fetch
            done += MACRO_HALF_CYCLES
            continue
          }
        } else if (!this.spans.has(hash)) this.startMacro(hash)
      }
      this.halfStep(memory)
      done++
      if (this.value[p.sync] && !this.value[p.clk0]) {
        const addr = this.readBits(p.ab)
        last = { addr, opcode: memory[addr]! }
        if (this.macroRec) this.macroEvent(2, addr, 0)
        if (addr === stopPc) {
          stopped = true
          break
        }
      }
      if (this.macroRec && ++this.macroLen === MACRO_HALF_CYCLES) this.finishMacro()
    }
    // A span cut short by the end of the run is dropped.
    this.macroRec = false
    return { done, stopped, last }
  }

  private startMacro(hash: number): void {
    this.macroRec = true
    this.macroHash = hash
    this.macroKey = makeKey(this.levels, this.pinPulls, SPAN_EVENT)
    this.macroLen = 0
    this.macroEventCount = 0
    this.macroNodeCount = 0
    if (++this.macroGen > 0x3fffffff) {
      this.macroStamp.fill(0)
      this.macroGen = 1
    }
  }

  private finishMacro(): void {
    this.macroRec = false
    // The fingerprint and levels must have been kept throughout (the memo stayed on).
    if (!this.memoActive || this.macroKey === undefined) return
    this.spans.set(this.macroHash, {
      key: this.macroKey,
      events: this.macroEvents.slice(0, this.macroEventCount),
      nodes: this.netFlips(this.macroNodes, this.macroNodeCount, this.macroOrig, false),
      pulls: this.pinPulls,
      h1: this.h1
    })
  }

  /** Appends a bus event to the span being recorded. */
  private macroEvent(kind: number, addr: number, byte: number): void {
    const ev = this.macroEvents
    const k = this.macroEventCount
    if (k + 3 > ev.length) {
      this.macroRec = false // cannot happen within a span's half-cycles; dropped if it did
      return
    }
    ev[k] = kind
    ev[k + 1] = addr
    ev[k + 2] = byte
    this.macroEventCount = k + 3
  }

  /**
   * The nodes among the first `count` of `nodes` whose level now differs from `was` (indexed by
   * node, or by position when `byPosition`), as a new array.
   */
  private netFlips(nodes: Int32Array, count: number, was: Uint8Array, byPosition: boolean): Uint16Array {
    const value = this.value
    let flipped = 0
    for (let i = 0; i < count; i++) {
      const n = nodes[i]!
      if (value[n] !== was[byPosition ? i : n]) flipped++
    }
    const out = new Uint16Array(flipped)
    let k = 0
    for (let i = 0; i < count; i++) {
      const n = nodes[i]!
      if (value[n] !== was[byPosition ? i : n]) out[k++] = n
    }
    return out
  }

  /**
   * Replays a span if its reads hold and it fetches nothing at `stopPc`: returns the last fetch
   * row in it (or null), or undefined with memory untouched otherwise.
   */
  private applyMacro(memory: Uint8Array, m: SpanRecord, stopPc: number): { addr: number; opcode: number } | null | undefined {
    const ev = m.events
    const undoAddr = this.undoAddr
    const undoByte = this.undoByte
    let undo = 0
    let lastAddr = -1
    let lastOpcode = 0
    for (let i = 0; i < ev.length; i += 3) {
      const kind = ev[i]!
      const addr = ev[i + 1]!
      if (kind === 0) {
        if (memory[addr] !== ev[i + 2]) {
          for (let k = undo - 1; k >= 0; k--) memory[undoAddr[k]!] = undoByte[k]!
          return undefined
        }
      } else if (kind === 1) {
        undoAddr[undo] = addr
        undoByte[undo++] = memory[addr]!
        memory[addr] = ev[i + 2]!
      } else {
        if (addr === stopPc) {
          for (let k = undo - 1; k >= 0; k--) memory[undoAddr[k]!] = undoByte[k]!
          return undefined
        }
        lastAddr = addr
        lastOpcode = memory[addr]!
      }
    }
    const last = lastAddr < 0 ? null : { addr: lastAddr, opcode: lastOpcode }
    this.toggleAll(m.nodes)
    this.setPinPulls(m.pulls)
    this.h1 = m.h1
    this.macroHalfCycles += MACRO_HALF_CYCLES
    return last
  }

  /** Sets the driven pins' pulls (and their drive words) from a packed word (see pinPulls). */
  private setPinPulls(pulls: number): void {
    const nodes = this.tables.drivenNodes
    for (let slot = 0; slot < nodes.length; slot++) {
      const node = nodes[slot]!
      const up = (pulls >>> (2 * slot)) & 1
      const down = (pulls >>> (2 * slot + 1)) & 1
      this.pullup[node] = up
      this.pulldown[node] = down
      this.ns[2 * node + 1] = (this.ns[2 * node + 1]! & ~(DRV_PULLUP | DRV_PULLDOWN)) | (up ? DRV_PULLUP : 0) | (down ? DRV_PULLDOWN : 0)
    }
    this.pinPulls = pulls
  }

  /**
   * Drives `pin` to `level` (pin >= 0), or the data bus with `byte`, and settles, via the memo:
   * the settle's key is the state after the drive and the event (0: from the data bus, pin + 1:
   * from that pin).
   */
  private memoSettle(pin: number, level: number, byte: number): void {
    if (pin >= 0) this.drive(pin, level)
    else {
      const db = this.tables.pins.db
      for (let i = 0; i < 8; i++) this.drive(db[i]!, (byte >> i) & 1)
    }
    if (!this.memoActive) {
      if (this.memoEnabled && --this.memoCooldown <= 0 && this.memoUsable()) {
        this.memoActive = true
        this.fingerprint()
        this.memoWindow = 0
        this.memoWindowHits = 0
        this.memoWindowRepeats = 0
      }
      this.settleFrom(pin)
      return
    }
    if (this.memoAdaptive && ++this.memoWindow >= MEMO_WINDOW) {
      const poor = this.memoWindowHits * 2 < this.memoWindow
      this.memoWindow = 0
      this.memoWindowHits = 0
      this.memoWindowRepeats = 0
      if (poor) {
        // Off from here: the fingerprint is no longer kept, so nothing below may be recorded.
        this.memoActive = false
        this.macroRec = false
        this.memoCooldown = this.memoBackoff
        this.memoBackoff = Math.min(this.memoBackoff * 2, MEMO_BACKOFF_MAX)
        this.settleFrom(pin)
        return
      }
      this.memoBackoff = MEMO_BACKOFF_MIN
    }
    const event = pin + 1
    // A small-integer map key (30 bits); the record's full key decides.
    const hash = (this.h1 ^ Math.imul(event + 1, 0x9e3779b1)) & 0x3fffffff
    const hit = this.settles.find(hash, this.levels, this.pinPulls, event)
    if (hit !== undefined) {
      this.memoHits++
      this.memoWindowHits++
      this.toggleAll(hit.nodes)
      this.h1 = hit.h1
      return
    }
    this.memoMisses++
    // Recorded at first sight: a loop then replays from its second turn. The seen set only
    // tells the self-assessment whether misses are states coming round again.
    if (this.seen.has(hash)) this.memoWindowRepeats++
    else {
      if (this.seen.size >= MEMO_SEEN_MAX) this.seen.clear()
      this.seen.add(hash)
    }
    const key = makeKey(this.levels, this.pinPulls, event)
    this.startRecording()
    this.settleFrom(pin)
    this.recording = false
    const nodes = this.netFlips(this.recNodes, this.recCount, this.recNodeWas, true)
    this.settles.set(hash, { key, nodes, h1: this.h1 })
  }

  /** Settles from `pin` (>= 0) or from the data bus (already driven). */
  private settleFrom(pin: number): void {
    if (pin >= 0) {
      this.listA[0] = pin
      this.settle(1)
      return
    }
    const db = this.tables.pins.db
    for (let i = 0; i < 8; i++) this.listA[i] = db[i]!
    this.settle(8)
  }

  private startRecording(): void {
    this.recording = true
    if (++this.recGen > 0x3fffffff) {
      this.recStamp.fill(0)
      this.recGen = 1
    }
    this.recCount = 0
  }

  /**
   * Settles from the first `count` nodes of listA (the event scheme of the module comment), none
   * of them a rail (dependant lists hold none; setPin and settleAll leave them out). Consistent
   * states settle in the WebAssembly kernel, which also notes each change for the memo
   * (fingerprint, packed levels, recorders) as asked: the counters involved go through its
   * registers.
   */
  private settle(count: number): void {
    if (!this.consistent) return this.settleGeneral(count)
    if (this.listGen > 0x3fffffff || this.groupGen > 0x3fffffff) {
      this.listStamp.fill(0)
      this.groupStamp.fill(0)
      this.listGen = 0
      this.groupGen = 0
    }
    this.transStale = true
    const flags = (this.memoActive ? NOTE_HASH : 0) | (this.recording ? NOTE_RECORD : 0) | (this.macroRec ? NOTE_MACRO : 0)
    const regs = this.regs
    if (flags !== 0) {
      regs[REG_H] = this.h1
      regs[REG_REC_GEN] = this.recGen
      regs[REG_REC_COUNT] = this.recCount
      regs[REG_MACRO_GEN] = this.macroGen
      regs[REG_MACRO_COUNT] = this.macroNodeCount
    }
    const L = this.kernel.layout
    const listA = this.listA.byteOffset
    const listB = listA === L.listA ? L.listB : L.listA
    if (flags === 0) this.kernel.settle(count, listA, listB, this.listGen, this.groupGen, 0)
    else this.kernel.settleNoted(count, listA, listB, this.listGen, this.groupGen, flags)
    this.listGen = regs[REG_GEN]!
    this.groupGen = regs[REG_GGEN]!
    if (flags !== 0) {
      this.h1 = regs[REG_H]!
      this.recCount = regs[REG_REC_COUNT]!
      this.macroNodeCount = regs[REG_MACRO_COUNT]!
    }
  }

  /** Settle for states where transistors need not conduct as their gates say (TypeScript). */
  private settleGeneral(count: number): void {
    const t = this.tables
    const vss = t.vss
    const vcc = t.vcc
    const nnStart = t.nnStart
    const nnOther = t.nnOther
    const value = this.value
    const ns = this.ns
    const listStamp = this.listStamp
    const groupStamp = this.groupStamp
    const group = this.group
    const stackNode = this.stackNode
    const stackMask = this.stackMask
    let cur = this.listA
    let next = this.listB
    if (this.listGen > 0x3fffffff || this.groupGen > 0x3fffffff) {
      listStamp.fill(0)
      groupStamp.fill(0)
      this.listGen = 0
      this.groupGen = 0
    }
    let gen = this.listGen
    let ggen = this.groupGen
    for (let pass = 0; pass < MAX_SETTLE_PASSES && count > 0; pass++) {
      gen++
      let nextCount = 0
      for (let i = 0; i < count; i++) {
        const start = cur[i]!
        if (start === vss || start === vcc) continue
        const sm = ns[2 * start]!
        let nv: number
        let gcount: number
        if (sm === 0) {
          // Alone in its group: rails by count, then pulls, then stored charge (unchanged).
          const d = ns[2 * start + 1]!
          if (d === 0) continue
          nv = d >= 0x10000 ? 0 : d >= 0x100 ? 1 : d & 2 ? 0 : 1 // DRV_GND, DRV_VCC, DRV_PULLDOWN
          if (nv === value[start]) continue
          group[0] = start
          gcount = 1
        } else {
          let o = -1
          if ((sm & (sm - 1)) === 0) {
            const x = nnOther[nnStart[start]! + 31 - Math.clz32(sm)]!
            const om = ns[2 * x]!
            if ((om & (om - 1)) === 0) o = x
          }
          if (o >= 0) {
            // One conducting channel to a node with no other: a pair, walked start first.
            const ra = rankOf(ns[2 * start + 1]!, value[start]!)
            const rb = rankOf(ns[2 * o + 1]!, value[o]!)
            nv = (RANK_HIGH >> (ra > rb ? ra : rb)) & 1
            group[0] = start
            group[1] = o
            gcount = 2
          } else {
            // Depth-first walk over conducting node-to-node transistors in transistor-row
            // order (the order changes are then applied in), as a recursive walk would visit.
            ggen++
            let rank = 0
            gcount = 0
            let sp = 0
            let m = start
            groupStamp[start] = ggen
            group[gcount++] = start
            stackNode[0] = nnStart[start]!
            stackMask[0] = sm
            for (;;) {
              if (rank < 5) {
                const r = rankOf(ns[2 * m + 1]!, value[m]!)
                if (r > rank) rank = r
              }
              let found = -1
              while (sp >= 0) {
                const mk = stackMask[sp]!
                if (mk === 0) {
                  sp--
                  continue
                }
                const low = mk & -mk
                stackMask[sp] = mk ^ low
                const x = nnOther[stackNode[sp]! + 31 - Math.clz32(low)]!
                if (groupStamp[x] === ggen) continue
                found = x
                break
              }
              if (found < 0) break
              m = found
              groupStamp[m] = ggen
              group[gcount++] = m
              sp++
              stackNode[sp] = nnStart[m]!
              stackMask[sp] = ns[2 * m]!
            }
            nv = (RANK_HIGH >> rank) & 1
          }
        }
        // Apply the level to the group in walk order: each node that changes switches the
        // transistors it gates and queues its dependants for the next pass.
        for (let k = 0; k < gcount; k++) {
          const n = group[k]!
          if (value[n] !== nv) nextCount = this.change(n, nv, next, nextCount, gen)
        }
      }
      const tmp = cur
      cur = next
      next = tmp
      count = nextCount
    }
    this.listGen = gen
    this.groupGen = ggen
    this.listA = cur
    this.listB = next
  }

  /**
   * Sets node n to nv in a state where transistors need not conduct as their gates say: switches
   * those it gates that differ (keeping the node words) and queues their channel terminals for
   * the next pass; returns the new queue length. The memo is off in such states (memoUsable).
   */
  private change(n: number, nv: number, next: Int32Array, nextCount: number, gen: number): number {
    const t = this.tables
    const transOn = this.trans
    const gateT = t.gateT
    const gateStart = t.gateStart
    const tKind = t.tKind
    const tNode1 = t.tNode1
    const ns = this.ns
    this.value[n] = nv
    for (let k = gateStart[n]!, end = gateStart[n + 1]!; k < end; k++) {
      const tr = gateT[k]!
      if (transOn[tr] === nv) continue
      transOn[tr] = nv
      const kind = tKind[tr]!
      // The transistor's contacts flip with it: add when it turns on, subtract when it turns off.
      const sign = nv ? 1 : -1
      if (kind === 1) ns[2 * tNode1[tr]! + 1]! += sign * DRV_GND
      else if (kind === 2) ns[2 * tNode1[tr]! + 1]! += sign * DRV_VCC
      else if (kind === 3) {
        ns[2 * tNode1[tr]!]! += sign * t.tBit1[tr]!
        ns[2 * t.tNode2[tr]!]! += sign * t.tBit2[tr]!
      }
    }
    const dep = t.dep
    const listStamp = this.listStamp
    for (let k = t.depStart[2 * n + nv]!, e = t.depStart[2 * n + nv + 1]!; k < e; k++) {
      const d = dep[k]!
      if (listStamp[d] !== gen) {
        listStamp[d] = gen
        next[nextCount++] = d
      }
    }
    return nextCount
  }

  /**
   * Flips every node of `nodes` (distinct) and switches every transistor each gates, updating the
   * node words and packed levels in the kernel from the static effect lists (valid while the
   * state is consistent, which the memo requires): the net flips of a recorded settle or span.
   */
  private toggleAll(nodes: Uint16Array): void {
    const value = this.value
    if (this.macroRec) {
      for (let i = 0; i < nodes.length; i++) {
        const n = nodes[i]!
        if (this.macroStamp[n] === this.macroGen) continue
        this.macroStamp[n] = this.macroGen
        this.macroOrig[n] = value[n]!
        this.macroNodes[this.macroNodeCount++] = n
      }
    }
    this.transStale = true
    this.scratch.set(nodes)
    this.kernel.toggle(this.kernel.layout.scratch, nodes.length)
  }
}
