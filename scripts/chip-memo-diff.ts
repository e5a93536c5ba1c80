/**
 * Differential run of the chip-sim memo on Klaus Dormann's 6502 functional test: settling every
 * half-cycle (memo off, the reference) against the service's memo and a memo that never
 * switches itself off, side by side, compared at every checkpoint (registers, buses, SHA-256 of
 * all 64 KiB and of the state blobs: every node level, pull and transistor). Exits 1 at the
 * first difference.
 *
 * Usage: node --import tsx scripts/chip-memo-diff.ts [HALF_CYCLES=20000000] [EVERY=1000000]
 * The image is read from CHIP_SIM_FUNCTIONAL_TEST or ../shared/chip-sim/programs (never committed).
 */
import { differential, functionalTestImage } from "../bench/functional.ts"
import { makeSimulator } from "../plugins/chip-sim/engine/index.ts"

const total = Number(process.argv[2] ?? 20_000_000)
const every = Number(process.argv[3] ?? 1_000_000)
const netlist = process.env.CHIP_SIM_NETLIST ?? new URL("../../shared/chip-sim/netlist", import.meta.url).pathname
const image = functionalTestImage()
if (image === undefined) {
  console.error("6502_functional_test.bin not found (CHIP_SIM_FUNCTIONAL_TEST or ../shared/chip-sim/programs)")
  process.exit(2)
}
const reference = makeSimulator(netlist, { memo: false })
const service = makeSimulator(netlist)
const always = makeSimulator(netlist, { memo: "always" })
const t0 = performance.now()
console.log(`functional test, ${total.toLocaleString("en-US")} half-cycles; memo off vs service memo vs memo always on; checkpoint every ${every.toLocaleString("en-US")}`)
console.log("half_cycle   pc    a  x  y  s  p   ab   db memory_sha256(12) state_sha256(12) result  elapsed")
const checkpoints = await differential(image, reference, [service, always], total, every, (c) => {
  const r = c.reference
  console.log(
    `${String(r.halfCycle).padStart(10)}  ${r.pc} ${r.a} ${r.x} ${r.y} ${r.s} ${r.p} ${r.ab} ${r.db} ${r.memorySha256.slice(0, 12)}      ` +
      `${r.stateSha256.slice(0, 12)}     ${c.equal ? "equal " : "DIFFER"}  ${((performance.now() - t0) / 1000).toFixed(0)} s`
  )
  if (!c.equal) console.log(JSON.stringify(c, null, 1))
})
const ok = checkpoints.every((c) => c.equal) && checkpoints.at(-1)?.reference.halfCycle === total
const s = (x: { hits: number; misses: number; spanHalfCycles: number }) =>
  `${x.hits.toLocaleString("en-US")} settles replayed, ${x.misses.toLocaleString("en-US")} recorded, ${x.spanHalfCycles.toLocaleString("en-US")} half-cycles in span replays`
console.log(`service memo: ${s(service.memoStats())}`)
console.log(`memo always on: ${s(always.memoStats())}`)
console.log(ok ? `all ${checkpoints.length} checkpoints equal` : "DIFFERENCE found")
process.exit(ok ? 0 : 1)
