import { Args, Flags } from "@oclif/core"
import { SingleBar } from "cli-progress"
import * as fs from "node:fs"
import { AssembleError } from "../assembler/AssembleError.ts"
import type { ChipSimulator } from "../Simulation.ts"
import { MAX_STEP, MAX_TRACED } from "../Domain.ts"
import { encodeMemory } from "../engine/Memory.ts"
import type { Observation } from "../engine/Observe.ts"
import type { StepResult } from "../engine/Simulator.ts"
import { ROOT } from "../../../core/Kernel.ts"
import { PlatformCommand, table } from "../../../core/Command.ts"

const COLUMNS = ["half_cycle", "clk0", "addr", "data", "rw", "sync", "pc", "a", "x", "y", "s", "p", "flags", "ir", "tstates"] as const

/**
 * An address flag's value, 0..$FFFF: `$hhhh`, `0xhhhh`, or bare hex digits (`0400`, `3469`: the
 * 6502 convention); decimal needs a `#` prefix (`#1024`). @throws Error naming the flag.
 */
const addressOf = (name: string, s: string): number => {
  const m = /^(?:\$|0x)?([0-9a-f]{1,4})$/i.exec(s)
  const v = m ? parseInt(m[1]!, 16) : /^#\d+$/.test(s) ? Number(s.slice(1)) : NaN
  if (!Number.isInteger(v) || v < 0 || v > 0xffff) throw new Error(`--${name}: "${s}" is not an address 0..$FFFF ($hhhh, 0xhhhh, hhhh or #decimal)`)
  return v
}

/** What `--json` returns. */
interface RunResult {
  stepped: number
  completed: boolean
  /** `breakpoint` (reached --until-pc), `bound` (--max-half-cycles first), `count` (--half-cycles done), `instruction`. */
  stopped: "breakpoint" | "bound" | "count" | "instruction"
  wall_ms: number
  half_cycles_per_s: number
  observe: Observation
  trace?: Array<Observation>
}

/**
 * `platform chip run`: boots a program (assembly source, or a binary image with `--image`) on the
 * transistor-level engine in-process and runs it: a number of half-cycles, to an opcode fetch at
 * an address, or to the next instruction. Long runs go in steps of MAX_STEP half-cycles through
 * the same `step()` the HTTP API serves, with a progress bar on stderr, and can be saved and
 * resumed as the API's Machine JSON. Exit 0 when the run reached its target, 1 at the bound.
 */
export default class ChipRun extends PlatformCommand {
  static summary = "Boot a 6502 program (source or binary image) on the transistor-level chip and run it; prints a register/bus table."
  static description =
    "Runs in-process on the same engine as POST /api/v1/boot and /api/v1/step. Without --half-cycles or --until-pc it runs to the next " +
    "instruction fetch. Long runs show a progress bar (half-cycles/s, PC, elapsed) on stderr; --save writes the machine (the API's Machine " +
    "JSON) when the run ends or is interrupted, --resume continues one. Exit status: 0 when the target was reached, 1 when --max-half-cycles came first."
  static examples = [
    "<%= config.bin %> chip run prog.s --half-cycles 100 --trace",
    "<%= config.bin %> chip run prog.s --until-pc '$0210' --watch cclk,cp1",
    "<%= config.bin %> chip run --image 6502_functional_test.bin --org 0 --reset-vector 0400 --until-pc 3469 --max-half-cycles 200000000 --save ft.json",
    "<%= config.bin %> chip run --resume ft.json --until-pc 3469 --max-half-cycles 200000000"
  ]
  static args = { file: Args.string({ description: "6502 assembly source (or give --image / --resume)", required: false }) }
  static flags = {
    image: Flags.string({ summary: "Binary image to load at --org instead of assembling a source.", exclusive: ["resume"] }),
    org: Flags.string({ summary: "Load address of --image, or of a source without .org ($hex, 0xhex, hhhh or decimal).", default: "0x0200" }),
    "reset-vector": Flags.string({ summary: "Start address written at $FFFC (default: the source's org; for --image, the image's own vector)." }),
    "half-cycles": Flags.integer({ summary: "Run exactly this many half-cycles.", min: 0, exclusive: ["until-pc"] }),
    "until-pc": Flags.string({ summary: "Run to the opcode fetch at this address.", exclusive: ["half-cycles"] }),
    "max-half-cycles": Flags.integer({ summary: "Bound of --until-pc / instruction runs, in half-cycles.", default: 2000, min: 1, aliases: ["max"] }),
    trace: Flags.boolean({ summary: `Print one row per half-cycle (at most ${MAX_TRACED}).` }),
    watch: Flags.string({ summary: "Comma-separated node names to show (see GET /api/v1/nodes)." }),
    save: Flags.string({ summary: "Write the machine (Machine JSON, as the HTTP API carries it) here when the run ends or is interrupted." }),
    resume: Flags.string({ summary: "Continue the machine saved in this file (Machine JSON) instead of booting." }),
    progress: Flags.boolean({ summary: "Show the progress bar (default: when stderr is a terminal and the run is longer than one step).", allowNo: true }),
    netlist: Flags.string({ summary: "Netlist folder (default: $CHIP_SIM_NETLIST, ./data/netlist, ../shared/chip-sim/netlist)." })
  }

