/**
 * Experimental event-driven evaluator over channel-connected components (CCCs).
 *
 * A CCC is a set of nodes joined by transistor channels (rails excluded). Its new node values
 * are a function of its transistors' gate levels, its nodes' pulls and rail contacts, and its
 * nodes' previous levels (stored charge). Settling works on a list of CCCs in passes: each CCC
 * of a pass is re-evaluated in list order, in place; a node whose level changes queues, for
 * the next pass, every CCC holding a channel terminal of a transistor it gates.
 *
 * State is (value, pullup, pulldown); transistor conduction is always "gate high", so the
 * state it saves is consistent by construction. Only loaded from consistent states.
 */
import type { ChipTables, NodeState } from "./Chip.ts"
import { MAX_SETTLE_PASSES } from "./Chip.ts"

export interface CccTables {
  readonly cccCount: number
  readonly cccOf: Int32Array
  /** Nodes of CCC c: cNodeStart[c]..cNodeStart[c+1]-1 of cNodes (ascending node id). */
  readonly cNodeStart: Int32Array
  readonly cNodes: Int32Array
  /** Node-to-node transistors of CCC c: gate node, local a, local b. */
  readonly cTransStart: Int32Array
  readonly cTGate: Int32Array
  readonly cTA: Int32Array
  readonly cTB: Int32Array
  /** Gates of the transistors from node n to ground / power. */
  readonly gndStart: Int32Array
  readonly gndGate: Int32Array
  readonly vccStart: Int32Array
  readonly vccGate: Int32Array
  /** CCCs fed by node n (distinct). */
  readonly fanStart: Int32Array
  readonly fan: Int32Array
  readonly maxSize: number
}

