/** Shared helpers for the engine tests: the netlist folder, golden programs and a cached simulator. */
import * as fs from "node:fs"
import * as path from "node:path"
import * as zlib from "node:zlib"
import { makeSimulator, type Simulator } from "../../../../plugins/chip-sim/engine/index.ts"

export const NETLIST_DIR = process.env.CHIP_SIM_NETLIST ?? "/work/shared/chip-sim/netlist"
export const GOLDEN_DIR = process.env.CHIP_SIM_GOLDEN ?? "/work/shared/chip-sim/golden"

export interface GoldenProgram {
  name: string
  org: number
  reset_vector: number
  half_cycles: number
  pin_events: Array<{ after_hc: number; pin: "res" | "irq" | "nmi" | "rdy" | "so"; level: 0 | 1 }>
  image: string
  trace: string
  final_pages: Record<string, string>
}

export const manifest = (): { columns: string; programs: Array<GoldenProgram> } =>
  JSON.parse(fs.readFileSync(path.join(GOLDEN_DIR, "manifest.json"), "utf8"))

export const program = (name: string): GoldenProgram => manifest().programs.find((p) => p.name === name)!

/** The program's image laid into a zero-filled 64 KiB memory at its org. */
export const image = (p: GoldenProgram): Uint8Array => {
  const mem = new Uint8Array(65536)
  mem.set(fs.readFileSync(path.join(GOLDEN_DIR, p.image)), p.org)
  return mem
}

/** Trace rows as CSV lines (header dropped). */
export const goldenRows = (p: GoldenProgram): Array<string> =>
  zlib.gunzipSync(fs.readFileSync(path.join(GOLDEN_DIR, p.trace))).toString("utf8").trim().split("\n").slice(1)

let sim: Simulator | undefined
export const simulator = (): Simulator => (sim ??= makeSimulator(NETLIST_DIR))
export const haveNetlist = fs.existsSync(path.join(NETLIST_DIR, "transdefs.js"))