  async run(): Promise<RunResult> {
    const { args, flags } = await this.parse(ChipRun)
    const usage = (message: string): never => this.error(message, { exit: 2 })
    const read = (file: string): Buffer => {
      try {
        return fs.readFileSync(file)
      } catch (e) {
        return usage(`cannot read ${file}: ${(e as Error).message}`)
      }
    }
    const sources = [args.file, flags.image, flags.resume].filter((x) => x !== undefined).length
    if (sources !== 1) usage("give exactly one of FILE (assembly source), --image or --resume")
    let org = 0
    let resetVector: number | undefined
    let untilPc: number | undefined
    try {
      org = addressOf("org", flags.org)
      resetVector = flags["reset-vector"] !== undefined ? addressOf("reset-vector", flags["reset-vector"]) : undefined
      untilPc = flags["until-pc"] !== undefined ? addressOf("until-pc", flags["until-pc"]) : undefined
    } catch (e) {
      usage((e as Error).message)
    }
    if (flags.trace && (flags["half-cycles"] ?? flags["max-half-cycles"]) > MAX_TRACED) {
      usage(`--trace prints at most ${MAX_TRACED} rows: lower --half-cycles / --max-half-cycles`)
    }
    // the engine (WebAssembly, netlist tables) loads only when a run is asked for
    const { hasNetlist, netlistCandidates } = await import("../plugin.ts")
    const { makeChipSimulator } = await import("../Simulation.ts")
    const candidates = [...netlistCandidates(process.cwd(), flags.netlist), ...(flags.netlist ? [] : netlistCandidates(ROOT))]
    const dir = candidates.find(hasNetlist)
    if (!dir) this.error(`visual6502 netlist not found in ${[...new Set(candidates)].join(", ")}; run \`platform chip fetch-netlist\``, { exit: 1 })
    const watch = flags.watch ? flags.watch.split(",").map((s) => s.trim()).filter(Boolean) : []

    let sim: ChipSimulator
    let start: StepResult
    try {
      sim = makeChipSimulator(dir)
      if (flags.resume !== undefined) {
        let machine: unknown
        try {
          machine = JSON.parse(read(flags.resume).toString("utf8"))
        } catch (e) {
          return usage(`${flags.resume}: not JSON: ${(e as Error).message}`)
        }
        // a zero-length step validates the machine and observes it
        start = sim.step({ machine: machine as never, half_cycles: 0, max_half_cycles: 0, watch, trace: false, format: "objects" })
      } else if (flags.image !== undefined) {
        const bytes = read(flags.image)
        if (org + bytes.length > 0x10000) usage(`${flags.image}: ${bytes.length} bytes at $${org.toString(16)} run past $FFFF`)
        const mem = new Uint8Array(65536)
        mem.set(bytes, org)
        start = sim.boot({ memory: encodeMemory(mem), reset_vector: resetVector, watch })
      } else {
        const source = read(args.file!).toString("utf8")
        start = sim.boot({ rom: { source, org }, reset_vector: resetVector, watch })
      }
    } catch (e) {
      if (e instanceof AssembleError) this.error(`${args.file}:${e.message}`, { exit: 1 })
      const err = e as Error & { status?: number }
      if (err.status) this.error(err.message, { exit: 1 })
      throw e
    }

    const byCount = flags["half-cycles"] !== undefined
    const total = byCount ? flags["half-cycles"]! : flags["max-half-cycles"]
    const showProgress = flags.progress ?? (process.stderr.isTTY === true && total > MAX_STEP && !flags.json)
    const bar = showProgress
      ? new SingleBar(
          {
            stream: process.stderr,
            format: " {bar} {percentage}% | {value}/{total} half-cycles | {rate} half-cycles/s | PC ${pc} | {elapsed}",
            barsize: 30,
            hideCursor: true,
            noTTYOutput: true,
            notTTYSchedule: 10_000,
            formatValue: (v, _o, type) => (type === "value" || type === "total" ? Number(v).toLocaleString("en-US") : String(v))
          },
          { format: "", barCompleteChar: "#", barIncompleteChar: "-" }
        )
      : undefined
    const t0 = performance.now()
    const elapsed = () => {
      const s = Math.floor((performance.now() - t0) / 1000)
      return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`
    }
    bar?.start(total, 0, { rate: "-", pc: start.observe.pc, elapsed: "0m00s" })

    let last = start
    let stepped = 0
    let reached = byCount && total === 0
    const trace: Array<Observation> = []
    const save = () => {
      if (flags.save !== undefined) fs.writeFileSync(flags.save, JSON.stringify(last.machine))
    }
    let interrupted = false
    const onSigint = () => {
      interrupted = true
    }
    process.once("SIGINT", onSigint)
    try {
      while (stepped < total && !reached && !interrupted) {
        const n = Math.min(flags.trace ? MAX_TRACED : MAX_STEP, total - stepped)
        const r = byCount
          ? sim.step({ machine: last.machine as never, half_cycles: n, max_half_cycles: n, watch, trace: flags.trace, format: "objects" })
          : sim.step({
              machine: last.machine as never,
              until: untilPc === undefined ? "instruction" : undefined,
              until_pc: untilPc,
              max_half_cycles: n,
              watch,
              trace: flags.trace,
              format: "objects"
            })
        stepped += r.stepped
        last = r
        if (r.trace) trace.push(...r.trace)
        reached = byCount ? stepped >= total : r.completed
        const ms = performance.now() - t0
        bar?.update(stepped, { rate: Math.round((stepped / Math.max(ms, 1)) * 1000).toLocaleString("en-US"), pc: r.observe.pc, elapsed: elapsed() })
        // let a Ctrl-C between steps be seen
        await new Promise((resolve) => setImmediate(resolve))
      }
    } finally {
      process.removeListener("SIGINT", onSigint)
      bar?.stop()
      save()
    }
    const wallMs = Math.round(performance.now() - t0)
    const rate = Math.round((stepped / Math.max(wallMs, 1)) * 1000)
    const stopped: RunResult["stopped"] = byCount ? "count" : reached ? (untilPc !== undefined ? "breakpoint" : "instruction") : "bound"
    const rows = flags.trace ? trace : [start.observe, last.observe]
    this.log(table([...COLUMNS, ...watch], rows.map((o) => [...COLUMNS, ...watch].map((c) => o[c] as string | number))))
    const what = interrupted
      ? "interrupted"
      : stopped === "breakpoint"
        ? `reached the opcode fetch at $${untilPc!.toString(16).padStart(4, "0")}`
        : stopped === "bound"
          ? "bound reached before the target"
          : "done"
    this.log(
      `\nstepped ${stepped.toLocaleString("en-US")} half-cycles (${Math.floor(stepped / 2).toLocaleString("en-US")} cycles) in ` +
        `${(wallMs / 1000).toFixed(1)} s, ${rate.toLocaleString("en-US")} half-cycles/s: ${what}` +
        (flags.save !== undefined ? `; machine saved to ${flags.save}` : "")
    )
    const result: RunResult = {
      stepped,
      completed: reached,
      stopped,
      wall_ms: wallMs,
      half_cycles_per_s: rate,
      observe: last.observe,
      ...(flags.trace ? { trace } : {})
    }
    if (!reached) {
      if (flags.json) this.logJson({ ...result })
      this.exit(1)
    }
    return result
  }
}
