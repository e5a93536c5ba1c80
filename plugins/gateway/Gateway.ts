/**
 * The gateway service: engines by id, their busy flags, authentication and dispatch.
 *
 * Busy flags are checked and set in one synchronous step (no yield between), so of many
 * simultaneous requests exactly one wins and the rest are refused at once. A flag is cleared
 * when the engine's generation has *settled* (not merely when the HTTP fiber ends), so an
 * aborted generation never overlaps the next one on the same llama.cpp sequence.
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Schema, Stream } from "effect"
import type { FastReply, FastRequest } from "../../core/Route.ts"
import * as Route from "../../core/Route.ts"
import { timingSafeEqual } from "node:crypto"
import { HttpError } from "../../core/HttpError.ts"
import { EngineError, type Engine, type Reply } from "./Engine.ts"
import { Metrics } from "./Metrics.ts"
import { ChatRequest, openAIError } from "./OpenAI.ts"

/**
 * Compares a presented secret with the expected bytes in constant time: the presented value is
 * copied into a buffer of the expected length (truncated or zero-padded), so the comparison
 * always touches every byte of the secret whatever is presented; the length check comes after.
 * (Cheaper than hashing both sides, which matters on the refusal hot path.)
 */
const secretMatches = (presented: string, expected: Buffer): boolean => {
  const candidate = Buffer.alloc(expected.length)
  const written = candidate.write(presented, "utf8")
  const same = timingSafeEqual(candidate, expected)
  return same && written === expected.length && Buffer.byteLength(presented, "utf8") === expected.length
}

const bearer = (request: HttpServerRequest.HttpServerRequest): string | undefined => {
  const h = request.headers["authorization"]
  if (typeof h !== "string") return undefined
  const m = /^Bearer\s+(.+)$/i.exec(h.trim())
  return m ? m[1]!.trim() : undefined
}

const isLoopback = (addr: string | undefined): boolean =>
  addr !== undefined && (addr === "::1" || addr.startsWith("127.") || addr.startsWith("::ffff:127."))

const SSE_HEADERS = { "cache-control": "no-cache", "x-accel-buffering": "no" }

/** Options of a gateway: tokens are plain strings here and are never logged. */
export interface GatewayOptions {
  readonly engines: ReadonlyArray<Engine>
  readonly defaultEngine: string
  readonly token: string
  readonly adminToken?: string | undefined
  /** Retry-After of a busy refusal, in seconds. */
  readonly retryAfterS: number
}

/** The gateway service; one per plugin instance. */
export class Gateway {
  readonly metrics = new Metrics()
  readonly engines: ReadonlyMap<string, Engine>
  readonly defaultEngine: string
  private readonly busy = new Set<string>()
  private readonly tokenBytes: Buffer
  private readonly adminBytes: Buffer | undefined
  private readonly retryAfter: string
  private readonly startedAt = Date.now()
  private readonly busyResponses: Map<string, HttpServerResponse.HttpServerResponse>
  private readonly busyReplies: Map<string, FastReply>
  private readonly decodeChat = Schema.decodeUnknownEither(ChatRequest)

  constructor(opts: GatewayOptions) {
    this.engines = new Map(opts.engines.map((e) => [e.id, e]))
    this.defaultEngine = opts.defaultEngine
    this.tokenBytes = Buffer.from(opts.token, "utf8")
    this.adminBytes = opts.adminToken ? Buffer.from(opts.adminToken, "utf8") : undefined
    this.retryAfter = String(opts.retryAfterS)
    this.busyResponses = new Map(opts.engines.map((e) => {
      const err = openAIError(503, `Model \`${e.id}\` is busy with another generation; retry shortly.`, {
        code: "engine_busy",
        headers: { "retry-after": this.retryAfter }
      })
      const bytes = new TextEncoder().encode(JSON.stringify(err.body))
      return [e.id, HttpServerResponse.uint8Array(bytes, { status: 503, contentType: "application/json", headers: err.headers! })]
    }))
    this.busyReplies = new Map(opts.engines.map((e) => {
      const prebuilt = this.busyResponses.get(e.id)!
      const body = (prebuilt.body as { body: Uint8Array }).body
      return [e.id, { status: 503, headers: { "content-type": "application/json", "retry-after": this.retryAfter, "content-length": String(body.length) }, body }]
    }))
  }

