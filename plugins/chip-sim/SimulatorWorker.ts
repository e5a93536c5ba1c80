/**
 * Worker-thread side of the simulator pool (a piscina task handler): loads the netlist once when
 * the thread starts, then answers `{op: "boot" | "step" | "frames" | "ready", req}` tasks with
 * `{ok: true, result}` or `{ok: false, error: {name, message, status?, line?, tag?}}`: errors
 * travel as data because a structured clone keeps neither an error's class nor its status.
 * See `SimulatorPool.ts`.
 */
import { workerData } from "node:worker_threads"
import { makeChipSimulator } from "./Simulation.ts"

const sim = makeChipSimulator((workerData as { netlistDir: string }).netlistDir)

/** One task: the op on this thread's simulator; `ready` only confirms the netlist is loaded. */
export default function handle(task: { op: "boot" | "step" | "frames" | "ready"; req: never }) {
  try {
    const result = task.op === "ready" ? null : task.op === "boot" ? sim.boot(task.req) : task.op === "frames" ? sim.frames(task.req) : sim.step(task.req)
    return { ok: true, result }
  } catch (e) {
    const err = e as Error & { status?: number; line?: number; _tag?: string }
    return { ok: false, error: { name: err.name, message: err.message, status: err.status, line: err.line, tag: err._tag } }
  }
}
