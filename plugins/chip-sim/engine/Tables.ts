/**
 * Static tables of the switch-level engine, built once per netlist and shared by every Chip:
 * channel and gate adjacency (CSR arrays), per-transistor cache effects, per-node effect and
 * dependant lists, the pin node ids, and the Zobrist keys that select memo candidates.
 */
import type { Netlist } from "./Netlist.ts"

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
   * The nodes whose pulls the engine drives (clk0, res, rdy, so, irq, nmi, db0..db7, in that
   * order) and, per node, its slot in that list or -1: the memo keeps their pulls as two bits
   * per slot (ChipMemo.pinPulls), every other node keeping the pull-up `segdefs.js` gives it.
   */
  readonly drivenNodes: Int32Array
  readonly drivenSlot: Int8Array
  /**
   * Zobrist keys, one 32-bit word per state bit (node level, pull-up, pull-down, transistor
   * conduction): the XOR of the keys of the set bits is a 32-bit fingerprint of the whole
   * machine state, kept up to date bit flip by bit flip. It only selects memo candidates; a
   * replay is decided by comparing the full state (Memo.ts), so more words would buy nothing.
   */
  readonly zValue: Int32Array
  readonly zPullup: Int32Array
  readonly zPulldown: Int32Array
  readonly zTrans: Int32Array
  /**
   * What a level change of node n does to the per-node words of ChipSettle.ns when every
   * transistor it gates switches with it (the usual case, see ChipSettle.consistent): entries
   * effStart[n] .. effStart[n+1]-1 add effAmt[k] (rising) or subtract it (falling) at
   * ns[effIdx[k]], one entry per contact: a conduction-mask bit of each terminal of a
   * node-to-node channel, a count of ground or power contacts (see DRV_GND, DRV_VCC). zGate is the XOR of the Zobrist keys of
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
 * Layout of a node's drive word (ChipSettle.ns[2n+1]): bit 0 pull-up, bit 1 pull-down, the count of
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
export const rankOf = (d: number, v: number): number =>
  d >= DRV_GND ? 5 : d >= DRV_VCC ? 4 : d & DRV_PULLDOWN ? 3 : d & DRV_PULLUP ? 2 : v
export const RANK_HIGH = 0b10110

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
  // Fixed seed: fingerprints do not depend on the process. SplitMix32-style output mixing for
  // well-spread keys. Fingerprints only select memo candidates; a hit is decided by comparing the
  // full state (Memo.ts).
  let seed = 0x2545f491
  const rnd = () => {
    seed = (seed + 0x9e3779b9) | 0
    let z = seed
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b)
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35)
    return (z ^ (z >>> 16)) | 0
  }
  const keys = (n: number) => Int32Array.from({ length: n }, rnd)
  const zTrans = keys(nt)
  const effIdx: Array<Array<number>> = Array.from({ length: nn }, () => [])
  const effAmt: Array<Array<number>> = Array.from({ length: nn }, () => [])
  const gndCount = new Int32Array(nn)
  const vccCount = new Int32Array(nn)
  const zGate = new Int32Array(nn)
  for (let n = 0; n < nn; n++) {
    for (const t of gates[n]!) {
      zGate[n] ^= zTrans[t]!
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
  const drivenNodes = Int32Array.from([...["clk0", "res", "rdy", "so", "irq", "nmi"].map((p) => nodeId(netlist, p)), ...ids("db", 8)])
  const drivenSlot = new Int8Array(nn).fill(-1)
  drivenNodes.forEach((n, i) => (drivenSlot[n] = i))
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
    effStart,
    effIdx: effIdxF,
    effAmt: effAmtF,
    depStart,
    dep: depF,
    zGate,
    drivenNodes,
    drivenSlot,
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
