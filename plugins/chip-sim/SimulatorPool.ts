/**
 * Runs boot/step on worker threads, so a long run (a 200,000-half-cycle step takes up to about a
 * second) never blocks the event loop that every listener of the platform shares.
 *
 * The threads are a `piscina` pool of fixed size (the field's worker pool for Node: FIFO task
 * queue, a crashed thread replaced). Each thread loads the netlist once and keeps its own
 * simulator (and its memo). Errors come back as data with their name, message, HTTP status and
 * assembler line, and are rebuilt as `AssembleError` or a status-carrying `Error`. `close()`
 * ends the threads. With `size: 0` the pool runs requests in-process.
 */
import * as os from "node:os"
import { Piscina } from "piscina"
import { AssembleError } from "./assembler/AssembleError.ts"
import type { BootRequest, StepRequest } from "./Domain.ts"
import type { FramesRequest, FramesResult, StepResult } from "./engine/index.ts"
import type { ChipSimulator } from "./Simulation.ts"

interface WorkerError {
  readonly name: string
  readonly message: string
  readonly status?: number
  readonly line?: number
  readonly tag?: string
}

const rebuild = (e: WorkerError): Error => {
  if (e.tag === "AssembleError" || e.name === "AssembleError") {
    const err = new AssembleError(e.line ?? 0, e.message)
    err.message = e.message
    return err
  }
  return Object.assign(new Error(e.message), { name: e.name, ...(e.status !== undefined ? { status: e.status } : {}) })
}

/** The async face of the simulator the routes call. */
export interface SimulatorPool {
  boot(req: BootRequest): Promise<StepResult>
  step(req: StepRequest): Promise<StepResult>
  /** Console frames on a worker (see engine `frames`). */
  frames(req: FramesRequest): Promise<FramesResult>
  close(): Promise<void>
}

/** Default pool size: one worker per core, at most 4. */
export const defaultPoolSize = (): number => Math.max(1, Math.min(4, os.availableParallelism?.() ?? os.cpus().length))

/**
 * Starts `size` workers over `netlistDir` (`local` serves `size: 0` in-process).
 * Resolves once every worker has loaded the netlist; rejects if one fails to start.
 */
export const makeSimulatorPool = async (netlistDir: string, size: number, local: ChipSimulator): Promise<SimulatorPool> => {
  if (size === 0) {
    return {
      boot: async (req) => local.boot(req),
      step: async (req) => local.step(req),
      frames: async (req) => local.frames(req),
      close: async () => {}
    }
  }
  // A JavaScript entry that registers tsx in the worker thread before loading the TypeScript.
  const pool = new Piscina({
    filename: new URL("./SimulatorWorker.mjs", import.meta.url).href,
    workerData: { netlistDir },
    minThreads: size,
    maxThreads: size,
    // Threads live as long as the pool: a cold thread would reload the netlist and lose its memo.
    idleTimeout: Number.POSITIVE_INFINITY
  })
  let closed = false
  const run = async <R>(op: "boot" | "step" | "frames" | "ready", req: unknown): Promise<R> => {
    if (closed) throw new Error("simulator pool is closed")
    let answer: { ok: boolean; result?: R; error?: WorkerError }
    try {
      answer = await pool.run({ op, req })
    } catch (e) {
      throw new Error(closed ? "simulator pool is closed" : `simulator worker failed: ${(e as Error).message}`)
    }
    if (!answer.ok) throw rebuild(answer.error!)
    return answer.result as R
  }
  // One `ready` task per thread at once: each busy thread passes the next to another, so every
  // thread has loaded the netlist (or failed to) before the pool is handed out.
  try {
    await Promise.all(Array.from({ length: size }, () => run("ready", null)))
  } catch (e) {
    await pool.destroy()
    throw e
  }
  return {
    boot: (req) => run<StepResult>("boot", req),
    step: (req) => run<StepResult>("step", req),
    frames: (req) => run<FramesResult>("frames", req),
    close: async () => {
      closed = true
      await pool.destroy()
    }
  }
}
