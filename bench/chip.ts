/**
 * chip-sim engine benchmark: half-cycles per second on a long run, and the wall time of one
 * maximal `step()` (200,000 half-cycles) including ChipState decode and encode.
 *
 * Programs: the golden `irq` program without its pin events (a loop of INC/LDA/AND/BNE/JMP
 * whose chip states do not recur, so every half-cycle is simulated), and the golden `arith`
 * program, which ends idling in `JMP *` (recurring states, replayed by the half-cycle memo).
 * `CHIP_BENCH_HALF_CYCLES` sets the long run's length (default 2,000,000); the netlist folder
 * comes from `CHIP_SIM_NETLIST` (default /work/shared/chip-sim/netlist).
 * Run: `node --import tsx bench/chip.ts` or `npm run bench -- chip`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { makeSimulator, MAX_STEP } from "../plugins/chip-sim/engine/index.ts"

const NETLIST = process.env.CHIP_SIM_NETLIST ?? "/work/shared/chip-sim/netlist"
const GOLDEN = process.env.CHIP_SIM_GOLDEN ?? "/work/shared/chip-sim/golden"

/**
 * Runs the benchmark; prints and returns `{load_ms, boot_ms, long_run_half_cycles,
 * half_cycles_per_s (wall), half_cycles_per_cpu_s, step_200k_ms, idle_loop_half_cycles_per_s}`.
 */
export async function benchChip(): Promise<Record<string, number>> {
  const total = Number(process.env.CHIP_BENCH_HALF_CYCLES ?? 2_000_000)
  let t = performance.now()
  const sim = makeSimulator(NETLIST)
  const loadMs = performance.now() - t
  const mem = new Uint8Array(65536)
  mem.set(fs.readFileSync(path.join(GOLDEN, "irq.bin")), 0x200)
  t = performance.now()
  const boot = sim.boot({ memory: mem, resetVector: 0x200 })
  const bootMs = performance.now() - t

  // Warm-up, so the one-step figure measures steady code.
  let machine = sim.step({ machine: boot.machine, halfCycles: 20_000 }).machine

  t = performance.now()
  const cpu0 = process.cpuUsage()
  let done = 0
  while (done < total) {
    const n = Math.min(MAX_STEP, total - done)
    machine = sim.step({ machine, halfCycles: n }).machine
    done += n
  }
  const longMs = performance.now() - t
  const cpu = process.cpuUsage(cpu0)
  const longCpuMs = (cpu.user + cpu.system) / 1000

  t = performance.now()
  sim.step({ machine, halfCycles: MAX_STEP })
  const stepMs = performance.now() - t

  const idle = new Uint8Array(65536)
  idle.set(fs.readFileSync(path.join(GOLDEN, "arith.bin")), 0x200)
  let idleMachine = sim.boot({ memory: idle, resetVector: 0x200 }).machine
  idleMachine = sim.step({ machine: idleMachine, halfCycles: 20_000 }).machine
  t = performance.now()
  for (let done = 0; done < total; done += MAX_STEP) {
    idleMachine = sim.step({ machine: idleMachine, halfCycles: Math.min(MAX_STEP, total - done) }).machine
  }
  const idleMs = performance.now() - t

  const figures = {
    load_ms: Math.round(loadMs),
    boot_ms: Math.round(bootMs),
    long_run_half_cycles: total,
    half_cycles_per_s: Math.round((total / longMs) * 1000),
    // CPU time of this process: the figure to compare when the machine is shared.
    half_cycles_per_cpu_s: Math.round((total / longCpuMs) * 1000),
    step_200k_ms: Math.round(stepMs),
    idle_loop_half_cycles_per_s: Math.round((total / idleMs) * 1000)
  }
  console.log(
    `chip: ${figures.half_cycles_per_s.toLocaleString("en-US")} half-cycles/s wall ` +
      `(${figures.half_cycles_per_cpu_s.toLocaleString("en-US")} per CPU-second) over ${total.toLocaleString("en-US")}; ` +
      `one 200,000-half-cycle step() incl. decode/encode ${figures.step_200k_ms} ms; ` +
      `idle loop (memo replay) ${figures.idle_loop_half_cycles_per_s.toLocaleString("en-US")} half-cycles/s; ` +
      `netlist load ${figures.load_ms} ms, boot ${figures.boot_ms} ms`
  )
  return figures
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await benchChip()
}
