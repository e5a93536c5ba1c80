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
import * as net from "node:net"
import type { UpstreamEngineConfig } from "./Config.ts"
import { ByteChannel, EngineError, type Engine, type Generation, type GenerationHooks, type Reply, type Unavailable } from "./Engine.ts"
import { errorBody, operationPath, requestedCompletionTokens, SSE_DONE, sseData, type AnyRequest, type Operation } from "./OpenAI.ts"

/** Errors meaning no request reached the upstream at all: nothing listens, or no such host. */
const REFUSED = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"])

/** How often a refusing upstream is probed again (a TCP connect), at most, in ms. */
const PROBE_EVERY_MS = 1000

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
  /** Where each operation is forwarded: `<url>/chat/completions`, `<url>/completions`, `<url>/embeddings`. */
  private readonly targets: Record<Operation, URL>
  private readonly target: URL
  private readonly agent: http.Agent
  private readonly request: typeof http.request
  private readonly baseHeaders: Record<string, string>
  private stats = { requests: 0, failures: 0 }
  /** Set while the upstream refuses connections; cleared by a probe that connects. */
  private down: string | undefined
  private probing: Promise<void> | undefined
  private lastProbe = 0

  private constructor(readonly config: UpstreamEngineConfig, private readonly log: (line: string) => void) {
    this.id = config.id
    this.streaming = config.streaming
    const base = config.url.replace(/\/+$/, "")
    this.targets = { chat: new URL(`${base}/${operationPath.chat}`), completions: new URL(`${base}/${operationPath.completions}`), embeddings: new URL(`${base}/${operationPath.embeddings}`) }
    this.target = this.targets.chat
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

  /**
   * Unavailable while the upstream refuses connections (seen by a request or the boot probe).
   * Asking while down starts a new probe at most once per PROBE_EVERY_MS, so the engine comes
   * back on its own once something listens again.
   */
  unavailable = (): Unavailable | undefined => {
    if (this.down === undefined) return undefined
    if (!this.probing && performance.now() - this.lastProbe >= PROBE_EVERY_MS) void this.probe()
    return { reason: this.down, retryable: false }
  }

  /**
   * Opens (and closes) one TCP connection to the upstream: refused marks the engine down,
   * connected marks it up. Resolves once known (within 2 s); never rejects.
   */
  probe = (): Promise<void> => {
    if (this.probing) return this.probing
    this.lastProbe = performance.now()
    const port = Number(this.target.port) || (this.target.protocol === "https:" ? 443 : 80)
    this.probing = new Promise<void>((resolve) => {
      const socket = net.connect({ host: this.target.hostname.replace(/^\[|\]$/g, ""), port })
      const finish = () => { socket.destroy(); this.probing = undefined; resolve() }
      socket.setTimeout(2000, finish)
      socket.once("connect", () => { this.down = undefined; finish() })
      socket.once("error", (e: NodeJS.ErrnoException) => {
        if (e.code && REFUSED.has(e.code)) this.markDown(e.code)
        finish()
      })
    })
    return this.probing
  }

  private markDown(code: string): void {
    if (this.down === undefined) this.log(`gateway: engine ${this.id} unavailable: upstream ${this.target.origin} refuses connections (${code})`)
    this.down = `upstream ${this.target.origin} refuses connections (${code})`
    this.lastProbe = performance.now()
  }

  refuse = (): EngineError | undefined => undefined

  completionBudget = (req: AnyRequest, op: Operation = "chat"): number | undefined => {
    const requested = op === "embeddings" ? undefined : requestedCompletionTokens(req)
    return requested === undefined ? undefined : requested * (typeof req.n === "number" ? req.n : 1)
  }

  /**
   * Forwards one request of operation `op` to `<url>/<op path>`: every field as the client sent
   * it (tools, tool_choice, logprobs, response_format... untouched), the reply byte for byte.
   */
  generate = (req: AnyRequest, signal: AbortSignal, hooks: GenerationHooks, raw?: string, op: Operation = "chat"): Generation => {
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
        const code = (e as NodeJS.ErrnoException).code
        if (code && REFUSED.has(code) && !answered) {
          // Nothing reached the upstream: the model is unavailable, and a retry cannot help until
          // someone starts it (the probe notices).
          answered = true
          this.markDown(code)
          reject(new EngineError(503, `Model \`${this.id}\` is unavailable: ${this.down}.`, "model_unavailable", null, { "x-should-retry": "false" }))
          settle()
          return
        }
        if (!signal.aborted) this.log(`gateway: engine ${this.id}: upstream ${this.target.origin} failed: ${e.message}`)
        if (!answered) {
          answered = true
          reject(new EngineError(502, `upstream of engine ${this.id} failed: ${code ?? e.message}`, "upstream_error"))
        }
        settle()
      }
      const creq = this.request(this.targets[op], {
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
    available: this.down === undefined,
    ...(this.down !== undefined ? { reason: this.down } : {}),
    url: this.target.origin + this.target.pathname,
    requests: this.stats.requests,
    failures: this.stats.failures
  })

  close = async (): Promise<void> => {
    this.agent.destroy()
  }
}
