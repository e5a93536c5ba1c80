/**
 * The simulator pool (piscina threads): results equal the in-process simulator's, requests beyond
 * the thread count queue and all complete, engine errors come back with their status and assembler
 * line, and a closed pool refuses work.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AssembleError } from "../../../plugins/chip-sim/assembler/AssembleError.ts"
import { makeChipSimulator } from "../../../plugins/chip-sim/Simulation.ts"
import { makeSimulatorPool, type SimulatorPool } from "../../../plugins/chip-sim/SimulatorPool.ts"
import { haveNetlist, NETLIST_DIR } from "./engine/golden.ts"

const ROM = { source: "  LDX #0\nloop: INX\n  STX $10\n  JMP loop\n", org: 0x0400 }

describe.skipIf(!haveNetlist)("SimulatorPool", () => {
  let pool: SimulatorPool
  const local = haveNetlist ? makeChipSimulator(NETLIST_DIR) : (undefined as never)
  beforeAll(async () => {
    pool = await makeSimulatorPool(NETLIST_DIR, 2, local)
  }, 60_000)
  afterAll(() => pool?.close())

  it("answers as the in-process simulator, with more requests than threads queued", async () => {
    const booted = local.boot({ rom: ROM } as never)
    const expected = local.step({ machine: booted.machine, half_cycles: 500 } as never)
    const [first] = await Promise.all([pool.boot({ rom: ROM } as never)])
    expect(first.machine).toEqual(booted.machine)
    const steps = await Promise.all(Array.from({ length: 6 }, () => pool.step({ machine: booted.machine, half_cycles: 500 } as never)))
    for (const s of steps) expect(s.machine).toEqual(expected.machine)
  })

  it("returns engine errors with their status and assembler line", async () => {
    const bad = await pool.boot({ rom: { source: "  LDA #1\n  BOGUS\n", org: 0x0400 } } as never).catch((e) => e)
    expect(bad).toBeInstanceOf(AssembleError)
    expect(bad.line).toBe(2)
    const unknown = await pool.step({ machine: local.boot({ rom: ROM } as never).machine, half_cycles: 2, watch: ["no_such_node"] } as never).catch((e) => e)
    expect(unknown.status).toBe(400)
    expect(unknown.message).toMatch(/no_such_node/)
  })

  it("refuses work once closed", async () => {
    const other = await makeSimulatorPool(NETLIST_DIR, 1, local)
    await other.close()
    await expect(other.step({ machine: local.boot({ rom: ROM } as never).machine, half_cycles: 2 } as never)).rejects.toThrow(/closed/)
  })
})