  /**
   * The busy refusal on the kernel's raw path (`Route.fast`): answers only a request that
   * `chat` would refuse as busy (right token, valid body, known streaming-compatible model,
   * engine available and generating), with the same prebuilt 503; undefined otherwise, and the
   * request then takes the full path. No fiber, no error object: the hot path under load.
   */
  fastBusyRefusal(req: FastRequest): FastReply | undefined {
    if (this.busy.size === 0) return undefined
    const h = req.headers["authorization"]
    const m = typeof h === "string" ? /^Bearer\s+(.+)$/i.exec(h.trim()) : null
    if (!m || !secretMatches(m[1]!.trim(), this.tokenBytes)) return undefined
    const decoded = this.decodeChat(req.json, { errors: "first", onExcessProperty: "ignore" })
    if (decoded._tag === "Left") return undefined
    const id = this.busyEngine(decoded.right)
    if (id === undefined) return undefined
    this.countBusyRefusal(id)
    return this.busyReplies.get(id)
  }

  /**
   * The one busy rule, for `chat` and `fastBusyRefusal`: the id of the engine `req` names when
   * that engine exists, can serve it (streaming), is available and is generating; else undefined.
   */
  private busyEngine(req: { readonly model?: string | null | undefined; readonly stream?: boolean | null | undefined }): string | undefined {
    const id = req.model ?? this.defaultEngine
    const engine = this.engines.get(id)
    return engine && this.busy.has(id) && !(req.stream === true && !engine.streaming) && engine.unavailableReason() === undefined ? id : undefined
  }

  private countBusyRefusal(id: string): void {
    this.metrics.request(id, 503)
    this.metrics.refusal(id, "busy")
  }

  /**
   * Checks the `/v1/*` bearer token. Returns undefined when it matches, else the 401 to send
   * (OpenAI body, `WWW-Authenticate: Bearer`).
   */
  unauthorized(request: HttpServerRequest.HttpServerRequest): HttpError | undefined {
    const presented = bearer(request)
    if (presented !== undefined && secretMatches(presented, this.tokenBytes)) return undefined
    this.metrics.request("none", 401)
    return openAIError(401, presented === undefined
      ? "Missing bearer token: send `Authorization: Bearer <token>`."
      : "Incorrect bearer token provided.", {
      code: "invalid_api_key",
      headers: { "www-authenticate": "Bearer" }
    })
  }

  /**
   * Checks access to `/healthz` and `/metrics`: loopback clients, or the admin token when one is
   * configured. Returns the 403 to send, or undefined.
   */
  forbidden(request: HttpServerRequest.HttpServerRequest): HttpError | undefined {
    if (isLoopback(Option.getOrUndefined(request.remoteAddress))) return undefined
    const presented = bearer(request)
    if (this.adminBytes && presented !== undefined && secretMatches(presented, this.adminBytes)) return undefined
    return openAIError(403, "This endpoint is restricted to loopback clients or the admin token.", { code: "forbidden" })
  }

  /** Whether `engine` is generating now. */
  isBusy(engine: string): boolean {
    return this.busy.has(engine)
  }

  /**
   * Serves one validated chat request (`raw`: its body text as received, forwarded verbatim by
   * upstream engines; `responseDone`: resolves when the HTTP response is fully sent or the
   * client is gone, so a stream holds the engine until its last chunk left): routes on `model`, refuses overlap with 503, and answers
   * with the engine's JSON reply or event stream. Fails with `HttpError` (OpenAI body) for
   * 404 unknown model, 400 `stream` on a non-streaming engine, 503 busy/unavailable, and the
   * engine's own errors (502 upstream failure, 400 bad `response_format`, 500).
   */
  chat(req: ChatRequest, raw?: string, responseDone?: () => Promise<void> | undefined): Effect.Effect<HttpServerResponse.HttpServerResponse | Route.Reply, HttpError> {
    return Effect.suspend(() => {
      const id = req.model ?? this.defaultEngine
      const engine = this.engines.get(id)
      if (!engine) {
        this.metrics.request("none", 404)
        return Effect.fail(openAIError(404, `The model \`${id}\` does not exist.`, { code: "model_not_found", param: "model" }))
      }
      if (req.stream === true && !engine.streaming) {
        this.metrics.request(id, 400)
        return Effect.fail(openAIError(400, `Model \`${id}\` does not support streaming; send \`stream: false\`.`, { code: "unsupported_value", param: "stream" }))
      }
      const reason = engine.unavailableReason()
      if (reason !== undefined) {
        this.metrics.request(id, 503)
        this.metrics.refusal(id, "unavailable")
        return Effect.fail(openAIError(503, `Model \`${id}\` is unavailable: ${reason}.`, { code: "model_unavailable" }))
      }
      if (this.busyEngine(req) !== undefined) {
        this.countBusyRefusal(id)
        // The hot path under load: a prebuilt response (no error object, stack trace or JSON
        // encoding per refusal).
        return Effect.succeed(this.busyResponses.get(id)!)
      }
      this.busy.add(id)
      this.metrics.busy(id, true)
      return this.run(engine, req, raw, responseDone)
    })
  }

