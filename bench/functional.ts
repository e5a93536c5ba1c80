/**
 * Klaus Dormann's 6502 functional test on the transistor-level engine: boot it as the chip-sim
 * service would, and run it to a bound or to its success trap in maximal `step()` requests,
 * optionally with a second simulator (memo off) compared at checkpoints.
 *
 * The image (GPL-3.0, github.com/Klaus2m5/6502_functional_tests) is read from
 * `CHIP_SIM_FUNCTIONAL_TEST` or `../shared/chip-sim/programs/6502_functional_test.bin`, never
 * committed: a 64 KiB image loaded at $0000, started at $0400 (put in the reset vector); it
 * loops on itself at the address of a failed test and at $3469 when every test passed
 * (96,247,431 cycles, about 192.5 million half-cycles, from reset).
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { decodeMemory, MAX_STEP, type MachineJson, type Simulator, type StepResult } from "../plugins/chip-sim/engine/index.ts"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

/** Path of the functional test image, or undefined when it is not there. */
export const functionalTestImage = (): string | undefined => {
  const candidates = [
    process.env.CHIP_SIM_FUNCTIONAL_TEST,
    path.join(ROOT, "..", "shared", "chip-sim", "programs", "6502_functional_test.bin"),
    path.join(ROOT, "data", "programs", "6502_functional_test.bin")
  ]
  return candidates.find((p): p is string => p !== undefined && fs.existsSync(p))
}

/** Address of the success trap (`JMP *`), and the reset vector the test starts from. */
export const SUCCESS_PC = 0x3469
export const START_PC = 0x0400

/** Boots the functional test (image at $0000, reset vector $0400) on `sim`. */
export const bootFunctional = (sim: Simulator, image: string): StepResult => {
  const bytes = fs.readFileSync(image)
  const mem = new Uint8Array(65536)
  mem.set(bytes.subarray(0, 65536), 0)
  return sim.boot({ memory: mem, resetVector: START_PC })
}

/** A checkpoint's comparable summary: registers and buses, SHA-256 of all 64 KiB, the state blobs' digest. */
export interface Checkpoint {
  readonly halfCycle: number
  /** Hex strings as the Observation gives them. */
  readonly pc: string
  readonly a: string
  readonly x: string
  readonly y: string
  readonly s: string
  readonly p: string
  readonly ab: string
  readonly db: string
  readonly memorySha256: string
  readonly stateSha256: string
}

/** Summarises a step result (see Checkpoint). */
export const checkpoint = (r: StepResult): Checkpoint => {
  const o = r.observe
  const st = r.machine.state
  const mem = decodeMemory(r.machine.memory as MachineJson["memory"])
  return {
    halfCycle: st.half_cycle,
    pc: o.pc,
    a: o.a,
    x: o.x,
    y: o.y,
    s: o.s,
    p: o.p,
    ab: o.addr,
    db: o.data,
    memorySha256: createHash("sha256").update(mem).digest("hex"),
    stateSha256: createHash("sha256").update(`${st.value}|${st.pullup}|${st.pulldown}|${st.trans_on}`).digest("hex")
  }
}

/**
 * Steps `machine` by `halfCycles` in requests of at most MAX_STEP (stopping early at `untilPc`
 * when given); returns the last result.
 */
export const advance = (sim: Simulator, start: StepResult, halfCycles: number, untilPc?: number): StepResult => {
  let r = start
  let done = 0
  while (done < halfCycles) {
    const n = Math.min(MAX_STEP, halfCycles - done)
    r = untilPc === undefined
      ? sim.step({ machine: r.machine as MachineJson, halfCycles: n })
      : sim.step({ machine: r.machine as MachineJson, untilPc, maxHalfCycles: n })
    done += r.stepped
    if (untilPc !== undefined && r.completed) break
  }
  return r
}

/** One checkpoint of a differential run: the memo-off reference and each compared simulator's summary. */
export interface DiffCheckpoint {
  readonly reference: Checkpoint
  readonly others: ReadonlyArray<Checkpoint>
  /** Whether every other summary equals the reference, field for field. */
  readonly equal: boolean
}

/**
 * Runs the functional test on `reference` (memo off) and each of `others` side by side for
 * `total` half-cycles, comparing at every `every` half-cycles (registers, buses, SHA-256 of all
 * 64 KiB and of the state blobs); calls `onCheckpoint` with each comparison and stops at the
 * first difference. Yields to the event loop between checkpoints (a long run keeps its process
 * responsive). Resolves to the checkpoints.
 */
export const differential = async (
  image: string,
  reference: Simulator,
  others: ReadonlyArray<Simulator>,
  total: number,
  every: number,
  onCheckpoint: (c: DiffCheckpoint) => void = () => {}
): Promise<Array<DiffCheckpoint>> => {
  let ref = bootFunctional(reference, image)
  let cmp = others.map((sim) => bootFunctional(sim, image))
  const out: Array<DiffCheckpoint> = []
  for (let done = 0; done < total; ) {
    const n = Math.min(every, total - done)
    ref = advance(reference, ref, n)
    cmp = cmp.map((r, i) => advance(others[i]!, r, n))
    done += n
    const summary = checkpoint(ref)
    const compared = cmp.map(checkpoint)
    const equal = compared.every((o) => JSON.stringify(o) === JSON.stringify(summary))
    const c = { reference: summary, others: compared, equal }
    out.push(c)
    onCheckpoint(c)
    if (!equal) break
    await new Promise((resolve) => setImmediate(resolve))
  }
  return out
}
