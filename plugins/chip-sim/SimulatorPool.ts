/**
 * Runs boot/step on worker threads, so a long run (a 200,000-half-cycle step takes up to about a
 * second) never blocks the event loop that every listener of the platform shares.
 *
 * Each worker loads the netlist once and keeps its own simulator (and its memo). A request goes
 * to an idle worker, else waits in FIFO order. Errors come back with their name, message, HTTP
 * status and assembler line, and are rebuilt as `AssembleError` or a status-carrying `Error`.
 * `close()` terminates the workers. With `size: 0` the pool runs requests in-process.
 */
import * as os from "node:os"
import { Worker } from "node:worker_threads"
import { AssembleError } from "./assembler/AssembleError.ts"
import type { BootRequest, StepRequest } from "./Domain.ts"
import type { FramesRequest, FramesResult, StepResult } from "./engine/index.ts"
import type { ChipSimulator } from "./Simulation.ts"

interface Pending {
  readonly id: number
  readonly op: "boot" | "step" | "frames"
  readonly req: unknown
  readonly resolve: (r: never) => void // the result of its op (StepResult or FramesResult)
  readonly reject: (e: Error) => void
}

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
  const url = new URL("./SimulatorWorker.mjs", import.meta.url)
  const queue: Array<Pending> = []
  const idle: Array<Worker> = []
  const inflight = new Map<Worker, Pending>()
  let nextId = 1
  let closed = false

  const dispatch = () => {
    while (idle.length > 0 && queue.length > 0) {
      const w = idle.pop()!
      const p = queue.shift()!
      inflight.set(w, p)
      w.postMessage({ id: p.id, op: p.op, req: p.req })
    }
  }

  const start = () =>
    new Promise<Worker>((resolve, reject) => {
      const w = new Worker(url, { workerData: { netlistDir } })
      w.once("error", reject)
      w.once("message", (m: { ready?: boolean }) => {
        if (!m.ready) return reject(new Error("simulator worker did not start"))
        w.off("error", reject)
        w.on("message", (msg: { id: number; ok: boolean; result?: StepResult; error?: WorkerError }) => {
          const p = inflight.get(w)
          inflight.delete(w)
          idle.push(w)
          if (p && p.id === msg.id) {
            if (msg.ok) p.resolve(msg.result as never)
            else p.reject(rebuild(msg.error!))
          }
          dispatch()
        })
        w.on("error", (e) => {
          // A crashed worker fails its request and is replaced, so the pool keeps its size.
          const p = inflight.get(w)
          inflight.delete(w)
          p?.reject(new Error(`simulator worker failed: ${e.message}`))
          if (!closed) start().then((n) => { idle.push(n); dispatch() }, () => {})
        })
        resolve(w)
      })
    })

  const workers = await Promise.all(Array.from({ length: size }, start))
  idle.push(...workers)
  const run = <R>(op: Pending["op"], req: unknown) =>
    new Promise<R>((resolve, reject) => {
      if (closed) return reject(new Error("simulator pool is closed"))
      queue.push({ id: nextId++, op, req, resolve: resolve as (r: never) => void, reject })
      dispatch()
    })
  return {
    boot: (req) => run<StepResult>("boot", req),
    step: (req) => run<StepResult>("step", req),
    frames: (req) => run<FramesResult>("frames", req),
    close: async () => {
      closed = true
      for (const p of queue.splice(0)) p.reject(new Error("simulator pool is closed"))
      await Promise.all([...idle, ...inflight.keys()].map((w) => w.terminate()))
    }
  }
}
