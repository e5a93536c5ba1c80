/**
 * Worker-thread side of a llama-cpp engine (see `WorkerEngine.ts` for the protocol): creates the
 * `LlamaCppEngine` from `workerData`, reports when it has loaded, and runs the generations the
 * gateway's thread asks for, sending back replies, stream chunks, token counts and settlement.
 */
import { parentPort, workerData } from "node:worker_threads"
import { EngineError, type Generation } from "./Engine.ts"
import { LlamaCppEngine } from "./LlamaCppEngine.ts"
import type { ToHost, ToWorker, WorkerInit } from "./WorkerEngine.ts"

const port = parentPort!
const post = (m: ToHost) => port.postMessage(m)
const init = workerData as WorkerInit
const engine = LlamaCppEngine.make(init.config, init.configDir, init.threads, (line) => post({ op: "log", line }))
const running = new Map<number, AbortController>()

/**
 * Relays one generation. The last message of each (a JSON reply, an error, a stream's end) is
 * sent once the engine has settled and says so (`settled: true`): the host then frees the engine
 * in the same turn in which it answers, so a client's next request never finds it still busy.
 */
const start = (id: number, gen: Generation) => {
  const finish = () => running.delete(id)
  gen.reply.then(
    async (reply) => {
      if (reply.type === "json") {
        await gen.settled
        finish()
        post({ op: "json", id, status: reply.status, body: reply.body, ...(reply.headers ? { headers: reply.headers } : {}), settled: true })
        return
      }
      post({ op: "sse", id })
      for await (const bytes of reply.events) post({ op: "chunk", id, bytes })
      await gen.settled
      finish()
      post({ op: "end", id, settled: true })
    },
    async (e: unknown) => {
      const err = e instanceof EngineError ? e : new EngineError(500, `generation failed: ${e instanceof Error ? e.message : String(e)}`, "generation_failed")
      await gen.settled
      finish()
      post({ op: "error", id, status: err.status, message: err.message, code: err.code, param: err.param, ...(err.headers ? { headers: err.headers } : {}), settled: true })
    }
  ).catch((e: unknown) => {
    // A reply that cannot be sent (not cloneable): the client gets a 500 rather than silence.
    finish()
    post({ op: "error", id, status: 500, message: `generation failed: ${e instanceof Error ? e.message : String(e)}`, code: "generation_failed", param: null, settled: true })
  })
}

port.on("message", (m: ToWorker) => {
  switch (m.op) {
    case "generate": {
      const controller = new AbortController()
      running.set(m.id, controller)
      // Token counts travel at most once per turn of this thread's event loop, summed.
      let pending = 0, first = false, scheduled = false
      const flush = () => {
        scheduled = false
        post({ op: "tokens", id: m.id, first, n: pending })
        first = false
        pending = 0
      }
      const schedule = () => { if (!scheduled) { scheduled = true; setImmediate(flush) } }
      start(m.id, engine.generate(m.req, controller.signal, {
        firstToken: () => { first = true; schedule() },
        tokens: (n) => { pending += n; schedule() }
      }, undefined, m.operation))
      break
    }
    case "abort":
      running.get(m.id)?.abort()
      break
    case "health":
      engine.health().then((data) => post({ op: "health", id: m.id, data }))
      break
    case "close":
      engine.close().then(() => post({ op: "closed" }))
      break
  }
})

engine.ready.then(() => {
  const why = engine.unavailable()
  post({ op: "ready", ...(why ? { reason: why.reason } : {}) })
})
