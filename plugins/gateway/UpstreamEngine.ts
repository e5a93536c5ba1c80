/**
 * Forwards chat completions to an OpenAI-compatible server.
 *
 * The request body is forwarded as the client sent it (unknown fields included; `model`
 * replaced only when `upstream_model` is set). Replies are passed through byte for byte: JSON
 * bodies whole, event streams chunk by chunk as they arrive. Plain `node:http` with a keep-alive
 * agent keeps the added latency well under a millisecond, which `fetch` does not.
 */
import * as http from "node:http"
import * as https from "node:https"
import type { UpstreamEngineConfig } from "./Config.ts"
import { ByteChannel, EngineError, type Engine, type Generation, type GenerationHooks, type Reply } from "./Engine.ts"
import { errorBody, SSE_DONE, sseData, type ChatRequest } from "./OpenAI.ts"

const DATA_PREFIX = Buffer.from("data: {")

/** Counts `data: {` occurrences: one per streamed chunk, i.e. about one per generated token. */
const countEvents = (buf: Buffer): number => {
  let n = 0
  for (let i = buf.indexOf(DATA_PREFIX); i !== -1; i = buf.indexOf(DATA_PREFIX, i + DATA_PREFIX.length)) n++
  return n
}

/** The upstream engine; `make` never throws and does not contact the server. */
export class UpstreamEngine implements Engine {
  readonly kind = "upstream" as const
  readonly label = "upstream"
  readonly id: string
  readonly streaming: boolean
  private readonly target: URL
  private readonly agent: http.Agent
  private readonly request: typeof http.request
  private readonly baseHeaders: Record<string, string>
  private stats = { requests: 0, failures: 0 }

  private constructor(readonly config: UpstreamEngineConfig, private readonly log: (line: string) => void) {
    this.id = config.id
    this.streaming = config.streaming
    this.target = new URL(config.url.replace(/\/+$/, "") + "/chat/completions")
    const secure = this.target.protocol === "https:"
    // One generation at a time per engine, so a handful of kept-alive sockets is plenty.
    this.agent = secure ? new https.Agent({ keepAlive: true, maxSockets: 4 }) : new http.Agent({ keepAlive: true, maxSockets: 4 })
    this.request = secure ? https.request : http.request
    this.baseHeaders = {
      "content-type": "application/json",
      ...(config.api_key ? { authorization: `Bearer ${config.api_key}` } : {})
    }
  }

  /** Creates the engine for `config`; `log` receives connection failures (never the api key). */
  static make(config: UpstreamEngineConfig, log: (line: string) => void): UpstreamEngine {
    return new UpstreamEngine(config, log)
  }

  unavailableReason = (): string | undefined => undefined

  generate = (req: ChatRequest, signal: AbortSignal, hooks: GenerationHooks, raw?: string): Generation => {
    // The client's bytes go upstream as they came (number spelling, key order, unknown fields);
    // only a configured upstream_model needs a re-encoding.
    const payload = Buffer.from(this.config.upstream_model || raw === undefined
      ? JSON.stringify(this.config.upstream_model ? { ...req, model: this.config.upstream_model } : req)
      : raw)
    const stream = req.stream === true
    let settle!: () => void
    let finished = false
    const settled = new Promise<void>((r) => { settle = () => { finished = true; r() } })
    this.stats.requests++

    const reply = new Promise<Reply>((resolve, reject) => {
      let answered = false
      const fail = (e: Error) => {
        this.stats.failures++
        if (!signal.aborted) this.log(`gateway: engine ${this.id}: upstream ${this.target.origin} failed: ${e.message}`)
        if (!answered) {
          answered = true
          reject(new EngineError(502, `upstream of engine ${this.id} failed: ${(e as NodeJS.ErrnoException).code ?? e.message}`, "upstream_error"))
        }
        settle()
      }
      const creq = this.request(this.target, {
        method: "POST",
        agent: this.agent,
        headers: { ...this.baseHeaders, accept: stream ? "text/event-stream" : "application/json", "content-length": String(payload.length) },
        timeout: this.config.timeout_ms
      }, (res) => {
        const status = res.statusCode ?? 502
        const type = String(res.headers["content-type"] ?? "")
        if (stream && status === 200 && type.startsWith("text/event-stream")) {
          answered = true
          const channel = new ByteChannel(() => res.destroy())
          let first = true
          res.on("data", (b: Buffer) => {
            if (first) { first = false; hooks.firstToken() }
            hooks.tokens(countEvents(b))
            channel.push(b)
          })
          res.on("end", () => { channel.end(); settle() })
          res.on("error", () => undefined)
          res.on("close", () => {
            if (!res.complete && !signal.aborted) {
              // The upstream dropped mid-stream: the client already has a 200, so the failure
              // travels as an error event before the terminator.
              this.stats.failures++
              channel.push(sseData(errorBody(`upstream of engine ${this.id} closed the stream early`, "server_error", "upstream_error")))
              channel.push(SSE_DONE)
            }
            channel.end()
            settle()
          })
          resolve({ type: "sse", events: channel })
          return
        }
        const parts: Buffer[] = []
        res.on("data", (b: Buffer) => parts.push(b))
        res.on("end", () => {
          answered = true
          const body = parts.length === 1 ? parts[0]! : Buffer.concat(parts)
          if (status === 200) {
            hooks.firstToken()
            // Token accounting reads the upstream's usage after the reply is on its way.
            setImmediate(() => {
              try { hooks.tokens(Number(JSON.parse(body.toString("utf8"))?.usage?.completion_tokens) || 0) } catch { /* not JSON */ }
            })
          }
          const headers: Record<string, string> = {}
          if (res.headers["retry-after"]) headers["retry-after"] = String(res.headers["retry-after"])
          resolve({ type: "json", status, body: new Uint8Array(body.buffer, body.byteOffset, body.byteLength), headers })
          settle()
        })
        res.on("error", fail)
      })
      creq.on("timeout", () => creq.destroy(new Error(`no answer within ${this.config.timeout_ms} ms`)))
      creq.on("error", fail)
      // After the exchange finished the socket is back in the keep-alive pool: leave it alone.
      signal.addEventListener("abort", () => { if (!finished) creq.destroy(new Error("client went away")) }, { once: true })
      creq.end(payload)
    })
    return { reply, settled }
  }

  health = async (): Promise<Record<string, unknown>> => ({
    id: this.id,
    kind: this.kind,
    available: true,
    url: this.target.origin + this.target.pathname,
    requests: this.stats.requests,
    failures: this.stats.failures
  })

  close = async (): Promise<void> => {
    this.agent.destroy()
  }
}
