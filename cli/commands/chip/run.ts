import { Args, Flags } from "@oclif/core"
import * as fs from "node:fs"
import { AssembleError } from "../../../plugins/chip-sim/assembler/AssembleError.ts"
import { makeChipSimulator } from "../../../plugins/chip-sim/Simulation.ts"
import { hasNetlist, netlistCandidates } from "../../../plugins/chip-sim/plugin.ts"
import type { Observation } from "../../../plugins/chip-sim/engine/Observe.ts"
import { ROOT } from "../../../core/Kernel.ts"
import { PlatformCommand, table } from "../../Base.ts"

const COLUMNS = ["half_cycle", "clk0", "addr", "data", "rw", "sync", "pc", "a", "x", "y", "s", "p", "flags", "ir", "tstates"] as const

const parseAddr = (s: string): number => Number(s.replace(/^\$/, "0x"))

/** `platform chip run FILE`: assembles, boots and steps a program on the transistor-level engine in-process. */
export default class ChipRun extends PlatformCommand {
  static summary = "Assemble a 6502 program, boot it on the transistor-level chip and step it; prints a register/bus table."
  static description = "Runs in-process on the same engine as POST /api/v1/boot and /api/v1/step. Without --half-cycles or --until-pc it runs to the next instruction fetch. With --trace every half-cycle is a row."
  static examples = [
    "<%= config.bin %> chip run prog.s --half-cycles 100 --trace",
    "<%= config.bin %> chip run prog.s --until-pc '$0210' --watch cclk,cp1",
    "<%= config.bin %> chip run prog.s --half-cycles 2000 --json"
  ]
  static args = { file: Args.string({ description: "6502 assembly source", required: true }) }
  static flags = {
    "half-cycles": Flags.integer({ summary: "Run exactly this many half-cycles (1 to 200000).", min: 1, max: 200_000, exclusive: ["until-pc"] }),
    "until-pc": Flags.string({ summary: "Run to the opcode fetch at this address ($hex, 0x.. or decimal).", exclusive: ["half-cycles"] }),
    max: Flags.integer({ summary: "Bound for --until-pc / instruction runs, in half-cycles.", default: 2000, min: 1, max: 200_000 }),
    trace: Flags.boolean({ summary: "Print one row per half-cycle (at most 10000)." }),
    watch: Flags.string({ summary: "Comma-separated node names to show (see GET /api/v1/nodes)." }),
    org: Flags.string({ summary: "Load address when the source has no .org.", default: "0x0200" }),
    netlist: Flags.string({ summary: "Netlist folder (default: $CHIP_SIM_NETLIST, ./data/netlist, ../shared/chip-sim/netlist)." })
  }

  async run(): Promise<{ stepped: number; completed: boolean; observe: Observation; trace?: Array<Observation> }> {
    const { args, flags } = await this.parse(ChipRun)
    const source = (() => {
      try {
        return fs.readFileSync(args.file, "utf8")
      } catch (e) {
        this.error(`cannot read ${args.file}: ${(e as Error).message}`, { exit: 2 })
      }
    })()
    const candidates = [...netlistCandidates(process.cwd(), flags.netlist), ...(flags.netlist ? [] : netlistCandidates(ROOT))]
    const dir = candidates.find(hasNetlist)
    if (!dir) this.error(`visual6502 netlist not found in ${[...new Set(candidates)].join(", ")}; run \`platform chip fetch-netlist\``, { exit: 1 })
    const watch = flags.watch ? flags.watch.split(",").map((s) => s.trim()).filter(Boolean) : []
    const untilPc = flags["until-pc"] !== undefined ? parseAddr(flags["until-pc"]) : undefined
    if (untilPc !== undefined && !(Number.isInteger(untilPc) && untilPc >= 0 && untilPc <= 0xffff)) this.error(`--until-pc must be an address 0 to $FFFF`, { exit: 2 })
    try {
      const sim = makeChipSimulator(dir)
      const boot = sim.boot({ rom: { source, org: parseAddr(flags.org) }, watch })
      const result = sim.step({
        machine: boot.machine as never,
        half_cycles: flags["half-cycles"],
        until: flags["half-cycles"] === undefined ? "instruction" : undefined,
        until_pc: untilPc,
        max_half_cycles: flags.max,
        watch,
        trace: flags.trace,
        format: "objects"
      })
      const rows = (flags.trace ? result.trace ?? [] : [boot.observe, result.observe]) as Array<Observation>
      this.log(table([...COLUMNS, ...watch], rows.map((o) => [...COLUMNS, ...watch].map((c) => o[c] as string | number))))
      this.log(`\nstepped ${result.stepped} half-cycles${result.completed ? "" : " (bound reached before the target)"}`)
      return { stepped: result.stepped, completed: result.completed, observe: result.observe, ...(flags.trace ? { trace: result.trace } : {}) }
    } catch (e) {
      if (e instanceof AssembleError) this.error(`${args.file}:${e.message}`, { exit: 1 })
      const err = e as Error & { status?: number }
      if (err.status) this.error(err.message, { exit: 1 })
      throw e
    }
  }
}
