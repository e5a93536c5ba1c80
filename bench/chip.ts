/**
 * chip-sim engine benchmark: half-cycles per second on long runs, and the wall time of one
 * maximal `step()` (200,000 half-cycles) including ChipState decode and encode.
 *
 * Programs (golden images, no pin events): `irq` counts in a loop of INC/LDA/AND/BNE/JMP,
 * whose chip states recur every few thousand half-cycles once the counter wraps; `arith` ends
 * idling in `JMP *`. Runs are measured twice: as the service runs (memo on: a state that
 * recurs is carried forward by replaying a recorded settle or 32-half-cycle span), and with
 * the memo off (every half-cycle settled, the switch-level throughput proper).
 * `CHIP_BENCH_HALF_CYCLES` sets the long runs' length (default 2,000,000; the memo-off run is a
 * quarter of it); the netlist folder comes from `CHIP_SIM_NETLIST` (default
 * /work/shared/chip-sim/netlist). Run: `node --import tsx bench/chip.ts` or `npm run bench -- chip`.
 *
 * Then a real program that does not idle: the first `CHIP_BENCH_FUNCTIONAL_HALF_CYCLES` (default
 * 20,000,000; 0 skips it) half-cycles of Klaus Dormann's functional test (bench/functional.ts),
 * memo on and off, beside perfect6502's ~41,000 half-cycles/s on it.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { makeSimulator, MAX_STEP, type MachineJson, type Simulator } from "../plugins/chip-sim/engine/index.ts"
import { advance, bootFunctional, functionalTestImage } from "./functional.ts"
import { assemble } from "../plugins/chip-sim/assembler/Assembler.ts"
import { EXAMPLES } from "../plugins/chip-sim/console/Examples.ts"

/**
 * Frames per second of the moving-sprite example cartridge at transistor level: `frames` frames
 * of the console protocol (input held at 0x05: the ball moves every frame) on `sim`.
 */
const spriteFrames = (sim: Simulator, frames: number): number => {
  const req = EXAMPLES.find((e) => e.name === "sprite")!.request
  const rom = assemble(req.rom.source)
  const mem = new Uint8Array(65536)
  mem.set(rom.image, rom.org)
  const boot = sim.boot({ memory: mem, resetVector: rom.org })
  const t = performance.now()
  const r = sim.frames({ machine: boot.machine as MachineJson, frames, tick: 0x0d, input: 0x02, inputByte: 0x05, maxHalfCycles: MAX_STEP, screen: { addr: 0x0500, length: 128 } })
  if (r.frames.filter((f) => f.completed).length !== frames) throw new Error("sprite cartridge: a frame did not complete")
  return Math.round((frames / (performance.now() - t)) * 1000)
}

/** perfect6502 (C) on Klaus Dormann's functional test, measured on this machine kind (issue 21). */
const PERFECT6502_FUNCTIONAL_HALF_CYCLES_PER_S = 41_000

/**
 * The first `total` half-cycles of the functional test from reset, in maximal steps as the
 * service runs them: [wall half-cycles/s, CPU half-cycles/s, PC at the end].
 */
const functionalRun = (sim: Simulator, image: string, total: number): [number, number, string] => {
  const start = bootFunctional(sim, image)
  const t = performance.now()
  const cpu0 = process.cpuUsage()
  const end = advance(sim, start, total)
  const ms = performance.now() - t
  const cpu = process.cpuUsage(cpu0)
  return [Math.round((total / ms) * 1000), Math.round((total / ((cpu.user + cpu.system) / 1000)) * 1000), end.observe.pc]
}

const NETLIST = process.env.CHIP_SIM_NETLIST ?? "/work/shared/chip-sim/netlist"
const GOLDEN = process.env.CHIP_SIM_GOLDEN ?? "/work/shared/chip-sim/golden"

const bootProgram = (sim: Simulator, name: string): MachineJson => {
  const mem = new Uint8Array(65536)
  mem.set(fs.readFileSync(path.join(GOLDEN, `${name}.bin`)), 0x200)
  return sim.boot({ memory: mem, resetVector: 0x200 }).machine
}

/** Runs `total` half-cycles in maximal steps; returns [wall half-cycles/s, CPU half-cycles/s, machine]. */
const longRun = (sim: Simulator, machine: MachineJson, total: number): [number, number, MachineJson] => {
  const t = performance.now()
  const cpu0 = process.cpuUsage()
  for (let done = 0; done < total; done += MAX_STEP) {
    machine = sim.step({ machine, halfCycles: Math.min(MAX_STEP, total - done) }).machine
  }
  const ms = performance.now() - t
  const cpu = process.cpuUsage(cpu0)
  return [Math.round((total / ms) * 1000), Math.round((total / ((cpu.user + cpu.system) / 1000)) * 1000), machine]
}

const timeStep = (sim: Simulator, machine: MachineJson): number => {
  const t = performance.now()
  sim.step({ machine, halfCycles: MAX_STEP })
  return Math.round(performance.now() - t)
}

