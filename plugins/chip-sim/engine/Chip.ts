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
 * including a memo of whole settles and of 32-half-cycle spans keyed by a 96-bit fingerprint
 * of that state (see Chip.halfStep, Chip.runHalfCycles), which only changes how fast a state
 * that recurs is carried forward: tests check node for node that results are the same with
 * the memo on and off.
 */
import type { Netlist } from "./Netlist.ts"
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
 * A recorded settle: fingerprint check words, the nodes whose level flipped (net), end
 * fingerprint. Transistor flips are not stored: a settle is recorded only when its net
 * transistor flips are exactly those gated by the flipped nodes (always, for states whose
 * transistors conduct as their gates say), so replay re-derives them and keeps entries small;
 * replay is memory-bound, and this keeps a loop's entries in cache.
 */
interface MemoEntry {
  readonly k2: number
  readonly k3: number
  readonly nodes: Uint16Array
  readonly h1: number
  readonly h2: number
  readonly h3: number
}

/**
 * Span of a macro, in half-cycles: a run of half-cycles from a recurring state, stored as its
 * bus traffic (reads to check, writes to redo, opcode fetches) and its net node flips; replayed
 * whole when every read finds the same byte. Macros per generation (two kept) are bounded too.
 */
export const MACRO_HALF_CYCLES = 32
export const MACRO_ENTRIES_MAX = 4096

/** A recorded run of MACRO_HALF_CYCLES half-cycles (see Chip.runHalfCycles). */
interface Macro {
  readonly k2: number
  readonly k3: number
  /** Bus events in order, as triples: kind (0 read, 1 write, 2 fetch row), address, byte. */
  readonly events: Int32Array
  readonly nodes: Uint16Array
  /** Final pull-up, pull-down of clk0 and db0..db7, in that order. */
  readonly pulls: Uint8Array
  readonly h1: number
  readonly h2: number
  readonly h3: number
}

/** Node ids the engine drives or reads, resolved from `nodenames.js`. */
export interface PinIds {
  readonly clk0: number
  readonly res: number
  readonly rdy: number
  readonly so: number
  readonly irq: number
  readonly nmi: number
  readonly rw: number
  readonly sync: number
  readonly db: Int32Array
  readonly ab: Int32Array
}

/** Static tables built once per netlist and shared by every {@link Chip}. */
export interface ChipTables {
  readonly netlist: Netlist
  readonly nodeCount: number
  readonly transistorCount: number
  readonly vss: number
  readonly vcc: number
  /** Channel adjacency: for node n, entries chanStart[n]..chanStart[n+1]-1 of chanT/chanOther. */
  readonly chanStart: Int32Array
  readonly chanT: Int32Array
  readonly chanOther: Int32Array
  /**
   * Channel adjacency restricted to node-to-node transistors (rails and self-loops left out),
   * in the same order as chanT: a group walk only needs these, rail contacts being counted.
   */
  readonly nnStart: Int32Array
  readonly nnT: Int32Array
  readonly nnOther: Int32Array
  /**
   * What switching transistor t changes in the per-node caches: tKind 1 = ground contact of
   * node tNode1, 2 = power contact of tNode1, 3 = node-to-node channel tNode1-tNode2 (bit tBit1
   * of tNode1's and tBit2 of tNode2's node-to-node list), 0 = nothing.
   */
  readonly tKind: Uint8Array
  readonly tNode1: Int32Array
  readonly tNode2: Int32Array
  readonly tBit1: Int32Array
  readonly tBit2: Int32Array
  /** Transistors gated by node n: gateStart[n]..gateStart[n+1]-1 of gateT. */
  readonly gateStart: Int32Array
  readonly gateT: Int32Array
  readonly pins: PinIds
  /**
   * Zobrist keys, three 32-bit words per state bit (node level, pull-up, pull-down, transistor
   * conduction) and per data-bus byte: the XOR of the keys of the set bits fingerprints a whole
   * machine state in 96 bits, kept up to date bit flip by bit flip.
   */
  readonly zValue: Int32Array
  readonly zPullup: Int32Array
  readonly zPulldown: Int32Array
  readonly zTrans: Int32Array
  readonly zData: Int32Array
  /**
   * What a level change of node n does to the per-node words of Chip.ns when every transistor it
   * gates switches with it (the usual case, see Chip.consistent): entries effStart[n] ..
   * effStart[n+1]-1 add effAmt[k] (rising) or subtract it (falling) at ns[effIdx[k]], one entry
   * per contact: a conduction-mask bit of each terminal of a node-to-node channel, a count of
   * ground or power contacts (see DRV_GND, DRV_VCC). zGate is the XOR of the Zobrist keys of
   * n's gated transistors.
   */
  readonly effStart: Int32Array
  readonly effIdx: Int32Array
  readonly effAmt: Int32Array
  readonly zGate: Int32Array
  /**
   * Nodes queued when n changes, by its new level nv: dep[depStart[2n+nv]..depStart[2n+nv+1]-1].
   * Falling (nv = 0): both non-rail channel terminals of each transistor n gates; rising: one
   * (the first non-rail one) per transistor.
   */
  readonly depStart: Int32Array
  readonly dep: Int32Array
}