const csr = (lists: ReadonlyArray<ReadonlyArray<number>>): [Int32Array, Int32Array] => {
  const n = lists.length
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

export const makeCccTables = (t: ChipTables): CccTables => {
  const nl = t.netlist
  const nn = t.nodeCount
  const nt = t.transistorCount
  const { vss, vcc } = t
  const isRail = (n: number) => n === vss || n === vcc
  const parent = Int32Array.from({ length: nn }, (_, i) => i)
  const find = (x: number): number => {
    while (parent[x] !== x) {
      parent[x] = parent[parent[x]!]!
      x = parent[x]!
    }
    return x
  }
  for (let i = 0; i < nt; i++) {
    const a = nl.c1[i]!
    const b = nl.c2[i]!
    if (isRail(a) || isRail(b) || a === b) continue
    const ra = find(a)
    const rb = find(b)
    if (ra !== rb) parent[Math.max(ra, rb)] = Math.min(ra, rb)
  }
  const cccOf = new Int32Array(nn).fill(-1)
  const nodes: Array<Array<number>> = []
  for (let n = 0; n < nn; n++) {
    if (isRail(n)) continue
    const r = find(n)
    if (cccOf[r] === -1) {
      cccOf[r] = nodes.length
      nodes.push([])
    }
    cccOf[n] = cccOf[r]!
    nodes[cccOf[n]!]!.push(n)
  }
  const local = new Int32Array(nn)
  for (const list of nodes) list.forEach((n, i) => (local[n] = i))
  const trans: Array<Array<number>> = nodes.map(() => [])
  const gnd: Array<Array<number>> = Array.from({ length: nn }, () => [])
  const vccL: Array<Array<number>> = Array.from({ length: nn }, () => [])
  const fan: Array<Array<number>> = Array.from({ length: nn }, () => [])
  const addFan = (g: number, n: number) => {
    if (isRail(n)) return
    const c = cccOf[n]!
    if (!fan[g]!.includes(c)) fan[g]!.push(c)
  }
  for (let i = 0; i < nt; i++) {
    const g = nl.gate[i]!
    const a = nl.c1[i]!
    const b = nl.c2[i]!
    addFan(g, a)
    addFan(g, b)
    if (isRail(a) && isRail(b)) continue
    if (isRail(a) || isRail(b)) {
      const n = isRail(a) ? b : a
      const r = isRail(a) ? a : b
      ;(r === vss ? gnd : vccL)[n]!.push(g)
      continue
    }
    if (a === b) continue
    trans[cccOf[a]!]!.push(g, local[a]!, local[b]!)
  }
  const [cNodeStart, cNodes] = csr(nodes)
  const cTransStart = new Int32Array(nodes.length + 1)
  const all: Array<number> = []
  trans.forEach((l, c) => {
    cTransStart[c] = all.length / 3
    all.push(...l)
  })
  cTransStart[nodes.length] = all.length / 3
  const m = all.length / 3
  const cTGate = new Int32Array(m)
  const cTA = new Int32Array(m)
  const cTB = new Int32Array(m)
  for (let i = 0; i < m; i++) {
    cTGate[i] = all[i * 3]!
    cTA[i] = all[i * 3 + 1]!
    cTB[i] = all[i * 3 + 2]!
  }
  const [gndStart, gndGate] = csr(gnd)
  const [vccStart, vccGate] = csr(vccL)
  const [fanStart, fanF] = csr(fan)
  return {
    cccCount: nodes.length,
    cccOf,
    cNodeStart,
    cNodes,
    cTransStart,
    cTGate,
    cTA,
    cTB,
    gndStart,
    gndGate,
    vccStart,
    vccGate,
    fanStart,
    fan: fanF,
    maxSize: Math.max(...nodes.map((l) => l.length))
  }
}

/** CCCs of at most this many nodes are evaluated by the interpreter loop, larger ones by compiled code. */
const SMALL = 8

export class FastChip {
  value: Uint8Array
  pullup: Uint8Array
  pulldown: Uint8Array
  private listA: Int32Array
  private listB: Int32Array
  private stamp: Int32Array
  private gen = 0
  private chg: Int32Array
  /** CCCs that are one pulled-up node with pull-down transistors only (no pin): NMOS NOR/inverter. */
  private readonly nor: Uint8Array
  private rank: Int32Array
  private readonly fns: Array<CccFn>

  constructor(readonly tables: ChipTables, readonly ccc: CccTables = makeCccTables(tables)) {
    const nn = tables.nodeCount
    this.value = new Uint8Array(nn)
    this.pullup = new Uint8Array(nn)
    this.pulldown = new Uint8Array(nn)
    this.listA = new Int32Array(ccc.cccCount)
    this.listB = new Int32Array(ccc.cccCount)
    this.stamp = new Int32Array(ccc.cccCount)
    this.chg = new Int32Array(ccc.maxSize)
    this.rank = new Int32Array(ccc.maxSize)
    this.fns = compileCccs(tables, ccc, SMALL)
    this.nor = new Uint8Array(ccc.cccCount)
    const p = tables.pins
    const driven = new Set<number>([p.clk0, p.res, p.rdy, p.so, p.irq, p.nmi, ...p.db])
    for (let cc = 0; cc < ccc.cccCount; cc++) {
      if (ccc.cNodeStart[cc + 1]! - ccc.cNodeStart[cc]! !== 1) continue
      const n = ccc.cNodes[ccc.cNodeStart[cc]!]!
      if (driven.has(n) || !tables.netlist.pullup[n] || ccc.vccStart[n + 1]! !== ccc.vccStart[n]!) continue
      this.nor[cc] = 1
    }
  }

  /**
   * Whether this evaluator can carry `s` forward: every transistor conducts as its gate says,
   * and only pins (clk0, res, rdy, so, irq, nmi, db0..7) have pulls other than the netlist's
   * (the compiled code takes the others' pull-ups as constants).
   */
  canLoad(s: NodeState): boolean {
    const t = this.tables
    const gate = t.netlist.gate
    for (let i = 0; i < t.transistorCount; i++) if (s.transOn[i] !== s.value[gate[i]!]) return false
    const p = t.pins
    const driven = new Set<number>([p.clk0, p.res, p.rdy, p.so, p.irq, p.nmi, ...p.db])
    const pullup = t.netlist.pullup
    for (let n = 0; n < t.nodeCount; n++) {
      if (driven.has(n)) continue
      if (s.pulldown[n] || s.pullup[n] !== pullup[n]) return false
    }
    return true
  }

  /** Takes a state {@link canLoad} accepts; arrays are copied. @throws Error otherwise */
  load(s: NodeState): void {
    if (!this.canLoad(s)) throw new Error("FastChip: state has transistors not following their gates, or pulls off the pins")
    this.value = Uint8Array.from(s.value)
    this.pullup = Uint8Array.from(s.pullup)
    this.pulldown = Uint8Array.from(s.pulldown)
  }

  /** Conduction of every transistor: its gate's level. */
  get transOn(): Uint8Array {
    const gate = this.tables.netlist.gate
    const out = new Uint8Array(this.tables.transistorCount)
    for (let i = 0; i < out.length; i++) out[i] = this.value[gate[i]!]!
    return out
  }

  save(): NodeState {
    return {
      value: Uint8Array.from(this.value),
      pullup: Uint8Array.from(this.pullup),
      pulldown: Uint8Array.from(this.pulldown),
      transOn: this.transOn
    }
  }

  get(node: number): number {
    return this.value[node]!
  }

  readBits(ids: Int32Array): number {
    let v = 0
    for (let i = 0; i < ids.length; i++) if (this.value[ids[i]!]) v |= 1 << i
    return v >>> 0
  }

  private drive(node: number, level: number): void {
    this.pullup[node] = level ? 1 : 0
    this.pulldown[node] = level ? 0 : 1
  }

  setPin(node: number, level: number): void {
    this.drive(node, level)
    this.listA[0] = this.ccc.cccOf[node]!
    this.settle(1)
  }

  private driveData(byte: number): void {
    const db = this.tables.pins.db
    const cccOf = this.ccc.cccOf
    const gen = ++this.gen
    let count = 0
    for (let i = 0; i < 8; i++) {
      this.drive(db[i]!, (byte >> i) & 1)
      const c = cccOf[db[i]!]!
      if (this.stamp[c] !== gen) {
        this.stamp[c] = gen
        this.listA[count++] = c
      }
    }
    this.settle(count)
  }

  halfStep(memory: Uint8Array): void {
    const p = this.tables.pins
    const wasHigh = this.value[p.clk0]!
    this.setPin(p.clk0, wasHigh ? 0 : 1)
    if (wasHigh) return
    const addr = this.readBits(p.ab)
    if (this.value[p.rw]) this.driveData(memory[addr]!)
    else memory[addr] = this.readBits(p.db)
  }

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
      this.halfStep(memory)
      done++
      if (this.value[p.sync] && !this.value[p.clk0]) {
        const addr = this.readBits(p.ab)
        last = { addr, opcode: memory[addr]! }
        if (addr === stopPc) {
          stopped = true
          break
        }
      }
    }
    return { done, stopped, last }
  }

  private settle(count: number): void {
    const c = this.ccc
    const fanStart = c.fanStart
    const fan = c.fan
    const fns = this.fns
    const cNodeStart = c.cNodeStart
    const cNodes = c.cNodes
    const cTransStart = c.cTransStart
    const cTGate = c.cTGate
    const cTA = c.cTA
    const cTB = c.cTB
    const gndStart = c.gndStart
    const gndGate = c.gndGate
    const vccStart = c.vccStart
    const vccGate = c.vccGate
    const rank = this.rank
    const nor = this.nor
    const value = this.value
    const pullup = this.pullup
    const pulldown = this.pulldown
    const chg = this.chg
    const stamp = this.stamp
    let cur = this.listA
    let next = this.listB
    if (this.gen > 0x3fffffff) {
      stamp.fill(0)
      this.gen = 0
    }
    for (let pass = 0; pass < MAX_SETTLE_PASSES && count > 0; pass++) {
      const gen = ++this.gen
      let nextCount = 0
      for (let i = 0; i < count; i++) {
        const cc = cur[i]!
        let m = 0
        const s = cNodeStart[cc]!
        const k = cNodeStart[cc + 1]! - s
        if (nor[cc]) {
          // a pulled-up node whose only rail contacts are pull-downs: high unless one conducts
          const n = cNodes[s]!
          let nv = 1
          for (let q = gndStart[n]!, e = gndStart[n + 1]!; q < e; q++) {
            if (value[gndGate[q]!]) {
              nv = 0
              break
            }
          }
          if (value[n] !== nv) {
            value[n] = nv
            chg[0] = n
            m = 1
          }
        } else if (k === 1) {
          const n = cNodes[s]!
          let r = 0
          for (let q = gndStart[n]!, e = gndStart[n + 1]!; q < e; q++) {
            if (value[gndGate[q]!]) {
              r = 5
              break
            }
          }
          if (r === 0) {
            for (let q = vccStart[n]!, e = vccStart[n + 1]!; q < e; q++) {
              if (value[vccGate[q]!]) {
                r = 4
                break
              }
            }
            if (r === 0) r = pulldown[n] ? 3 : pullup[n] ? 2 : value[n]!
          }
          const nv = (0x16 >> r) & 1
          if (value[n] !== nv) {
            value[n] = nv
            chg[0] = n
            m = 1
          }
        } else if (k <= SMALL) {
          for (let j = 0; j < k; j++) {
            const n = cNodes[s + j]!
            let r = 0
            for (let q = gndStart[n]!, e = gndStart[n + 1]!; q < e; q++) {
              if (value[gndGate[q]!]) {
                r = 5
                break
              }
            }
            if (r === 0) {
              for (let q = vccStart[n]!, e = vccStart[n + 1]!; q < e; q++) {
                if (value[vccGate[q]!]) {
                  r = 4
                  break
                }
              }
              if (r === 0) r = pulldown[n] ? 3 : pullup[n] ? 2 : value[n]!
            }
            rank[j] = r
          }
          const ts = cTransStart[cc]!
          const te = cTransStart[cc + 1]!
          for (let ch = 1; ch; ) {
            ch = 0
            for (let q = ts; q < te; q++) {
              if (!value[cTGate[q]!]) continue
              const a = cTA[q]!
              const b = cTB[q]!
              const ra = rank[a]!
              const rb = rank[b]!
              if (ra === rb) continue
              if (ra > rb) rank[b] = ra
              else rank[a] = rb
              ch = 1
            }
          }
          for (let j = 0; j < k; j++) {
            const nv = (0x16 >> rank[j]!) & 1
            const n = cNodes[s + j]!
            if (value[n] !== nv) {
              value[n] = nv
              chg[m++] = n
            }
          }
        } else m = fns[cc]!(value, pullup, pulldown, chg)
        for (let j = 0; j < m; j++) {
          const n = chg[j]!
          for (let q = fanStart[n]!, e = fanStart[n + 1]!; q < e; q++) {
            const d = fan[q]!
            if (stamp[d] !== gen) {
              stamp[d] = gen
              next[nextCount++] = d
            }
          }
        }
      }
      const tmp = cur
      cur = next
      next = tmp
      count = nextCount
    }
    this.listA = cur
    this.listB = next
  }
}

