import { describe, expect, it } from "vitest"
import { decodeMemory, decodeState, makeTables, Observer } from "../../../../plugins/chip-sim/engine/index.ts"
import { FastChip } from "../../../../plugins/chip-sim/engine/FastChip.ts"
import { goldenRows, haveNetlist, image, manifest, simulator, type GoldenProgram } from "./golden.ts"

/**
 * The experimental CCC evaluator (FastChip, not wired into the Simulator): from the boot point
 * (reached by the exact engine), it must reproduce every golden row and final memory page.
 * It does not match the exact engine node for node (a few floating nodes differ).
 */
let tables: ReturnType<typeof makeTables> | undefined

const run = (p: GoldenProgram) => {
  const sim = simulator()
  tables ??= makeTables(sim.netlist)
  const boot = sim.boot({ memory: image(p), resetVector: p.reset_vector })
  const st = decodeState(boot.machine.state)
  const mem = decodeMemory(boot.machine.memory)
  const chip = new FastChip(tables)
  chip.load(st)
  const obs = new Observer(sim.netlist)
  const rows = [obs.row(chip.value, 0).join(",")]
  const pin = (name: string) => tables!.pins[name as "res"]
  for (let hc = 0; hc <= p.half_cycles; hc++) {
    if (hc > 0) {
      chip.halfStep(mem)
      rows.push(obs.row(chip.value, hc).join(","))
    }
    for (const e of p.pin_events) if (e.after_hc === hc) chip.setPin(pin(e.pin), e.level)
  }
  return { rows, mem, chip }
}

describe.skipIf(!haveNetlist)("FastChip (CCC evaluator)", () => {
  for (const p of manifest().programs) {
    it(`${p.name}: golden rows and final memory`, () => {
      const want = goldenRows(p)
      const { rows, mem, chip } = run(p)
      const firstBad = rows.findIndex((r, i) => r !== want[i])
      expect(firstBad === -1 ? "all rows match" : `row ${firstBad}: got ${rows[firstBad]} want ${want[firstBad]}`).toBe("all rows match")
      expect(rows.length).toBe(want.length)
      for (const [page, hex] of Object.entries(p.final_pages)) {
        const base = parseInt(page, 16) << 8
        expect(Buffer.from(mem.subarray(base, base + 256)).toString("hex"), `page ${page}`).toBe(hex)
      }
      // saved state is consistent: every transistor conducts as its gate says
      const s = chip.save()
      const gate = tables!.netlist.gate
      let bad = 0
      for (let i = 0; i < gate.length; i++) if (s.transOn[i] !== s.value[gate[i]!]) bad++
      expect(bad).toBe(0)
    })
  }

  it("resumes through a saved state: 20 + 21 half-cycles equal 41", () => {
    const p = manifest().programs.find((q) => q.name === "irq")!
    const sim = simulator()
    tables ??= makeTables(sim.netlist)
    const boot = sim.boot({ memory: image(p), resetVector: p.reset_vector })
    const st = decodeState(boot.machine.state)
    const memA = decodeMemory(boot.machine.memory)
    const memB = Uint8Array.from(memA)
    const a = new FastChip(tables)
    a.load(st)
    a.runHalfCycles(memA, 41)
    const b = new FastChip(tables)
    b.load(st)
    b.runHalfCycles(memB, 20)
    const c = new FastChip(tables)
    c.load(b.save())
    c.runHalfCycles(memB, 21)
    expect(Buffer.from(c.save().value).equals(Buffer.from(a.save().value))).toBe(true)
    expect(Buffer.from(memB).equals(Buffer.from(memA))).toBe(true)
  })
})