/**
 * Runs the benchmark; prints and returns figures: `half_cycles_per_s` and
 * `half_cycles_per_cpu_s` (irq loop, memo on), `nomemo_half_cycles_per_s` /
 * `nomemo_half_cycles_per_cpu_s` (memo off), `idle_loop_half_cycles_per_s` (arith's `JMP *`),
 * `step_200k_ms` (memo warm), `step_200k_cold_ms` (fresh simulator), `step_200k_nomemo_ms`,
 * `load_ms`, `boot_ms`, `long_run_half_cycles`. CPU figures count this process's CPU time,
 * the ones to compare when the machine is shared.
 */
export async function benchChip(): Promise<Record<string, number>> {
  const total = Number(process.env.CHIP_BENCH_HALF_CYCLES ?? 2_000_000)
  let t = performance.now()
  const sim = makeSimulator(NETLIST)
  const loadMs = Math.round(performance.now() - t)
  t = performance.now()
  const irq = bootProgram(sim, "irq")
  const bootMs = Math.round(performance.now() - t)

  // 200,000 half-cycles on a simulator that has never seen these states.
  const stepCold = timeStep(makeSimulator(NETLIST), irq)

  const [rate, cpuRate, after] = longRun(sim, irq, total)
  const stepWarm = timeStep(sim, after)
  const [idleRate] = longRun(sim, bootProgram(sim, "arith"), total)

  const plain = makeSimulator(NETLIST, { memo: false })
  const [plainRate, plainCpuRate, plainAfter] = longRun(plain, irq, Math.max(MAX_STEP, Math.round(total / 4)))
  const stepPlain = timeStep(plain, plainAfter)

  const spriteOn = spriteFrames(makeSimulator(NETLIST), 60)
  const spriteOff = spriteFrames(makeSimulator(NETLIST, { memo: false }), 60)

  // last: its long runs leave a large heap behind that would slow the figures above
  const functionalTotal = Number(process.env.CHIP_BENCH_FUNCTIONAL_HALF_CYCLES ?? 20_000_000)
  const image = functionalTestImage()
  let functional: Record<string, number> = {}
  if (functionalTotal > 0 && image !== undefined) {
    const [onRate, onCpu] = functionalRun(makeSimulator(NETLIST), image, functionalTotal)
    const [offRate, offCpu] = functionalRun(makeSimulator(NETLIST, { memo: false }), image, functionalTotal)
    functional = {
      functional_half_cycles: functionalTotal,
      functional_half_cycles_per_s: onRate,
      functional_half_cycles_per_cpu_s: onCpu,
      functional_nomemo_half_cycles_per_s: offRate,
      functional_nomemo_half_cycles_per_cpu_s: offCpu,
      functional_perfect6502_half_cycles_per_s: PERFECT6502_FUNCTIONAL_HALF_CYCLES_PER_S
    }
  }

  const figures = {
    ...functional,
    sprite_cartridge_frames_per_s: spriteOn,
    sprite_cartridge_nomemo_frames_per_s: spriteOff,
    load_ms: loadMs,
    boot_ms: bootMs,
    long_run_half_cycles: total,
    half_cycles_per_s: rate,
    half_cycles_per_cpu_s: cpuRate,
    nomemo_half_cycles_per_s: plainRate,
    nomemo_half_cycles_per_cpu_s: plainCpuRate,
    idle_loop_half_cycles_per_s: idleRate,
    step_200k_ms: stepWarm,
    step_200k_cold_ms: stepCold,
    step_200k_nomemo_ms: stepPlain
  }
  const n = (v: number) => v.toLocaleString("en-US")
  console.log(
    `chip: irq loop ${n(rate)} half-cycles/s (${n(cpuRate)} per CPU-second) over ${n(total)}; ` +
      `memo off ${n(plainRate)} (${n(plainCpuRate)} per CPU-second); idle JMP * loop ${n(idleRate)}; ` +
      `one 200,000-half-cycle step() incl. decode/encode: ${n(stepWarm)} ms warm, ${n(stepCold)} ms cold, ` +
      `${n(stepPlain)} ms memo off; netlist load ${loadMs} ms, boot ${bootMs} ms`
  )
  console.log(`chip: sprite cartridge ${n(spriteOn)} frames/s (memo off ${n(spriteOff)}), 60 frames of the console protocol`)
  if (functional.functional_half_cycles !== undefined) {
    const f = functional
    console.log(
      `chip: functional test, first ${n(f.functional_half_cycles!)} half-cycles: memo on ${n(f.functional_half_cycles_per_s!)} half-cycles/s ` +
        `(${n(f.functional_half_cycles_per_cpu_s!)} per CPU-second), memo off ${n(f.functional_nomemo_half_cycles_per_s!)} ` +
        `(${n(f.functional_nomemo_half_cycles_per_cpu_s!)} per CPU-second); perfect6502 ~${n(PERFECT6502_FUNCTIONAL_HALF_CYCLES_PER_S)}`
    )
  }
  return figures
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await benchChip()
}