/**
 * Layout of a node's drive word (Chip.ns[2n+1]): bit 0 pull-up, bit 1 pull-down, the count of
 * conducting transistors to power from bit 8 and to ground from bit 16. Zero: the node is
 * driven by nothing but its channels and stored charge.
 */
export const DRV_PULLUP = 1
export const DRV_PULLDOWN = 2
export const DRV_VCC = 0x100
export const DRV_GND = 0x10000

/**
 * Rank of a node alone from its drive word d and level v, the priority of a group's level:
 * 5 ground, 4 power, 3 pull-down, 2 pull-up, 1 stored high charge, 0 nothing. A group is high
 * when its highest rank is 1, 2 or 4: bit `rank` of RANK_HIGH.
 */
const rankOf = (d: number, v: number): number =>
  d >= DRV_GND ? 5 : d >= DRV_VCC ? 4 : d & DRV_PULLDOWN ? 3 : d & DRV_PULLUP ? 2 : v
const RANK_HIGH = 0b10110

const csr = (n: number, lists: ReadonlyArray<ReadonlyArray<number>>): [Int32Array, Int32Array] => {
  const start = new Int32Array(n + 1)
  let total = 0
  for (let i = 0; i < n; i++) {
    start[i] = total
    total += lists[i]!.length
  }
  start[n] = total
  const flat = new Int32Array(total)
  let k = 0
  for (let i = 0; i < n; i++) for (const v of lists[i]!) flat[k++] = v
  return [start, flat]
}

const nodeId = (netlist: Netlist, name: string): number => {
  const id = netlist.names.get(name)
  if (id === undefined) throw new Error(`netlist has no node named ${name}`)
  return id
}

