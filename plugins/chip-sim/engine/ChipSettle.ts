/**
 * The electrical state of a chip and how it settles: the event scheme of the visual6502 /
 * perfect6502 simulators over typed arrays (the base of Chip; Chip.ts holds the public
 * interface, ChipMemo.ts the memo that carries recurring states forward).
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
 * settle in TypeScript (settleGeneral), the general statement of the same scheme.
 */
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
 * A chip's electrical state, the caches derived from it, and the settle. Abstract: Chip (Chip.ts)
 * is the one class built, through ChipMemo, so every chip has one object shape.
 *
 * Speed without changing the order of events (checked node for node against a plain
 * implementation of the scheme on every golden program): each node keeps two words, a drive
 * word (its pulls and its counts of conducting transistors to ground and to power) and a bitmask
 * of its conducting node-to-node transistors, both updated by adding or subtracting a node's
 * precomputed effect list when it changes level. A node whose mask is 0 is alone in its group
 * and is recomputed from its drive word alone; a group walk visits only set bits, lowest first,
 * which is the transistor-row order a recursive walk would take.
 */
export abstract class ChipSettle {
  /** Node levels (a view of the settle kernel's memory: written in place, never replaced). */
  readonly value: Uint8Array
  pullup: Uint8Array
  pulldown: Uint8Array
  /**
   * Transistor conduction. While the state is consistent it is only written back on demand
   * (transistors conduct as their gates say, so nothing in settling reads it): see transOn.
   */
  protected trans: Uint8Array
  protected transStale = false

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
  protected ns: Int32Array
  private stackMask: Int32Array
  protected listA: Int32Array
  private listB: Int32Array
  private listStamp: Int32Array
  private listGen = 0
  private groupStamp: Int32Array
  private groupGen = 0
  private group: Int32Array
  /** Walk stack: nnStart offset of each node on the path and its not yet followed channels. */
  private stackNode: Int32Array
  /** The WebAssembly settle loop (SettleKernel.ts) and views of its registers and scratch. */
  protected readonly kernel: Kernel
  private readonly regs: Int32Array
  protected readonly scratch: Int32Array

  /**
   * Every transistor conducts exactly when its gate is high. Settling keeps this true, so it is
   * decided when a state is loaded; while it holds, a node's change switches all its gated
   * transistors and the caches follow from the static effect lists of ChipTables.
   */
  protected consistent = true

  // The memo's running notes, which settle() hands to the kernel (SettleKernel.ts NOTE_*, REG_*)
  // so that it keeps them up to date change by change; ChipMemo (ChipMemo.ts) reads and sets them.
  /** Zobrist fingerprint of the state (ChipTables.zValue), kept while the memo is on. */
  protected h1 = 0
  /**
   * Whether the fingerprint and packed levels are kept and the memo consulted; speed only, never
   * results. Only ever true while the state is consistent with standard pulls (memoUsable).
   */
  protected memoActive = false
  /** Recording a settle (NOTE_RECORD): its stamp generation and the nodes recorded so far. */
  protected recording = false
  protected recGen = 0
  protected recCount = 0
  /** Recording a span (NOTE_MACRO): its stamp generation and the nodes recorded so far. */
  protected macroRec = false
  protected macroGen = 0
  protected macroNodeCount = 0

  constructor(readonly tables: ChipTables) {
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
  }

  /**
   * Rebuilds the node words from the state, decides whether it is consistent, and clears the
   * list and group stamps (after a load or power-on).
   */
  protected resetSettleCaches(): void {
    const t = this.tables
    const gate = t.netlist.gate
    this.consistent = true
    for (let i = 0; i < t.transistorCount; i++) {
      if (this.transOn[i] !== this.value[gate[i]!]) {
        this.consistent = false
        break
      }
    }
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
   * Settles from the first `count` nodes of listA (the event scheme of the module comment), none
   * of them a rail (dependant lists hold none; setPin and settleAll leave them out). Consistent
   * states settle in the WebAssembly kernel, which also notes each change for the memo
   * (fingerprint, packed levels, recorders) as asked: the counters involved go through its
   * registers.
   */
  protected settle(count: number): void {
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
}
