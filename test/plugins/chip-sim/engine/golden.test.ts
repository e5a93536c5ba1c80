import { describe, expect, it } from "vitest"
import { decodeMemory, MAX_TRACED, type StepResult } from "../../../../plugins/chip-sim/engine/index.ts"
import { goldenRows, haveNetlist, image, manifest, simulator, type GoldenProgram } from "./golden.ts"

const rowOf = (r: StepResult): string => {
  const o = r.observe
  return [o.half_cycle, o.clk0, o.addr, o.data, o.rw, o.sync, o.pc, o.a, o.x, o.y, o.s, o.p, o.ir].join(",")
}

/** Boots the program and replays it through the JSON API, one request per segment between pin events. */
const replay = (p: GoldenProgram) => {
  const sim = simulator()
  const boot = sim.boot({ memory: image(p), resetVector: p.reset_vector })
  const rows = [rowOf(boot)]
  let machine = boot.machine
  let hc = 0
  const events = [...p.pin_events].sort((a, b) => a.after_hc - b.after_hc)
  let pins: Record<string, 0 | 1> = {}
  for (const e of events.filter((e) => e.after_hc === 0)) pins[e.pin] = e.level
  while (hc < p.half_cycles) {
    const nextEvent = events.find((e) => e.after_hc > hc)
    const stop = Math.min(p.half_cycles, nextEvent?.after_hc ?? Infinity, hc + MAX_TRACED)
    const r = sim.step({ machine, halfCycles: stop - hc, trace: true, format: "rows", pins })
    expect(r.stepped).toBe(stop - hc)
    expect(r.completed).toBe(true)
    for (const row of r.trace_rows!.rows) rows.push(row.join(","))
    machine = r.machine
    hc = stop
    pins = {}
    for (const e of events.filter((e) => e.after_hc === hc)) pins[e.pin] = e.level
  }
  return { rows, machine }
}

/** Same run without trace (span replay allowed), one request per segment: final row and memory. */
const runPlain = (p: GoldenProgram) => {
  const sim = simulator()
  let machine = sim.boot({ memory: image(p), resetVector: p.reset_vector }).machine
  let result: StepResult | undefined
  let hc = 0
  const events = [...p.pin_events].sort((a, b) => a.after_hc - b.after_hc)
  const pinsAt = (at: number) => Object.fromEntries(events.filter((e) => e.after_hc === at).map((e) => [e.pin, e.level]))
  let pins = pinsAt(0)
  while (hc < p.half_cycles) {
    const stop = Math.min(p.half_cycles, events.find((e) => e.after_hc > hc)?.after_hc ?? Infinity)
    result = sim.step({ machine, halfCycles: stop - hc, pins })
    machine = result.machine
    hc = stop
    pins = pinsAt(hc)
  }
  return { last: rowOf(result!), machine }
}

describe.skipIf(!haveNetlist)("golden traces", () => {
  for (const p of manifest().programs) {
    it(`${p.name}: ${p.half_cycles} half-cycles, bit for bit, and final memory`, () => {
      const want = goldenRows(p)
      const { rows, machine } = replay(p)
      expect(rows.length).toBe(want.length)
      const firstBad = rows.findIndex((r, i) => r !== want[i])
      expect(firstBad === -1 ? "all rows match" : `row ${firstBad}: got ${rows[firstBad]} want ${want[firstBad]}`).toBe(
        "all rows match"
      )
      expect(machine.state.half_cycle).toBe(p.half_cycles)
      const mem = decodeMemory(machine.memory)
      for (const [page, hex] of Object.entries(p.final_pages)) {
        const base = parseInt(page, 16) << 8
        expect(Buffer.from(mem.subarray(base, base + 256)).toString("hex"), `page ${page}`).toBe(hex)
      }
      // untraced, the same machine comes out (spans may be replayed there)
      const plain = runPlain(p)
      expect(plain.last).toBe(want[want.length - 1])
      expect(plain.machine).toEqual(machine)
    })
  }
})
