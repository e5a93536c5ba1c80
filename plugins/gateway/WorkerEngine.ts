/**
 * A llama-cpp engine hosted in its own worker thread: the `Engine` the gateway's thread sees.
 *
 * Why: everything a llama-cpp engine does in JavaScript (tokenizing a prompt, rendering the chat
 * template, building grammars, node-llama-cpp's per-token loop) would otherwise run on the event
 * loop that also answers HTTP, and a busy 503 would wait behind it (tokenizing a 50,000-word
 * prompt alone takes ~70 ms there). In the worker, that loop only relays messages.
 *
 * Protocol (structured-clone messages): the host sends `generate` {id, req, operation}, `abort`
 * {id}, `health` {id} and `close`; the worker answers `ready` {reason?} once loaded, `json`
 * {id, status, body} or `sse` {id} then `chunk` {id, bytes}... `end` {id}, or `error` {id, ...},
 * the last of these only once the engine has stopped (`settled: true`); `tokens` {id, first, n}
 * while generating; `health`, `log`.
 * A worker that dies fails its requests (500), settles them, and leaves the engine unavailable.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Worker } from "node:worker_threads"
import type { LlamaCppEngineConfig } from "./Config.ts"
import { ByteChannel, EngineError, type Engine, type Generation, type GenerationHooks, type Reply, type Unavailable } from "./Engine.ts"
import type { AnyRequest, Operation } from "./OpenAI.ts"
import { budgetFor, refuseFor } from "./Refusals.ts"
import type { ThreadPolicy } from "./Threads.ts"

/** What the worker is started with. */
export interface WorkerInit {
  readonly config: LlamaCppEngineConfig
  readonly configDir: string
  readonly threads: ThreadPolicy
}

/** Host → worker. */
export type ToWorker =
  | { op: "generate"; id: number; req: AnyRequest; operation: Operation }
  | { op: "abort"; id: number }
  | { op: "health"; id: number }
  | { op: "close" }

/** Worker → host. */
export type ToHost =
  | { op: "ready"; reason?: string }
  | { op: "log"; line: string }
  | { op: "json"; id: number; status: number; body: unknown; headers?: Record<string, string>; settled: true }
  | { op: "sse"; id: number }
  | { op: "chunk"; id: number; bytes: Uint8Array }
  | { op: "end"; id: number; settled: true }
  | { op: "error"; id: number; status: number; message: string; code: string | null; param: string | null; headers?: Record<string, string>; settled: true }
  | { op: "tokens"; id: number; first: boolean; n: number }
  | { op: "health"; id: number; data: Record<string, unknown> }
  | { op: "closed" }

interface Pending {
  readonly hooks: GenerationHooks
  readonly resolve: (r: Reply) => void
  readonly reject: (e: EngineError) => void
  readonly settle: () => void
  channel?: ByteChannel
}

/** The gateway-side handle of a llama-cpp engine running in a worker thread. */
export class WorkerEngine implements Engine {
  readonly kind = "llama-cpp" as const
  readonly label: string
  readonly streaming: boolean
  readonly id: string
  /** Resolves once the worker has loaded the model (or failed to); never rejects. */
  readonly ready: Promise<void>

  private reason: string | undefined = "loading"
  private retryable = true
  /** Undefined when no model file was found, and once a failed load has stopped the thread. */
  private worker: Worker | undefined
  private readonly modelPaths: ReadonlyArray<string>
  private readonly pending = new Map<number, Pending>()
  private readonly healthWaiters = new Map<number, (d: Record<string, unknown>) => void>()
  private nextId = 1
  private closing: Promise<void> | undefined

  private constructor(readonly config: LlamaCppEngineConfig, configDir: string, readonly threads: ThreadPolicy, private readonly log: (line: string) => void, start: boolean) {
    this.id = config.id
    this.streaming = config.streaming
    this.label = `llama-cpp/${config.device}`
    this.modelPaths = [config.model_path, config.embedding_model_path].filter((p): p is string => p !== undefined).map((p) => path.resolve(configDir, p))
    // A missing file is known without a thread (the usual state of a fresh checkout's engines).
    if (!start) {
      this.reason = "not started (the platform is being inspected, not served)"
      this.retryable = false
      this.ready = Promise.resolve()
      return
    }
    const missing = this.modelPaths.find((p) => !fs.existsSync(p))
    if (missing !== undefined) {
      this.reason = `model file not found: ${missing}`
      this.retryable = false
      log(`gateway: engine ${this.id} unavailable: model file not found: ${missing} (download one with \`platform gateway pull URL\`)`)
      this.ready = Promise.resolve()
      return
    }
    const init: WorkerInit = { config, configDir: path.resolve(configDir), threads }
    const worker = new Worker(new URL("./LlamaCppWorker.mjs", import.meta.url), { workerData: init, name: `gateway-engine-${config.id}` })
    this.worker = worker
    let loaded!: () => void
    this.ready = new Promise<void>((r) => { loaded = r })
    worker.on("message", (m: ToHost) => this.onMessage(m, loaded))
    worker.on("error", (e) => this.fail(`engine worker failed: ${e.message}`, loaded))
    worker.on("exit", (code) => { if (!this.closing && this.worker === worker) this.fail(`engine worker exited (code ${code})`, loaded) })
  }

