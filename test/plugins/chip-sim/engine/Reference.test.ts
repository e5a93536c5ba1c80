/**
 * The optimised Chip against a plain, unoptimised statement of the same settle scheme (lists of
 * nodes, recursive group walk over all channels, priority of ground/power/pull-down/pull-up/
 * charge): every node and transistor must agree after every half-cycle, so the caches and the
 * bitmask walk change speed only, never the order of events.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { Chip, loadNetlist, makeTables, type Netlist } from "../../../../plugins/chip-sim/engine/index.ts"
import { GOLDEN_DIR, haveNetlist, NETLIST_DIR, program } from "./golden.ts"

class PlainChip {
  value: Uint8Array
  pullup: Uint8Array
  pulldown: Uint8Array
  transOn: Uint8Array
  private chan: Array<Array<[number, number]>>
  private gates: Array<Array<number>>
  private depOn: Array<Array<number>>
  private depOff: Array<Array<number>>

  constructor(private nl: Netlist) {
    const nn = nl.nodeCount
    const rail = (n: number) => n === nl.vss || n === nl.vcc
    this.chan = Array.from({ length: nn }, () => [])
    this.gates = Array.from({ length: nn }, () => [])
    this.depOn = Array.from({ length: nn }, () => [])
    this.depOff = Array.from({ length: nn }, () => [])
    for (let t = 0; t < nl.transistorCount; t++) {
      const [g, a, b] = [nl.gate[t]!, nl.c1[t]!, nl.c2[t]!]
      this.gates[g]!.push(t)
      if (!rail(a)) this.chan[a]!.push([t, b])
      if (!rail(b)) this.chan[b]!.push([t, a])
      for (const x of [a, b]) if (!rail(x) && !this.depOff[g]!.includes(x)) this.depOff[g]!.push(x)
      const one = rail(a) ? b : a
      if (!rail(one) && !this.depOn[g]!.includes(one)) this.depOn[g]!.push(one)
    }
    this.value = new Uint8Array(nn)
    this.value[nl.vcc] = 1
    this.pullup = Uint8Array.from(nl.pullup)
    this.pulldown = new Uint8Array(nn)
    this.transOn = new Uint8Array(nl.transistorCount)
  }

  settle(list: Array<number>): void {
    for (let pass = 0; pass < 100 && list.length > 0; pass++) {
      const next: Array<number> = []
      const queued = new Set<number>()
      for (const start of list) {
        if (start === this.nl.vss || start === this.nl.vcc) continue
        const group: Array<number> = []
        let rank = 0
        const visit = (n: number) => {
          if (n === this.nl.vss) return void (rank = 5)
          if (n === this.nl.vcc) return void (rank = Math.max(rank, 4))
          if (group.includes(n)) return
          group.push(n)
          rank = Math.max(rank, this.pulldown[n] ? 3 : this.pullup[n] ? 2 : this.value[n] ? 1 : 0)
          for (const [t, o] of this.chan[n]!) if (this.transOn[t]) visit(o)
        }
        visit(start)
        const nv = rank === 1 || rank === 2 || rank === 4 ? 1 : 0
        for (const n of group) {
          if (this.value[n] === nv) continue
          this.value[n] = nv
          for (const t of this.gates[n]!) this.transOn[t] = nv
          for (const d of nv ? this.depOn[n]! : this.depOff[n]!) if (!queued.has(d)) queued.add(d) && next.push(d)
        }
      }
      list = next
    }
  }

  setPin(n: number, level: number): void {
    this.pullup[n] = level
    this.pulldown[n] = level ^ 1
    this.settle([n])
  }
}

const bits = (nl: Netlist, prefix: string, k: number) => Array.from({ length: k }, (_, i) => nl.names.get(`${prefix}${i}`)!)

/** Transistors switched against their gates by the inconsistent-state test (spread over the netlist). */
const TAMPERED = [17, 404, 1234, 2024, 2999, 3500]

