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
 * The whole machine state is the four arrays `value`, `pullup`, `pulldown`, `transOn` (see
 * Encoding.ts for their wire form); everything else here is a cache derived from them.
 */
import type { Netlist } from "./Netlist.ts"

/** Settling gives up after this many passes, as visual6502/perfect6502 do (an oscillating loop). */
export const MAX_SETTLE_PASSES = 100

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
  /** Transistors gated by node n: gateStart[n]..gateStart[n+1]-1 of gateT. */
  readonly gateStart: Int32Array
  readonly gateT: Int32Array
  /** Nodes queued when n falls (both channel terminals of the transistors it gates). */
  readonly depOffStart: Int32Array
  readonly depOff: Int32Array
  /** Nodes queued when n rises (one terminal per transistor it gates). */
  readonly depOnStart: Int32Array
  readonly depOn: Int32Array
  readonly pins: PinIds
}

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
  const [chanStart, chanTf] = csr(nn, chanT)
  const [, chanOf] = csr(nn, chanO)
  const [gateStart, gateT] = csr(nn, gates)
  const [depOffStart, depOffF] = csr(nn, depOff)
  const [depOnStart, depOnF] = csr(nn, depOn)
  const ids = (prefix: string, k: number) => Int32Array.from({ length: k }, (_, i) => nodeId(netlist, `${prefix}${i}`))
  return {
    netlist,
    nodeCount: nn,
    transistorCount: nt,
    vss,
    vcc,
    chanStart,
    chanT: chanTf,
    chanOther: chanOf,
    gateStart,
    gateT,
    depOffStart,
    depOff: depOffF,
    depOnStart,
    depOn: depOnF,
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
 * One chip: its electrical state plus scratch space for settling. Not thread-safe, not
 * re-entrant; the {@link Simulator} keeps one and reloads its state for every request.
 */
export class Chip {
  value: Uint8Array
  pullup: Uint8Array
  pulldown: Uint8Array
  transOn: Uint8Array

  private listA: Int32Array
  private listB: Int32Array
  private listStamp: Int32Array
  private listGen = 0
  private groupStamp: Int32Array
  private groupGen = 0
  private group: Int32Array
  private stackNode: Int32Array
  private stackEdge: Int32Array

  constructor(readonly tables: ChipTables) {
    const nn = tables.nodeCount
    this.value = new Uint8Array(nn)
    this.pullup = new Uint8Array(nn)
    this.pulldown = new Uint8Array(nn)
    this.transOn = new Uint8Array(tables.transistorCount)
    this.listA = new Int32Array(nn)
    this.listB = new Int32Array(nn)
    this.listStamp = new Int32Array(nn)
    this.groupStamp = new Int32Array(nn)
    this.group = new Int32Array(nn)
    this.stackNode = new Int32Array(nn + 1)
    this.stackEdge = new Int32Array(nn + 1)
  }

  /** Replaces the electrical state with copies of `s` (lengths must match the netlist). */
  load(s: NodeState): void {
    this.value = Uint8Array.from(s.value)
    this.pullup = Uint8Array.from(s.pullup)
    this.pulldown = Uint8Array.from(s.pulldown)
    this.transOn = Uint8Array.from(s.transOn)
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

  private resetScratch(): void {
    this.listStamp.fill(0)
    this.listGen = 0
    this.groupStamp.fill(0)
    this.groupGen = 0
  }

  /**
   * Power-on state: every node low and floating except `vcc` high, every transistor off,
   * pull-ups as `segdefs.js` marks them, no pull-downs.
   */
  powerOn(): void {
    const t = this.tables
    this.value = new Uint8Array(t.nodeCount)
    this.value[t.vcc] = 1
    this.pullup = Uint8Array.from(t.netlist.pullup)
    this.pulldown = new Uint8Array(t.nodeCount)
    this.transOn = new Uint8Array(t.transistorCount)
    this.resetScratch()
  }

  /** Drives a pin: pull-up to `level`, pull-down to its opposite, then settles from it. */
  setPin(node: number, level: number): void {
    this.pullup[node] = level ? 1 : 0
    this.pulldown[node] = level ? 0 : 1
    this.listA[0] = node
    this.settle(1)
  }

  /** Settles starting from every node, in node order (the end of power-on). */
  settleAll(): void {
    const n = this.tables.nodeCount
    for (let i = 0; i < n; i++) this.listA[i] = i
    this.settle(n)
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
   */
  halfStep(memory: Uint8Array): void {
    const p = this.tables.pins
    const wasHigh = this.value[p.clk0]
    this.setPin(p.clk0, wasHigh ? 0 : 1)
    if (wasHigh) return
    const addr = this.readBits(p.ab)
    if (this.value[p.rw]) {
      const d = memory[addr]!
      for (let i = 0; i < 8; i++) {
        const n = p.db[i]!
        const bit = (d >> i) & 1
        this.pullup[n] = bit
        this.pulldown[n] = bit ^ 1
        this.listA[i] = n
      }
      this.settle(8)
    } else {
      memory[addr] = this.readBits(p.db)
    }
  }

  /** Settles from the first `count` nodes of listA. */
  private settle(count: number): void {
    let cur = this.listA
    let next = this.listB
    for (let pass = 0; pass < MAX_SETTLE_PASSES && count > 0; pass++) {
      const gen = ++this.listGen
      let nextCount = 0
      for (let i = 0; i < count; i++) nextCount = this.recalcNode(cur[i]!, next, nextCount, gen)
      const tmp = cur
      cur = next
      next = tmp
      count = nextCount
    }
    if (cur !== this.listA) {
      this.listB = this.listA
      this.listA = cur
    }
  }

  private recalcNode(start: number, next: Int32Array, nextCount: number, gen: number): number {
    const t = this.tables
    const vss = t.vss
    const vcc = t.vcc
    if (start === vss || start === vcc) return nextCount
    const chanStart = t.chanStart
    const chanT = t.chanT
    const chanOther = t.chanOther
    const value = this.value
    const pullup = this.pullup
    const pulldown = this.pulldown
    const transOn = this.transOn
    const groupStamp = this.groupStamp
    const group = this.group
    const stackNode = this.stackNode
    const stackEdge = this.stackEdge
    const ggen = ++this.groupGen

    // contains: 0 nothing, 1 high charge, 2 pull-up, 3 pull-down, 4 power, 5 ground
    let contains = 0
    let gcount = 0
    groupStamp[start] = ggen
    group[gcount++] = start
    if (pulldown[start]) contains = 3
    else if (pullup[start]) contains = 2
    else if (value[start]) contains = 1
    let sp = 0
    stackNode[0] = start
    stackEdge[0] = chanStart[start]!
    while (sp >= 0) {
      const m = stackNode[sp]!
      const e = stackEdge[sp]!
      if (e === chanStart[m + 1]) {
        sp--
        continue
      }
      stackEdge[sp] = e + 1
      if (!transOn[chanT[e]!]) continue
      const o = chanOther[e]!
      if (o === vss) {
        contains = 5
        continue
      }
      if (o === vcc) {
        if (contains !== 5) contains = 4
        continue
      }
      if (groupStamp[o] === ggen) continue
      groupStamp[o] = ggen
      group[gcount++] = o
      if (contains < 3) {
        if (pulldown[o]) contains = 3
        else if (contains < 2) {
          if (pullup[o]) contains = 2
          else if (contains < 1 && value[o]) contains = 1
        }
      }
      sp++
      stackNode[sp] = o
      stackEdge[sp] = chanStart[o]!
    }
    const nv = contains === 1 || contains === 2 || contains === 4 ? 1 : 0

    const gateStart = t.gateStart
    const gateT = t.gateT
    const listStamp = this.listStamp
    for (let i = 0; i < gcount; i++) {
      const n = group[i]!
      if (value[n] === nv) continue
      value[n] = nv
      for (let k = gateStart[n]!, end = gateStart[n + 1]!; k < end; k++) transOn[gateT[k]!] = nv
      const ds = nv ? t.depOnStart : t.depOffStart
      const dl = nv ? t.depOn : t.depOff
      for (let k = ds[n]!, end = ds[n + 1]!; k < end; k++) {
        const d = dl[k]!
        if (listStamp[d] !== gen) {
          listStamp[d] = gen
          next[nextCount++] = d
        }
      }
    }
    return nextCount
  }
}