  /**
   * Starts the worker thread for `config` (model paths resolved against `configDir`) with the
   * thread counts of `threads`. Never throws; the engine is `loading` until the worker says.
   * `start: false` starts nothing (the engine stays unavailable: inspection only).
   */
  static make(config: LlamaCppEngineConfig, configDir: string, threads: ThreadPolicy, log: (line: string) => void, start = true): WorkerEngine {
    return new WorkerEngine(config, configDir, threads, log, start)
  }

  private fail(reason: string, loaded: () => void): void {
    if (this.reason !== reason) this.log(`gateway: engine ${this.id} unavailable: ${reason}`)
    this.reason = reason
    this.retryable = false
    this.worker = undefined
    for (const [id, p] of this.pending) {
      p.reject(new EngineError(500, `generation failed: ${reason}`, "generation_failed"))
      p.channel?.end()
      p.settle()
      this.pending.delete(id)
    }
    for (const w of this.healthWaiters.values()) w({})
    this.healthWaiters.clear()
    loaded()
  }

  private onMessage(m: ToHost, loaded: () => void): void {
    switch (m.op) {
      case "ready": {
        this.reason = m.reason
        this.retryable = false
        if (m.reason !== undefined) {
          // A model that failed to load never will: the thread and what it loaded are released.
          const worker = this.worker
          this.worker = undefined
          void worker?.terminate()
        }
        loaded()
        return
      }
      case "log":
        this.log(m.line)
        return
      case "health":
        this.healthWaiters.get(m.id)?.(m.data)
        this.healthWaiters.delete(m.id)
        return
      case "closed":
        return
    }
    const p = this.pending.get(m.id)
    if (!p) return
    switch (m.op) {
      case "json":
        p.resolve({ type: "json", status: m.status, body: m.body, ...(m.headers ? { headers: m.headers } : {}) })
        break
      case "sse": {
        const id = m.id
        p.channel = new ByteChannel(() => this.worker?.postMessage({ op: "abort", id } satisfies ToWorker))
        p.resolve({ type: "sse", events: p.channel })
        break
      }
      case "chunk":
        p.channel?.push(m.bytes)
        break
      case "end":
        p.channel?.end()
        break
      case "error":
        p.reject(new EngineError(m.status, m.message, m.code, m.param, m.headers))
        break
      case "tokens":
        if (m.first) p.hooks.firstToken()
        if (m.n > 0) p.hooks.tokens(m.n)
        break
    }
    if ("settled" in m) {
      p.channel?.end()
      this.pending.delete(m.id)
      p.settle()
    }
  }

  unavailable = (): Unavailable | undefined =>
    this.reason === undefined ? undefined : { reason: this.reason, retryable: this.retryable && this.reason === "loading" }

  refuse = (req: AnyRequest, op: Operation = "chat"): EngineError | undefined => refuseFor(this.id, this.config, req, op)

  completionBudget = (req: AnyRequest, op: Operation = "chat"): number | undefined => budgetFor(this.config, req, op)

  generate = (req: AnyRequest, signal: AbortSignal, hooks: GenerationHooks, _raw?: string, op: Operation = "chat"): Generation => {
    const id = this.nextId++
    let resolve!: (r: Reply) => void, reject!: (e: EngineError) => void, settle!: () => void
    const reply = new Promise<Reply>((res, rej) => { resolve = res; reject = rej })
    const settled = new Promise<void>((r) => { settle = r })
    // A reply nobody awaits any more (the client left first) must not become an unhandled rejection.
    reply.catch(() => undefined)
    this.pending.set(id, { hooks, resolve, reject, settle })
    const worker = this.worker
    if (!worker) {
      // Not reached through the gateway (it checks `unavailable` first); answered all the same.
      reject(new EngineError(503, `Model \`${this.id}\` is unavailable: ${this.reason}.`, "model_unavailable", null, { "x-should-retry": "false" }))
      this.pending.delete(id)
      settle()
      return { reply, settled }
    }
    signal.addEventListener("abort", () => worker.postMessage({ op: "abort", id } satisfies ToWorker), { once: true })
    worker.postMessage({ op: "generate", id, req, operation: op } satisfies ToWorker)
    return { reply, settled }
  }

  health = (): Promise<Record<string, unknown>> => {
    const worker = this.worker
    if (this.closing || !worker) {
      return Promise.resolve({
        id: this.id,
        kind: this.kind,
        device: this.config.device,
        available: false,
        reason: this.reason,
        model_path: this.modelPaths[0],
        thread_policy: this.threads
      })
    }
    const id = this.nextId++
    return new Promise((resolve) => {
      this.healthWaiters.set(id, resolve)
      worker.postMessage({ op: "health", id } satisfies ToWorker)
    })
  }

  close = (): Promise<void> => {
    this.closing ??= new Promise<void>((resolve) => {
      this.reason = "closed"
      const worker = this.worker
      if (!worker) return resolve()
      const done = () => { worker.terminate().then(() => resolve(), () => resolve()) }
      // The worker disposes the model and context itself (native memory), then is stopped; a
      // worker that does not answer within 5 s is stopped anyway.
      const timer = setTimeout(done, 5000)
      worker.on("message", (m: ToHost) => { if (m.op === "closed") { clearTimeout(timer); done() } })
      worker.postMessage({ op: "close" } satisfies ToWorker)
    })
    return this.closing
  }
}
