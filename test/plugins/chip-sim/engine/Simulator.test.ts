import * as os from "node:os"
import { describe, expect, it } from "vitest"
import {
  EngineStateError,
  makeSimulator,
  makeSimulatorFromNetlist,
  META,
  NetlistMissing,
  NODE_GROUPS,
  StepLimitExceeded,
  StepRequestError,
  TRACE_COLUMNS,
  UnknownWatchNode,
  type MachineJson
} from "../../../../plugins/chip-sim/engine/index.ts"
import { haveNetlist, image, program, simulator } from "./golden.ts"

const bootArith = () => {
  const p = program("arith")
  return simulator().boot({ memory: image(p), resetVector: p.reset_vector })
}

describe("NetlistMissing", () => {
  it("names the folder and the way out", () => {
    const dir = `${os.tmpdir()}/no-such-netlist-${process.pid}`
    expect(() => makeSimulator(dir)).toThrow(NetlistMissing)
    expect(() => makeSimulator(dir)).toThrow(new RegExp(`${dir}.*platform chip fetch-netlist.*CHIP_SIM_NETLIST`))
  })
})

describe.skipIf(!haveNetlist)("Simulator", () => {
  it("boots to the reset vector with sync high and clk0 low", () => {
    const r = bootArith()
    expect(r.stepped).toBe(0)
    expect(r.observe).toMatchObject({ half_cycle: 0, cycle: 0, clk0: 0, sync: 1, addr: "0200", pc: "0200", p: "36" })
    expect(r.machine.state.version).toBe(1)
    expect(r.machine.state.last_fetch).toEqual({ addr: 0x200, opcode: 0xd8 })
    expect(r.machine.state.value).toHaveLength(432)
    expect(r.machine.state.trans_on).toHaveLength(878)
    expect(r.machine.memory.fill).toBe("00")
    expect(Object.keys(r.machine.memory.pages)).toEqual(["02", "ff"])
  })

  it("reads every observation field", () => {
    const r = simulator().step({ machine: bootArith().machine, halfCycles: 12, watch: ["cp1", "dpc41_DL/ADL", "~pclp0"] })
    const o = r.observe
    expect(o).toMatchObject({ half_cycle: 12, cycle: 6, a: "37", flags: "nv-BdIzc" })
    expect(["phi1", "phi2"]).toContain(o.phase)
    expect(o.phase).toBe(o.clk0 ? "phi2" : "phi1")
    expect(o.tstates).toMatch(/^T[0-5](\+T[0-5])*$/)
    expect(["", "T1", "VEC0", "T6"]).toContain(o.hidden)
    expect(["", "SD1", "SD2"]).toContain(o.store_data)
    for (const k of ["alu", "alua", "alub", "sb", "idb", "idl", "dor", "adl", "adh", "abl", "abh", "pclp", "pchp"]) {
      expect(o[k], k).toMatch(/^[0-9a-f]{2}$/)
    }
    expect(o.cp1).toBe(o.phase === "phi1" ? 1 : 0)
    expect([0, 1]).toContain(o["dpc41_DL/ADL"])
    expect([0, 1]).toContain(o["~pclp0"])
  })

  it("resumes bit-exactly: 20 then 21 equals 41, for several splits", () => {
    const sim = simulator()
    const boot = bootArith()
    const whole = sim.step({ machine: boot.machine, halfCycles: 41 })
    for (const split of [1, 7, 20, 33, 40]) {
      const first = sim.step({ machine: boot.machine, halfCycles: split })
      // through JSON text, as a client would carry it
      const carried = JSON.parse(JSON.stringify(first.machine)) as MachineJson
      const second = sim.step({ machine: carried, halfCycles: 41 - split })
      expect(second.machine, `split ${split}`).toEqual(whole.machine)
      expect(second.observe).toEqual(whole.observe)
    }
  })

  it("runs until the next instruction, a cycle, or a pc", () => {
    const sim = simulator()
    const boot = bootArith()
    const ins = sim.step({ machine: boot.machine, until: "instruction" })
    expect(ins.completed).toBe(true)
    expect(ins.observe).toMatchObject({ sync: 1, clk0: 0, addr: "0201" })
    expect(ins.machine.state.last_fetch).toEqual({ addr: 0x201, opcode: 0x18 })
    const cyc = sim.step({ machine: boot.machine, until: "cycle" })
    expect(cyc.stepped).toBe(2)
    const pc = sim.step({ machine: boot.machine, untilPc: 0x0206, maxHalfCycles: 500 })
    expect(pc.completed).toBe(true)
    expect(pc.observe.addr).toBe("0206")
    const never = sim.step({ machine: boot.machine, untilPc: 0x1234, maxHalfCycles: 50 })
    expect(never).toMatchObject({ completed: false, stepped: 50 })
  })

  it("traces as objects and as rows", () => {
    const sim = simulator()
    const boot = bootArith()
    const objs = sim.step({ machine: boot.machine, halfCycles: 5, trace: true, watch: ["sync", "clock1"] })
    expect(objs.trace).toHaveLength(5)
    expect(objs.trace![4]).toEqual(objs.observe)
    const rows = sim.step({ machine: boot.machine, halfCycles: 5, trace: true, format: "rows", watch: ["clock1"] })
    expect(rows.trace_rows!.columns).toEqual([...TRACE_COLUMNS, "clock1"])
    expect(rows.trace_rows!.rows[0]).toEqual([1, 1, "0200", "d8", 1, 1, "0200", "00", "c0", "00", "bd", "36", "00", objs.trace![0]!.clock1])
    expect(rows.trace).toBeUndefined()
  })

  it("applies pins before stepping and keeps them in the pull state", () => {
    const sim = simulator()
    const boot = bootArith()
    const held = sim.step({ machine: boot.machine, halfCycles: 2, pins: { rdy: 0 } })
    const later = sim.step({ machine: held.machine, halfCycles: 40 })
    // RDY low stalls reads: the fetch address does not move
    expect(later.observe.pc).toBe(held.observe.pc)
    const released = sim.step({ machine: later.machine, halfCycles: 40, pins: { rdy: 1 } })
    expect(released.observe.pc).not.toBe(later.observe.pc)
  })

  it("refuses bad requests with the documented errors", () => {
    const sim = simulator()
    const boot = bootArith()
    const machine = boot.machine
    expect(() => sim.step({ machine, halfCycles: 200_001 })).toThrow(StepLimitExceeded)
    expect(() => sim.step({ machine, halfCycles: 10_001, trace: true })).toThrow(StepLimitExceeded)
    expect(() => sim.step({ machine, until: "instruction", maxHalfCycles: 10_001, trace: true })).toThrow(StepLimitExceeded)
    expect(() => sim.step({ machine })).toThrow(StepRequestError)
    expect(() => sim.step({ machine, halfCycles: 2, until: "cycle" })).toThrow(StepRequestError)
    expect(() => sim.step({ machine, halfCycles: 2, watch: ["nope", "p5"] })).toThrow(UnknownWatchNode)
    expect(() => sim.boot({ watch: ["Pout5"] })).toThrow(UnknownWatchNode)
    const bad = (patch: Partial<MachineJson["state"]>) => ({ ...machine, state: { ...machine.state, ...patch } })
    expect(() => sim.step({ machine: bad({ value: machine.state.value.slice(2) }), halfCycles: 1 })).toThrow(EngineStateError)
    expect(() => sim.step({ machine: bad({ trans_on: "z" + machine.state.trans_on.slice(1) }), halfCycles: 1 })).toThrow(EngineStateError)
    expect(() => sim.step({ machine: bad({ pullup: machine.state.pullup.slice(0, 430) + "ff" }), halfCycles: 1 })).toThrow(EngineStateError)
    expect(() => sim.step({ machine: bad({ version: 2 as 1 }), halfCycles: 1 })).toThrow(EngineStateError)
    expect(new StepLimitExceeded(1, 0, false).status).toBe(422)
    expect(new EngineStateError("x").status).toBe(400)
  })

  it("returns the same machine with the half-cycle memo on or off", () => {
    const plain = makeSimulatorFromNetlist(simulator().netlist, { memo: false })
    const boot = bootArith()
    const a = simulator().step({ machine: boot.machine, halfCycles: 30_000 })
    const b = plain.step({ machine: boot.machine, halfCycles: 30_000 })
    expect(a).toEqual(b)
  })

  it("returns the same machines with span replay as stepping one by one, across requests and interrupts", () => {
    const plain = makeSimulatorFromNetlist(simulator().netlist, { memo: false })
    const p = program("irq")
    let a = simulator().boot({ memory: image(p), resetVector: p.reset_vector }).machine
    let b = a
    // long enough for the loop to recur and spans to replay; IRQ pulses now and then
    for (let r = 0; r < 6; r++) {
      const pins = r % 3 === 2 ? { irq: 0 as const } : { irq: 1 as const }
      const n = r % 3 === 2 ? 90 : 15_000
      const ra = simulator().step({ machine: a, halfCycles: n, pins })
      const rb = plain.step({ machine: b, halfCycles: n, pins })
      expect(ra, `request ${r}`).toEqual(rb)
      a = ra.machine
      b = rb.machine
    }
  })

  it("stops breakpoint runs at the same fetch with span replay as stepping one by one", () => {
    const plain = makeSimulatorFromNetlist(simulator().netlist, { memo: false })
    const p = program("irq")
    let a = simulator().boot({ memory: image(p), resetVector: p.reset_vector }).machine
    a = simulator().step({ machine: a, halfCycles: 30_000 }).machine
    let b = a
    // $0228 is INC $73, reached every 16th turn of the loop; $1234 is never fetched
    for (const [pc, max] of [[0x0228, 20_000], [0x0228, 20_000], [0x1234, 12_000], [0x0228, 20_000]] as const) {
      const ra = simulator().step({ machine: a, untilPc: pc, maxHalfCycles: max })
      const rb = plain.step({ machine: b, untilPc: pc, maxHalfCycles: max })
      expect(ra).toEqual(rb)
      expect(ra.completed).toBe(pc === 0x0228)
      if (ra.completed) expect(ra.observe.addr).toBe("0228")
      a = ra.machine
      b = rb.machine
    }
  })

  it("does not leak state between requests", () => {
    const sim = simulator()
    const boot = bootArith()
    const a = sim.step({ machine: boot.machine, halfCycles: 30 })
    sim.step({ machine: a.machine, halfCycles: 100, pins: { irq: 0, rdy: 0 } })
    expect(sim.step({ machine: boot.machine, halfCycles: 30 })).toEqual(a)
  })

  it("boots an empty machine running from $FFFC", () => {
    const r = simulator().boot({ memory: { fill: "ea" } })
    expect(r.observe.addr).toBe("eaea")
    expect(r.machine.memory).toEqual({ fill: "ea", pages: {} })
  })

  it("describes itself and its nodes", () => {
    expect(META).toMatchObject({ nodes: 1725, transistors: 3510, max_step: 200_000, max_traced: 10_000 })
    expect(META.encoding).toMatch(/432/)
    const cat = simulator().nodes()
    expect(Object.keys(cat)).toEqual([...NODE_GROUPS])
    const all = Object.values(cat).flat()
    expect(all).toHaveLength(832)
    expect(new Set(all.map((e) => e.name)).size).toBe(832)
    expect(cat.datapath).toHaveLength(49)
    expect(cat.rails.map((e) => e.name).sort()).toEqual(["vcc", "vss"])
    expect(cat.pins.find((e) => e.name === "clk0")?.id).toBe(1171)
    expect(cat.registers.find((e) => e.name === "a0")?.id).toBe(737)
    expect(cat.timing.map((e) => e.name)).toContain("cp1")
  })
})