const compare = (
  name: string,
  halfCycles: number,
  irqEdges: ReadonlyArray<[number, 0 | 1]>,
  memoResetAt = -1,
  tamperAt = -1
) => {
    const nl = loadNetlist(NETLIST_DIR)
    const fast = new Chip(makeTables(nl))
    const plain = new PlainChip(nl)
    const p = program(name)
    const memA = new Uint8Array(65536)
    memA.set(fs.readFileSync(path.join(GOLDEN_DIR, p.image)), p.org)
    memA[0xfffc] = p.reset_vector & 0xff
    memA[0xfffd] = p.reset_vector >> 8
    const memB = Uint8Array.from(memA)
    const ab = bits(nl, "ab", 16)
    const db = bits(nl, "db", 8)
    const id = (n: string) => nl.names.get(n)!
    const plainHalf = () => {
      const clk = plain.value[id("clk0")]!
      plain.setPin(id("clk0"), clk ^ 1)
      if (clk) return
      const addr = ab.reduce((a, n, i) => a | (plain.value[n]! << i), 0)
      if (plain.value[id("rw")]) {
        db.forEach((n, i) => {
          plain.pullup[n] = (memB[addr]! >> i) & 1
          plain.pulldown[n] = plain.pullup[n]! ^ 1
        })
        plain.settle([...db])
      } else memB[addr] = db.reduce((a, n, i) => a | (plain.value[n]! << i), 0)
    }
    const same = (when: string) => {
      expect(Buffer.from(fast.value).equals(Buffer.from(plain.value)), `nodes ${when}`).toBe(true)
      expect(Buffer.from(fast.transOn).equals(Buffer.from(plain.transOn)), `transistors ${when}`).toBe(true)
    }
    fast.powerOn()
    for (const [pin, level] of [["res", 0], ["clk0", 1], ["rdy", 1], ["so", 0], ["irq", 1], ["nmi", 1]] as const) {
      fast.setPin(id(pin), level)
      plain.setPin(id(pin), level)
    }
    fast.settleAll()
    plain.settle(Array.from({ length: nl.nodeCount }, (_, i) => i))
    same("after power-on")
    for (let hc = 0; hc < halfCycles; hc++) {
      if (hc === 16) {
        fast.setPin(id("res"), 1)
        plain.setPin(id("res"), 1)
      }
      for (const [at, level] of irqEdges) {
        if (at !== hc) continue
        fast.setPin(id("irq"), level)
        plain.setPin(id("irq"), level)
      }
      if (hc === memoResetAt) fast.memoReset()
      if (hc === tamperAt) {
        // a client's edited trans_on: from here on, transistors need not follow their gates
        const s = fast.save()
        for (const t of TAMPERED) s.transOn[t] ^= 1
        fast.load(s)
        plain.transOn = Uint8Array.from(s.transOn)
        same("after tampering")
      }
      fast.halfStep(memA)
      plainHalf()
      same(`after half-cycle ${hc}`)
    }
    expect(Buffer.from(memA).equals(Buffer.from(memB))).toBe(true)
    return fast
}

describe.skipIf(!haveNetlist)("Chip against a plain statement of the settle scheme", () => {
  it("agrees on every node and transistor through power-on, reset and 1500 half-cycles of irq", () => {
    // interrupts exercise the latches that race
    compare("irq", 1540, [[340, 0], [420, 1], [1200, 0], [1230, 1]])
  })

  it("agrees while the half-cycle memo replays an idle loop (arith ends in JMP *)", () => {
    // by half-cycle 1200 arith idles in its final loop; start the memo afresh there
    const fast = compare("arith", 3000, [], 1200)
    expect(fast.memoHits).toBeGreaterThan(500)
  })

  it("agrees from a state whose transistors do not all conduct as their gates say", () => {
    compare("irq", 1200, [[700, 0], [760, 1]], -1, 400)
  })
})

describe.skipIf(!haveNetlist)("half-cycle memo", () => {
  it("changes nothing: 60,000 half-cycles of irq with interrupts, memo on and off, node for node", () => {
    const nl = loadNetlist(NETLIST_DIR)
    const tables = makeTables(nl)
    const on = new Chip(tables)
    const off = new Chip(tables, { memo: false })
    const p = program("irq")
    const mem = new Uint8Array(65536)
    mem.set(fs.readFileSync(path.join(GOLDEN_DIR, p.image)), p.org)
    mem[0xfffc] = p.reset_vector & 0xff
    mem[0xfffd] = p.reset_vector >> 8
    const memOn = Uint8Array.from(mem)
    const memOff = Uint8Array.from(mem)
    const id = (n: string) => nl.names.get(n)!
    const both = (f: (c: Chip) => void) => {
      f(on)
      f(off)
    }
    both((c) => {
      c.powerOn()
      for (const [pin, level] of [["res", 0], ["clk0", 1], ["rdy", 1], ["so", 0], ["irq", 1], ["nmi", 1]] as const) c.setPin(id(pin), level)
      c.settleAll()
    })
    for (let hc = 0; hc < 60_000; hc++) {
      if (hc === 16) both((c) => c.setPin(id("res"), 1))
      // after 40,000 half-cycles of the counting loop (which recurs, so the memo replays much
      // of it), an IRQ now and then, held for a while
      if (hc > 40_000 && hc % 9_000 === 4_000) both((c) => c.setPin(id("irq"), 0))
      if (hc > 40_000 && hc % 9_000 === 4_100) both((c) => c.setPin(id("irq"), 1))
      on.halfStep(memOn)
      off.halfStep(memOff)
      if (hc % 2_000 === 1_999) {
        const a = on.save()
        const b = off.save()
        expect(Buffer.from(a.value).equals(Buffer.from(b.value)), `nodes after ${hc}`).toBe(true)
        expect(Buffer.from(a.transOn).equals(Buffer.from(b.transOn)), `transistors after ${hc}`).toBe(true)
        expect(Buffer.from(a.pullup).equals(Buffer.from(b.pullup)), `pulls after ${hc}`).toBe(true)
        expect(Buffer.from(memOn).equals(Buffer.from(memOff)), `memory after ${hc}`).toBe(true)
      }
    }
    expect(on.memoHits).toBeGreaterThan(10_000)
    expect(off.memoHits).toBe(0)
  })
})