  private run(engine: Engine, req: ChatRequest, raw: string | undefined, responseDone: (() => Promise<void> | undefined) | undefined): Effect.Effect<HttpServerResponse.HttpServerResponse | Route.Reply, HttpError> {
    const id = engine.id
    const controller = new AbortController()
    const t0 = performance.now()
    const generation = engine.generate(req, controller.signal, {
      firstToken: () => this.metrics.firstToken(id, (performance.now() - t0) / 1000),
      tokens: (n) => this.metrics.generated(id, n)
    }, raw)
    // Free again once the engine stopped *and* the reply left (a stream holds the engine until
    // its last chunk is written, or until the client is gone).
    const sent = responseDone?.()
    // A closed response means the client has all of it or is gone; either way nothing more of
    // this generation can be delivered (covers a disconnect before a stream started flowing).
    sent?.then(() => controller.abort())
    ;(sent ? Promise.all([generation.settled, sent]) : generation.settled).then(() => {
      this.busy.delete(id)
      this.metrics.busy(id, false)
    })
    const abort = Effect.sync(() => controller.abort())
    return Effect.async<Reply, HttpError>((resume) => {
      generation.reply.then(
        (r) => resume(Effect.succeed(r)),
        (e: unknown) => resume(Effect.fail(toHttpError(e)))
      )
      // Interruption is the client going away (platform-node interrupts the handler).
      return abort
    }).pipe(
      Effect.map((reply) => {
        if (reply.type === "json") {
          this.metrics.request(id, reply.status)
          return reply.body instanceof Uint8Array
            ? HttpServerResponse.uint8Array(reply.body, { status: reply.status, contentType: "application/json", ...(reply.headers ? { headers: reply.headers } : {}) })
            : Route.reply(reply.status, reply.body)
        }
        this.metrics.request(id, 200)
        const events = Stream.fromAsyncIterable(reply.events, (e) => e).pipe(
          // A stream that ends early (client disconnected) aborts the generation at once.
          Stream.ensuring(abort),
          Stream.orDie
        )
        return HttpServerResponse.stream(events, { contentType: "text/event-stream", headers: SSE_HEADERS })
      }),
      Effect.tapError((e) => Effect.sync(() => this.metrics.request(id, e.status))),
      Effect.onInterrupt(() => Effect.sync(() => this.metrics.request(id, 499)))
    )
  }

  /** The public Status document: `ok` is whether the default engine serves. */
  status(): { ok: boolean; models: Array<{ id: string; engine: string; available: boolean }> } {
    const models = [...this.engines.values()].map((e) => ({ id: e.id, engine: e.label, available: e.unavailableReason() === undefined }))
    return { ok: models.find((m) => m.id === this.defaultEngine)?.available ?? false, models }
  }

  /** `/v1/models`: OpenAI's list shape plus `available`, `streaming` and `default` per model. */
  models(): { object: "list"; data: Array<Record<string, unknown>> } {
    const created = Math.floor(this.startedAt / 1000)
    return {
      object: "list",
      data: [...this.engines.values()].map((e) => ({
        id: e.id,
        object: "model",
        created,
        owned_by: "platform",
        engine: e.label,
        streaming: e.streaming,
        default: e.id === this.defaultEngine,
        available: e.unavailableReason() === undefined
      }))
    }
  }

  /** `/healthz`: per-engine cache statistics and memory figures (bytes), process memory. */
  health(): Effect.Effect<Record<string, unknown>> {
    return Effect.promise(async () => {
      const mem = process.memoryUsage()
      const engines = await Promise.all([...this.engines.values()].map(async (e) => ({ ...(await e.health()), busy: this.busy.has(e.id) })))
      return {
        ok: this.status().ok,
        uptime_s: Math.round((Date.now() - this.startedAt) / 1000),
        default_model: this.defaultEngine,
        process: { rss_bytes: mem.rss, heap_used_bytes: mem.heapUsed, external_bytes: mem.external },
        engines
      }
    })
  }

  /** `/metrics` text. */
  renderMetrics(): string {
    const mem = process.memoryUsage()
    return this.metrics.render([...this.engines.keys()]) +
      "# HELP gateway_process_resident_memory_bytes Resident set size of the platform process.\n" +
      "# TYPE gateway_process_resident_memory_bytes gauge\n" +
      `gateway_process_resident_memory_bytes ${mem.rss}\n`
  }

  /** Closes every engine (models, contexts, sockets). */
  close(): Promise<void> {
    return Promise.all([...this.engines.values()].map((e) => e.close().catch(() => undefined))).then(() => undefined)
  }
}

const toHttpError = (e: unknown): HttpError =>
  e instanceof HttpError ? e
    : e instanceof EngineError ? openAIError(e.status, e.message, { code: e.code, param: e.param })
    : openAIError(500, "The engine failed.", { code: "internal_error" })