/** Builds the adjacency tables of a netlist. Pure; a few milliseconds. */
export const makeTables = (netlist: Netlist): ChipTables => {
  const nn = netlist.nodeCount
  const nt = netlist.transistorCount
  const { vss, vcc, gate, c1, c2 } = netlist
  const isRail = (n: number) => n === vss || n === vcc
  const chanT: Array<Array<number>> = Array.from({ length: nn }, () => [])
  const chanO: Array<Array<number>> = Array.from({ length: nn }, () => [])
  const gates: Array<Array<number>> = Array.from({ length: nn }, () => [])
  for (let t = 0; t < nt; t++) {
    gates[gate[t]!]!.push(t)
    const a = c1[t]!
    const b = c2[t]!
    chanT[a]!.push(t)
    chanO[a]!.push(b)
    chanT[b]!.push(t)
    chanO[b]!.push(a)
  }
  const depOff: Array<Array<number>> = Array.from({ length: nn }, () => [])
  const depOn: Array<Array<number>> = Array.from({ length: nn }, () => [])
  for (let n = 0; n < nn; n++) {
    for (const t of gates[n]!) {
      const a = c1[t]!
      const b = c2[t]!
      if (!isRail(a) && !depOff[n]!.includes(a)) depOff[n]!.push(a)
      if (!isRail(b) && !depOff[n]!.includes(b)) depOff[n]!.push(b)
      const one = isRail(a) ? b : a
      if (!isRail(one) && !depOn[n]!.includes(one)) depOn[n]!.push(one)
    }
  }
  // Rails are never walked from: give them empty channel lists.
  chanT[vss] = []
  chanO[vss] = []
  chanT[vcc] = []
  chanO[vcc] = []
  const nnT: Array<Array<number>> = chanT.map(() => [])
  const nnO: Array<Array<number>> = chanT.map(() => [])
  for (let n = 0; n < nn; n++) {
    chanT[n]!.forEach((t, k) => {
      const o = chanO[n]![k]!
      if (isRail(o) || o === n) return
      nnT[n]!.push(t)
      nnO[n]!.push(o)
    })
  }
  const tKind = new Uint8Array(nt)
  const tNode1 = new Int32Array(nt).fill(-1)
  const tNode2 = new Int32Array(nt).fill(-1)
  const tBit1 = new Int32Array(nt)
  const tBit2 = new Int32Array(nt)
  for (let t = 0; t < nt; t++) {
    const a = c1[t]!
    const b = c2[t]!
    if (isRail(a) && isRail(b)) continue
    if (isRail(a) || isRail(b)) {
      tKind[t] = (isRail(a) ? a : b) === vss ? 1 : 2
      tNode1[t] = isRail(a) ? b : a
      continue
    }
    if (a === b) continue
    tKind[t] = 3
    tNode1[t] = a
    tNode2[t] = b
    tBit1[t] = 1 << nnT[a]!.indexOf(t)
    tBit2[t] = 1 << nnT[b]!.indexOf(t)
  }
  if (nnT.some((l) => l.length > 31)) throw new Error("a node has more than 31 node-to-node transistors")
  const [nnStart, nnTf] = csr(nn, nnT)
  const [, nnOf] = csr(nn, nnO)
  const [chanStart, chanTf] = csr(nn, chanT)
  const [, chanOf] = csr(nn, chanO)
  const [gateStart, gateT] = csr(nn, gates)
  // Fixed seed: fingerprints (and so memo hits) do not depend on the process.
  let seed = 0x2545f491
  const rnd = () => {
    seed ^= seed << 13
    seed ^= seed >>> 17
    seed ^= seed << 5
    return seed | 0
  }
  const keys = (n: number) => Int32Array.from({ length: n * 3 }, rnd)
  const zTrans = keys(nt)
  const effIdx: Array<Array<number>> = Array.from({ length: nn }, () => [])
  const effAmt: Array<Array<number>> = Array.from({ length: nn }, () => [])
  const gndCount = new Int32Array(nn)
  const vccCount = new Int32Array(nn)
  const zGate = new Int32Array(nn * 3)
  for (let n = 0; n < nn; n++) {
    for (const t of gates[n]!) {
      zGate[n * 3] ^= zTrans[t * 3]!
      zGate[n * 3 + 1] ^= zTrans[t * 3 + 1]!
      zGate[n * 3 + 2] ^= zTrans[t * 3 + 2]!
      if (tKind[t] === 1) {
        effIdx[n]!.push(2 * tNode1[t]! + 1)
        effAmt[n]!.push(DRV_GND)
        gndCount[tNode1[t]!]!++
      } else if (tKind[t] === 2) {
        effIdx[n]!.push(2 * tNode1[t]! + 1)
        effAmt[n]!.push(DRV_VCC)
        vccCount[tNode1[t]!]!++
      } else if (tKind[t] === 3) {
        effIdx[n]!.push(2 * tNode1[t]!, 2 * tNode2[t]!)
        effAmt[n]!.push(tBit1[t]!, tBit2[t]!)
      }
    }
  }
  if (vccCount.some((c) => c >= DRV_GND / DRV_VCC) || gndCount.some((c) => c >= 0x7fff)) {
    throw new Error("a node has too many transistors to a rail for its drive word")
  }
  const [effStart, effIdxF] = csr(nn, effIdx)
  const [, effAmtF] = csr(nn, effAmt)
  const [depStart, depF] = csr(2 * nn, Array.from({ length: 2 * nn }, (_, i) => (i & 1 ? depOn : depOff)[i >> 1]!))
  const ids = (prefix: string, k: number) => Int32Array.from({ length: k }, (_, i) => nodeId(netlist, `${prefix}${i}`))
  for (const n of ids("db", 8)) if (isRail(n)) throw new Error("a data-bus pin is a rail")
  return {
    netlist,
    nodeCount: nn,
    transistorCount: nt,
    vss,
    vcc,
    chanStart,
    chanT: chanTf,
    chanOther: chanOf,
    nnStart,
    nnT: nnTf,
    nnOther: nnOf,
    tKind,
    tNode1,
    tNode2,
    tBit1,
    tBit2,
    gateStart,
    gateT,
    zValue: keys(nn),
    zPullup: keys(nn),
    zPulldown: keys(nn),
    zTrans,
    zData: keys(256),
    effStart,
    effIdx: effIdxF,
    effAmt: effAmtF,
    depStart,
    dep: depF,
    zGate,
    pins: {
      clk0: nodeId(netlist, "clk0"),
      res: nodeId(netlist, "res"),
      rdy: nodeId(netlist, "rdy"),
      so: nodeId(netlist, "so"),
      irq: nodeId(netlist, "irq"),
      nmi: nodeId(netlist, "nmi"),
      rw: nodeId(netlist, "rw"),
      sync: nodeId(netlist, "sync"),
      db: ids("db", 8),
      ab: ids("ab", 16)
    }
  }
}

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
 * On top, states that recur are carried forward from memos keyed by a fingerprint of the whole
 * state: single settles (halfStep) and spans of 32 half-cycles (runHalfCycles). Both only ever
 * reproduce what settling did from the same state; tests compare them node for node.
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
  /** 96-bit fingerprint of (value, pullup, pulldown, transOn); see ChipTables.zValue. */
  private h1 = 0
  private h2 = 0
  private h3 = 0
  /** Half-cycle memo (see halfStep); a pure cache keyed by whole-state fingerprints. */
  private memo = new Map<number, MemoEntry>()
  /** The previous generation of the memo, still consulted (hits move back into `memo`). */
  private memoOld = new Map<number, MemoEntry>()
  private readonly seen = new Set<number>()
  private recording = false
  private recStamp: Int32Array
  private recGen = 0
  /** Nodes changed by the settle being recorded (each once, by recStamp) and their level before. */
  private recNodes: Int32Array
  private recNodeWas: Uint8Array
  private recCount = 0
  private recTrans: Array<number> = []
  private recTransWas: Array<number> = []
  private recTransStamp: Int32Array
  /** Conduction of each recorded transistor before the recorded settle. */
  private recTransOrig: Uint8Array
  /** Settles replayed and simulated through the memo since construction (bench, tests). */
  memoHits = 0
  memoMisses = 0
  /** Half-cycles carried by span replays since construction (bench, tests). */
  macroHalfCycles = 0
  /** Span memo (see runHalfCycles), two generations like the settle memo, and its recorder. */
  private macros = new Map<number, Macro>()
  private macrosOld = new Map<number, Macro>()
  private macroRec = false
  private macroKey = 0
  private macroK2 = 0
  private macroK3 = 0
  private macroLen = 0
  /** The span being recorded: bus events (triples, see Macro.events) and nodes changed (each once). */
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
  /** Whether fingerprints are kept and the memo consulted; speed only, never results. */
  private memoActive: boolean
  private memoWindow = 0
  private memoWindowHits = 0
  private memoWindowRepeats = 0
  private memoCooldown = 0
  private memoBackoff = MEMO_BACKOFF_MIN

  /** `memo: false` settles every half-cycle from scratch (tests compare the two). */
  constructor(readonly tables: ChipTables, options: { memo?: boolean } = {}) {
    this.memoEnabled = options.memo !== false
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
    this.recTransStamp = new Int32Array(tables.transistorCount)
    this.recTransOrig = new Uint8Array(tables.transistorCount)
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
    this.memo.clear()
    this.memoOld.clear()
    this.seen.clear()
    this.macros.clear()
    this.macrosOld.clear()
    this.macroRec = false
    this.memoActive = this.memoEnabled
    this.memoBackoff = MEMO_BACKOFF_MIN
    this.memoWindow = 0
    this.memoWindowHits = 0
    this.memoWindowRepeats = 0
    this.fingerprint()
  }

  /** Rebuilds the caches and the fingerprint from the state; clears the generation stamps. */
  private resetScratch(): void {
    this.fingerprint()
    this.resetCaches()
  }

  /** Recomputes the 96-bit fingerprint of the state from scratch. */
  private fingerprint(): void {
    const t = this.tables
    let h1 = 0
    let h2 = 0
    let h3 = 0
    const fold = (z: Int32Array, bits: Uint8Array) => {
      for (let i = 0; i < bits.length; i++) {
        if (!bits[i]) continue
        h1 ^= z[i * 3]!
        h2 ^= z[i * 3 + 1]!
        h3 ^= z[i * 3 + 2]!
      }
    }
    fold(t.zValue, this.value)
    fold(t.zPullup, this.pullup)
    fold(t.zPulldown, this.pulldown)
    fold(t.zTrans, this.transOn)
    this.h1 = h1
    this.h2 = h2
    this.h3 = h3
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
    this.recStamp.fill(0)
    this.recTransStamp.fill(0)
    this.recGen = 0
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
    const k = node * 3
    if (this.pullup[node] !== up) {
      this.pullup[node] = up
      this.ns[2 * node + 1]! ^= DRV_PULLUP
      if (this.memoActive) {
        this.h1 ^= t.zPullup[k]!
        this.h2 ^= t.zPullup[k + 1]!
        this.h3 ^= t.zPullup[k + 2]!
      }
    }
    if (this.pulldown[node] !== down) {
      this.pulldown[node] = down
      this.ns[2 * node + 1]! ^= DRV_PULLDOWN
      if (this.memoActive) {
        this.h1 ^= t.zPulldown[k]!
        this.h2 ^= t.zPulldown[k + 1]!
        this.h3 ^= t.zPulldown[k + 2]!
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
   * Both settles are memoised: a settle is a function of the whole state (and of the byte
   * driven), so when a state fingerprint recurs (a program idling in a loop) the recorded net
   * flips of nodes and transistors are replayed instead of re-simulated. Settles are recorded
   * while the memo is on; it switches itself off on runs that do not repeat.
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
   * recorded from the same fingerprint applies when each of its reads finds in memory the byte
   * it found when recorded (its writes are redone in order first, so reads of bytes it wrote
   * itself check too) and it holds no fetch at `stopPc`; otherwise the memory is restored and
   * the half-cycles are simulated. Same end state, memory and fetch as stepping one by one.
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
      if (!this.macroRec && this.memoActive && this.consistent && n - done >= MACRO_HALF_CYCLES) {
        const key = this.h1 & 0x3fffffff
        let m = this.macros.get(key)
        if (m === undefined) {
          m = this.macrosOld.get(key)
          if (m !== undefined) this.macroStore(key, m)
        }
        if (m !== undefined && m.k2 === this.h2 && m.k3 === this.h3) {
          const fetch = this.applyMacro(memory, m, stopPc)
          if (fetch !== undefined) {
            if (fetch !== null) last = fetch
            done += MACRO_HALF_CYCLES
            continue
          }
        } else if (m === undefined) this.startMacro(key)
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

  private startMacro(key: number): void {
    this.macroRec = true
    this.macroKey = key
    this.macroK2 = this.h2
    this.macroK3 = this.h3
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
    // The fingerprint must have been kept throughout and the state stayed consistent.
    if (!this.memoActive || !this.consistent) return
    const p = this.tables.pins
    const pulls = new Uint8Array(18)
    for (let i = 0; i < 9; i++) {
      const node = i === 0 ? p.clk0 : p.db[i - 1]!
      pulls[i * 2] = this.pullup[node]!
      pulls[i * 2 + 1] = this.pulldown[node]!
    }
    this.macroStore(this.macroKey, {
      k2: this.macroK2,
      k3: this.macroK3,
      events: this.macroEvents.slice(0, this.macroEventCount),
      nodes: this.netFlips(this.macroNodes, this.macroNodeCount, this.macroOrig, false),
      pulls,
      h1: this.h1,
      h2: this.h2,
      h3: this.h3
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

  private macroStore(key: number, m: Macro): void {
    if (this.macros.size >= MACRO_ENTRIES_MAX) {
      this.macrosOld = this.macros
      this.macros = new Map()
    }
    this.macros.set(key, m)
  }

  /**
   * Replays a macro if its reads hold and it fetches nothing at `stopPc`: returns the last fetch
   * row in it (or null), or undefined with memory untouched otherwise.
   */
  private applyMacro(memory: Uint8Array, m: Macro, stopPc: number): { addr: number; opcode: number } | null | undefined {
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
    const p = this.tables.pins
    for (let i = 0; i < 9; i++) {
      const node = i === 0 ? p.clk0 : p.db[i - 1]!
      const up = m.pulls[i * 2]!
      const down = m.pulls[i * 2 + 1]!
      this.pullup[node] = up
      this.pulldown[node] = down
      this.ns[2 * node + 1] = (this.ns[2 * node + 1]! & ~(DRV_PULLUP | DRV_PULLDOWN)) | (up ? DRV_PULLUP : 0) | (down ? DRV_PULLDOWN : 0)
    }
    this.h1 = m.h1
    this.h2 = m.h2
    this.h3 = m.h3
    this.macroHalfCycles += MACRO_HALF_CYCLES
    return last
  }

  /** Drives `pin` to `level` (pin >= 0), or the data bus with `byte`, and settles, via the memo. */
  private memoSettle(pin: number, level: number, byte: number): void {
    if (!this.memoActive) {
      if (this.memoEnabled && --this.memoCooldown <= 0) {
        this.memoActive = true
        this.fingerprint()
        this.memoWindow = 0
        this.memoWindowHits = 0
        this.memoWindowRepeats = 0
      }
      if (pin >= 0) this.setPin(pin, level)
      else this.driveData(byte)
      return
    }
    if (++this.memoWindow >= MEMO_WINDOW) {
      const poor = (this.memoWindowHits + this.memoWindowRepeats) * 4 < this.memoWindow
      this.memoWindow = 0
      this.memoWindowHits = 0
      this.memoWindowRepeats = 0
      if (poor) {
        // Off from here: the fingerprint is no longer kept, so nothing below may be recorded.
        this.memoActive = false
        this.memoCooldown = this.memoBackoff
        this.memoBackoff = Math.min(this.memoBackoff * 2, MEMO_BACKOFF_MAX)
        if (pin >= 0) this.setPin(pin, level)
        else this.driveData(byte)
        return
      }
      this.memoBackoff = MEMO_BACKOFF_MIN
    }
    const t = this.tables
    let k1 = this.h1
    let k2 = this.h2
    let k3 = this.h3
    if (byte >= 0) {
      k1 ^= t.zData[byte * 3]!
      k2 ^= t.zData[byte * 3 + 1]!
      k3 ^= t.zData[byte * 3 + 2]!
    }
    // A small-integer map key (30 bits); the entry checks 64 more.
    const key = k1 & 0x3fffffff
    let hit = this.memo.get(key)
    if (hit === undefined) {
      hit = this.memoOld.get(key)
      if (hit !== undefined) this.memoStore(key, hit)
    }
    if (hit !== undefined && hit.k2 === k2 && hit.k3 === k3) {
      this.memoHits++
      this.memoWindowHits++
      this.replay(pin, level, byte, hit)
      return
    }
    this.memoMisses++
    // Recorded at first sight: a loop then replays from its second turn. The seen set only
    // tells the self-assessment whether misses are states coming round again.
    if (this.seen.has(key)) this.memoWindowRepeats++
    else {
      if (this.seen.size >= MEMO_SEEN_MAX) this.seen.clear()
      this.seen.add(key)
    }
    this.startRecording()
    if (pin >= 0) this.setPin(pin, level)
    else this.driveData(byte)
    const entry = this.stopRecording(k2, k3)
    if (entry !== undefined) this.memoStore(key, entry)
  }

  private memoStore(key: number, e: MemoEntry): void {
    if (this.memo.size >= MEMO_ENTRIES_MAX) {
      this.memoOld = this.memo
      this.memo = new Map()
    }
    this.memo.set(key, e)
  }

  private driveData(byte: number): void {
    const db = this.tables.pins.db
    for (let i = 0; i < 8; i++) {
      this.drive(db[i]!, (byte >> i) & 1)
      this.listA[i] = db[i]!
    }
    this.settle(8)
  }

  private startRecording(): void {
    this.recording = true
    if (++this.recGen > 0x3fffffff) {
      this.recStamp.fill(0)
      this.recTransStamp.fill(0)
      this.recGen = 1
    }
    this.recCount = 0
    this.recTrans.length = 0
    this.recTransWas.length = 0
  }

  /** The recorded settle, or undefined when its transistor flips do not follow its node flips. */
  private stopRecording(k2: number, k3: number): MemoEntry | undefined {
    this.recording = false
    const t = this.tables
    const nodes = this.netFlips(this.recNodes, this.recCount, this.recNodeWas, true)
    if (this.consistent) return { k2, k3, nodes, h1: this.h1, h2: this.h2, h3: this.h3 }
    let gated = 0
    for (const n of nodes) gated += t.gateStart[n + 1]! - t.gateStart[n]!
    let flipped = 0
    this.recTrans.forEach((tr, i) => {
      if (this.transOn[tr] !== this.recTransWas[i]) flipped++
    })
    // The net flips must be exactly the transistors gated by the flipped nodes: as many, and
    // each of those recorded as flipped.
    if (flipped !== gated) return undefined
    for (const n of nodes) {
      for (let k = t.gateStart[n]!; k < t.gateStart[n + 1]!; k++) {
        const tr = t.gateT[k]!
        if (this.recTransStamp[tr] !== this.recGen || this.transOn[tr] === this.recTransOrig[tr]) return undefined
      }
    }
    return { k2, k3, nodes, h1: this.h1, h2: this.h2, h3: this.h3 }
  }

  /** Applies a recorded settle: the drive, then the net flips; same end state as simulating. */
  private replay(pin: number, level: number, byte: number, e: MemoEntry): void {
    if (pin >= 0) this.drive(pin, level)
    else {
      const db = this.tables.pins.db
      for (let i = 0; i < 8; i++) this.drive(db[i]!, (byte >> i) & 1)
    }
    this.toggleAll(e.nodes)
    this.h1 = e.h1
    this.h2 = e.h2
    this.h3 = e.h3
  }

  /**
   * Settles from the first `count` nodes of listA (the event scheme of the module comment), none
   * of them a rail (dependant lists hold none; setPin and settleAll leave them out). Consistent
   * states settle in the WebAssembly kernel, which also notes each change for the memo
   * (fingerprint, recorders) as asked: the counters involved go through its registers.
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
      regs[REG_H + 1] = this.h2
      regs[REG_H + 2] = this.h3
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
      this.h2 = regs[REG_H + 1]!
      this.h3 = regs[REG_H + 2]!
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
   * those it gates that differ (keeping the node words, recorders and fingerprint) and queues
   * their channel terminals for the next pass; returns the new queue length.
   */
  private change(n: number, nv: number, next: Int32Array, nextCount: number, gen: number): number {
    const t = this.tables
    const transOn = this.trans
    const gateT = t.gateT
    const gateStart = t.gateStart
    const tKind = t.tKind
    const tNode1 = t.tNode1
    const zTrans = t.zTrans
    const ns = this.ns
    const recording = this.recording
    const hashing = this.memoActive
    if (recording && this.recStamp[n] !== this.recGen) {
      this.recStamp[n] = this.recGen
      this.recNodes[this.recCount] = n
      this.recNodeWas[this.recCount++] = nv ^ 1
    }
    if (this.macroRec && this.macroStamp[n] !== this.macroGen) {
      this.macroStamp[n] = this.macroGen
      this.macroOrig[n] = nv ^ 1
      this.macroNodes[this.macroNodeCount++] = n
    }
    this.value[n] = nv
    let x1 = 0
    let x2 = 0
    let x3 = 0
    for (let k = gateStart[n]!, end = gateStart[n + 1]!; k < end; k++) {
      const tr = gateT[k]!
      if (transOn[tr] === nv) continue
      if (recording && this.recTransStamp[tr] !== this.recGen) {
        this.recTransStamp[tr] = this.recGen
        this.recTrans.push(tr)
        this.recTransWas.push(nv ^ 1)
        this.recTransOrig[tr] = nv ^ 1
      }
      transOn[tr] = nv
      if (hashing) {
        x1 ^= zTrans[tr * 3]!
        x2 ^= zTrans[tr * 3 + 1]!
        x3 ^= zTrans[tr * 3 + 2]!
      }
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
    if (hashing) {
      const z = t.zValue
      this.h1 ^= x1 ^ z[n * 3]!
      this.h2 ^= x2 ^ z[n * 3 + 1]!
      this.h3 ^= x3 ^ z[n * 3 + 2]!
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
   * node words from the static effect lists in the kernel (valid while the state is consistent,
   * and for recorded replays): the net flips of a recorded settle or span.
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
    if (this.consistent) this.transStale = true
    else {
      const t = this.tables
      const trans = this.trans
      for (let i = 0; i < nodes.length; i++) {
        const n = nodes[i]!
        const nv = value[n]! ^ 1
        for (let k = t.gateStart[n]!, end = t.gateStart[n + 1]!; k < end; k++) trans[t.gateT[k]!] = nv
      }
    }
    this.scratch.set(nodes)
    this.kernel.toggle(this.kernel.layout.scratch, nodes.length)
  }
}