type CccFn = (v: Uint8Array, pu: Uint8Array, pd: Uint8Array, chg: Int32Array) => number

/**
 * Straight-line code per CCC (compiled switch-level simulation, after Bryant's COSMOS): each
 * node's rank (5 ground, 4 power, 3 pulled down, 2 pulled up, 1 charged high, 0 low) from its
 * rail transistors' gates and pulls (constant for nodes no pin drive touches), then the maximum
 * rank spread over conducting transistors to a fixed point (each group gets its highest rank),
 * then every node set to its group's level; changed nodes are written to `chg`, their count
 * returned. Reads all inputs before writing anything.
 */
const cccBodies = (t: ChipTables, c: CccTables, minNodes: number): Array<string> => {
  const p = t.pins
  const driven = new Set<number>([p.clk0, p.res, p.rdy, p.so, p.irq, p.nmi, ...p.db])
  const pullup = t.netlist.pullup
  const bodies: Array<string> = []
  for (let cc = 0; cc < c.cccCount; cc++) {
    const s = c.cNodeStart[cc]!
    const k = c.cNodeStart[cc + 1]! - s
    if (k <= minNodes) {
      bodies.push("")
      continue
    }
    const lines: Array<string> = []
    for (let j = 0; j < k; j++) {
      const n = c.cNodes[s + j]!
      const conds: Array<string> = []
      const gnd: Array<string> = []
      for (let q = c.gndStart[n]!; q < c.gndStart[n + 1]!; q++) gnd.push(`v[${c.gndGate[q]!}]`)
      if (gnd.length) conds.push(`(${gnd.join(" | ")}) ? 5`)
      const vcc: Array<string> = []
      for (let q = c.vccStart[n]!; q < c.vccStart[n + 1]!; q++) vcc.push(`v[${c.vccGate[q]!}]`)
      if (vcc.length) conds.push(`(${vcc.join(" | ")}) ? 4`)
      let tail: string
      if (driven.has(n)) tail = `pd[${n}] ? 3 : pu[${n}] ? 2 : v[${n}]`
      else tail = pullup[n] ? "2" : `v[${n}]`
      lines.push(`let r${j} = ${[...conds, tail].join(" : ")};`)
    }
    const ts = c.cTransStart[cc]!
    const te = c.cTransStart[cc + 1]!
    if (te > ts) {
      for (let q = ts; q < te; q++) lines.push(`const e${q - ts} = v[${c.cTGate[q]!}];`)
      lines.push("let ch = true;")
      lines.push("while (ch) {")
      lines.push("ch = false;")
      const body: Array<string> = []
      for (let q = ts; q < te; q++) {
        const a = c.cTA[q]!
        const b = c.cTB[q]!
        body.push(`if (e${q - ts} && r${a} !== r${b}) { if (r${a} > r${b}) r${b} = r${a}; else r${a} = r${b}; ch = true; }`)
      }
      // forward then backward sweep per round: chains converge in one round
      lines.push(...body, ...body.slice().reverse())
      lines.push("}")
    }
    lines.push("let m = 0;")
    for (let j = 0; j < k; j++) {
      const n = c.cNodes[s + j]!
      lines.push(`{ const nv = (0x16 >> r${j}) & 1; if (v[${n}] !== nv) { v[${n}] = nv; chg[m++] = ${n}; } }`)
    }
    lines.push("return m;")
    bodies.push(lines.join("\n"))
  }
  return bodies
}

/** One function per CCC of more than `minNodes` nodes (a no-op placeholder for the others). */
export const compileCccs = (t: ChipTables, c: CccTables, minNodes = 0): Array<CccFn> => {
  const none: CccFn = () => 0
  return cccBodies(t, c, minNodes).map((b) => (b === "" ? none : (new Function("v", "pu", "pd", "chg", b) as CccFn)))
}
