import { describe, expect, it } from "vitest"
import { differential, functionalTestImage } from "../../../../bench/functional.ts"
import { makeSimulator } from "../../../../plugins/chip-sim/engine/index.ts"
import { haveNetlist, NETLIST_DIR } from "./golden.ts"

const image = functionalTestImage()
const HALF_CYCLES = 2_000_000
const EVERY = 100_000

// The memo is a cache: on a long real program (Klaus Dormann's functional test, whose loops
// change their data every turn) the service's memo and a memo that never switches itself off
// must give exactly what settling every half-cycle gives, at every checkpoint. The 20,000,000
// half-cycle run of the same comparison is `node --import tsx scripts/chip-memo-diff.ts`.
describe.skipIf(!haveNetlist || image === undefined)("memo against no memo on the 6502 functional test", () => {
  it(`agrees over ${HALF_CYCLES.toLocaleString("en-US")} half-cycles at every ${EVERY.toLocaleString("en-US")}: registers, buses, all 64 KiB, every node and transistor`, async () => {
    const reference = makeSimulator(NETLIST_DIR, { memo: false })
    const service = makeSimulator(NETLIST_DIR)
    const always = makeSimulator(NETLIST_DIR, { memo: "always" })
    const checkpoints = await differential(image!, reference, [service, always], HALF_CYCLES, EVERY)
    const first = checkpoints.find((c) => !c.equal)
    expect(first, first && JSON.stringify(first, null, 1)).toBeUndefined()
    expect(checkpoints).toHaveLength(HALF_CYCLES / EVERY)
    expect(checkpoints.at(-1)!.reference.halfCycle).toBe(HALF_CYCLES)
    // the run is past the boot and into the test's loops, and the memo really replayed
    expect(checkpoints.map((c) => c.reference.pc)).not.toContain("0400")
    expect(reference.memoStats().hits).toBe(0)
    expect(always.memoStats().hits).toBeGreaterThan(100_000)
  }, 900_000)
})
