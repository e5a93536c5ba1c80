/**
 * Study for issue 21 (is the settle kernel's speed limited by its compilation?): records every
 * kernel settle of the functional test's first N half-cycles, memo off, so that
 * `settle-native.c` can replay the same settles compiled natively and be timed against the
 * WebAssembly kernel.
 *
 * Usage: `node --import tsx scripts/study/settle-trace.ts [HALF_CYCLES=200000] [OUT=/tmp/settle-trace.bin]`,
 * then `gcc -O3 -march=native -o /tmp/settle-native scripts/study/settle-native.c &&
 * /tmp/settle-native /tmp/settle-trace.bin`.
 *
 * Trace (little-endian int32 words): node count, vss, vcc, the lengths of nnStart, nnOther,
 * effStart, effIdx (= effAmt), depStart, dep; those tables (ChipTables); the node levels and
 * node words before the first settle; then per settle: the list length and list it settles
 * from, the (index, value) changes made to levels (index < nodeCount) and node words (index -
 * nodeCount) since the previous settle ended (pins set by the simulator), and an FNV-1a hash of
 * the levels after it; -1 at the end. It also prints the kernel's own time per settle (the
 * settles alone, timed with performance.now), over a second, untraced run.
 */
import * as fs from "node:fs"
import { bootFunctional, functionalTestImage } from "../../bench/functional.ts"
import { ChipSettle } from "../../plugins/chip-sim/engine/ChipSettle.ts"
import { makeSimulator, MAX_STEP } from "../../plugins/chip-sim/engine/index.ts"

const total = Number(process.argv[2] ?? 200_000)
const out = process.argv[3] ?? "/tmp/settle-trace.bin"
const netlist = process.env.CHIP_SIM_NETLIST ?? new URL("../../../shared/chip-sim/netlist", import.meta.url).pathname
const image = functionalTestImage()
if (image === undefined) throw new Error("functional test image not found (CHIP_SIM_FUNCTIONAL_TEST)")

interface Settling {
  readonly tables: ChipSettle["tables"]
  readonly value: Uint8Array
  readonly ns: Int32Array
  readonly listA: Int32Array
  readonly consistent: boolean
}
const proto = ChipSettle.prototype as unknown as { settle: (this: Settling, count: number) => void }
const kernelSettle = proto.settle

const run = (): void => {
  const sim = makeSimulator(netlist, { memo: false })
  let machine = bootFunctional(sim, image).machine
  for (let done = 0; done < total; done += MAX_STEP) {
    machine = sim.step({ machine, halfCycles: Math.min(MAX_STEP, total - done) }).machine
  }
}

// Traced run.
const words: Array<number> = []
let levelsBefore: Uint8Array | undefined
let wordsBefore: Int32Array | undefined
let settles = 0
proto.settle = function (count) {
  if (!this.consistent) throw new Error("the kernel settles consistent states only")
  const { ns, value } = this
  const nn = value.length
  if (levelsBefore === undefined) {
    const t = this.tables
    const tables = [t.nnStart, t.nnOther, t.effStart, t.effIdx, t.effAmt, t.depStart, t.dep]
    words.push(nn, t.vss, t.vcc, t.nnStart.length, t.nnOther.length, t.effStart.length, t.effIdx.length, t.depStart.length, t.dep.length)
    for (const a of tables) for (const x of a) words.push(x)
    for (const x of value) words.push(x)
    for (const x of ns) words.push(x)
    levelsBefore = Uint8Array.from(value)
    wordsBefore = Int32Array.from(ns)
  }
  words.push(count)
  for (let i = 0; i < count; i++) words.push(this.listA[i]!)
  const changesAt = words.length
  words.push(0)
  let changes = 0
  for (let i = 0; i < nn; i++) if (value[i] !== levelsBefore[i]) (words.push(i, value[i]!), changes++)
  for (let i = 0; i < ns.length; i++) if (ns[i] !== wordsBefore![i]) (words.push(nn + i, ns[i]!), changes++)
  words[changesAt] = changes
  kernelSettle.call(this, count)
  let h = 0x811c9dc5 | 0
  for (let i = 0; i < nn; i++) h = Math.imul(h ^ value[i]!, 0x01000193)
  words.push(h)
  levelsBefore.set(value)
  wordsBefore!.set(ns)
  settles++
}
run()
words.push(-1)
fs.writeFileSync(out, Buffer.from(Int32Array.from(words).buffer))
console.log(`${settles} settles over ${total} half-cycles traced to ${out} (${words.length * 4} bytes)`)

// Timed run: the kernel's settles alone.
let ms = 0
proto.settle = function (count) {
  const t = performance.now()
  kernelSettle.call(this, count)
  ms += performance.now() - t
}
for (let rep = 0; rep < 3; rep++) {
  ms = 0
  run()
  console.log(`WebAssembly kernel: ${(ms / 1000).toFixed(3)} s in settles (${((ms * 1000) / settles).toFixed(2)} us/settle)`)
}
