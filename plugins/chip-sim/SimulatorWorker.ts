/**
 * Worker-thread side of the simulator pool: loads the netlist once, then answers
 * `{id, op: "boot" | "step" | "frames", req}` messages with `{id, ok: true, result}` or
 * `{id, ok: false, error: {name, message, status?, line?}}`. See `SimulatorPool.ts`.
 */
import { parentPort, workerData } from "node:worker_threads"
import { makeChipSimulator } from "./Simulation.ts"

const sim = makeChipSimulator((workerData as { netlistDir: string }).netlistDir)

parentPort!.on("message", (msg: { id: number; op: "boot" | "step" | "frames"; req: never }) => {
  try {
    const result = msg.op === "boot" ? sim.boot(msg.req) : msg.op === "frames" ? sim.frames(msg.req) : sim.step(msg.req)
    parentPort!.postMessage({ id: msg.id, ok: true, result })
  } catch (e) {
    const err = e as Error & { status?: number; line?: number }
    parentPort!.postMessage({
      id: msg.id,
      ok: false,
      error: { name: err.name, message: err.message, status: err.status, line: err.line, tag: (err as { _tag?: string })._tag }
    })
  }
})
parentPort!.postMessage({ ready: true })
