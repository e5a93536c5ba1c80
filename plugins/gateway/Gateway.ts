/**
 * The gateway service: engines by id, their busy flags, authentication and dispatch.
 *
 * Busy flags are checked and set in one synchronous step (no yield between), so of many
 * simultaneous requests exactly one wins and the rest are refused at once. A flag is cleared
 * when the engine's generation has *settled* (not merely when the HTTP fiber ends), so an
 * aborted generation never overlaps the next one on the same llama.cpp sequence.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { FastReply, FastRequest } from "../../core/Route.ts"
import * as Route from "../../core/Route.ts"
import { timingSafeEqual } from "node:crypto"
import { HttpError } from "../../core/HttpError.ts"
import { EngineError, type Engine, type Reply, type Unavailable } from "./Engine.ts"
import { Metrics } from "./Metrics.ts"
import { ChatRequest, errorBody, openAIError, type AnyRequest, type Operation } from "./OpenAI.ts"

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
  /** Retry-After of a busy refusal while nothing is known of the engine's pace, in seconds. */
  readonly retryAfterS: number
  /** Monotonic ms for the pace of generations (tests drive it); default `performance.now`. */
  readonly clock?: () => number
  /** Uniform [0, 1) draws for the retry jitter (tests pin it); default `Math.random`. */
  readonly random?: () => number
}

/** Bounds of a busy refusal's retry hint, in ms (the OpenAI SDKs ignore hints of 60 s or more). */
const RETRY_MIN_MS = 100
const RETRY_MAX_MS = 59_000
/** Jitter: a refused client is told to wait the estimate plus up to this share of it (at least JITTER_MIN_MS). */
const JITTER_SHARE = 1
const JITTER_MIN_MS = 500

/** The generation an engine is running: what its busy refusals' retry hints are derived from. */
interface Running {
  readonly startedAt: number
  /** Most tokens it may generate (all choices), when known. */
  readonly budget: number | undefined
  tokens: number
  firstTokenAt: number | undefined
}

/** Pace of an engine's finished generations (moving averages), for estimates before a new one has any. */
interface Pace {
  msPerToken: number | undefined
  msPerGeneration: number | undefined
  tokensPerGeneration: number | undefined
}

const ewma = (previous: number | undefined, sample: number): number => (previous === undefined ? sample : 0.7 * previous + 0.3 * sample)

/** The gateway service; one per plugin instance. */
export class Gateway {
  readonly metrics = new Metrics()
  readonly engines: ReadonlyMap<string, Engine>
  readonly defaultEngine: string
  private readonly busy = new Set<string>()
  private readonly tokenBytes: Buffer
  private readonly adminBytes: Buffer | undefined
  private readonly fallbackRetryMs: number
  private readonly clock: () => number
  private readonly random: () => number
  private readonly startedAt = Date.now()
  private readonly busyBodies: Map<string, Uint8Array>
  private readonly running = new Map<string, Running>()
  private readonly pace = new Map<string, Pace>()
  private readonly decodeChat = Schema.decodeUnknownEither(ChatRequest)

  constructor(opts: GatewayOptions) {
    this.engines = new Map(opts.engines.map((e) => [e.id, e]))
    this.defaultEngine = opts.defaultEngine
    this.tokenBytes = Buffer.from(opts.token, "utf8")
    this.adminBytes = opts.adminToken ? Buffer.from(opts.adminToken, "utf8") : undefined
    this.fallbackRetryMs = opts.retryAfterS * 1000
    this.clock = opts.clock ?? (() => performance.now())
    this.random = opts.random ?? Math.random
    // The busy body is the same for every refusal (the hot path under load): encoded once.
    this.busyBodies = new Map(opts.engines.map((e) => [e.id, new TextEncoder().encode(JSON.stringify(
      errorBody(`Model \`${e.id}\` is busy with another generation; retry after the time in Retry-After.`, "server_error", "engine_busy")
    ))]))
  }

  /**
   * How long until `engine`'s running generation ends, in ms: the tokens it has left at its pace
   * so far (or the engine's earlier pace until it has produced a few). Tokens left: its remaining
   * budget, capped by this engine's typical generation length once one is known (generations
   * mostly stop well before their budget; past the typical length, a quarter of it more). Without
   * a budget: the typical duration less the time spent. Knowing nothing: `retry_after_s`.
   */
  remainingMs(engine: string): number {
    const run = this.running.get(engine)
    const pace = this.pace.get(engine)
    if (!run) return this.fallbackRetryMs
    const now = this.clock()
    const ownPace = run.firstTokenAt !== undefined && run.tokens >= 4 ? (now - run.firstTokenAt) / (run.tokens - 1) : undefined
    const msPerToken = ownPace ?? pace?.msPerToken
    let ms: number
    if (run.budget !== undefined && msPerToken !== undefined) {
      let left = Math.max(0, run.budget - run.tokens)
      const typical = pace?.tokensPerGeneration
      if (typical !== undefined) left = Math.min(left, Math.max(typical - run.tokens, typical / 4))
      ms = left * msPerToken
    } else if (pace?.msPerGeneration !== undefined) ms = pace.msPerGeneration - (now - run.startedAt)
    else ms = this.fallbackRetryMs
    return Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, ms))
  }

  /**
   * Retry hints of one busy refusal: the remaining time plus a random share of it, so the
   * clients refused during one generation come back spread out instead of in one wave.
   * `retry-after-ms` (honoured by the OpenAI SDKs) carries the exact figure, `retry-after` the
   * same in whole seconds, rounded up.
   */
  retryHeaders(engine: string): Record<string, string> {
    const estimate = this.remainingMs(engine)
    const ms = Math.min(RETRY_MAX_MS, Math.round(estimate + this.random() * Math.max(JITTER_MIN_MS, JITTER_SHARE * estimate)))
    return { "retry-after": String(Math.ceil(ms / 1000)), "retry-after-ms": String(ms) }
  }

  private busyReply(engine: string): FastReply {
    const body = this.busyBodies.get(engine)!
    return { status: 503, headers: { "content-type": "application/json", "content-length": String(body.length), ...this.retryHeaders(engine) }, body }
  }

  /** The 503 for an unavailable engine; `x-should-retry: false` when a retry cannot help. */
  private unavailableError(id: string, why: Unavailable): HttpError {
    return why.retryable
      ? openAIError(503, `Model \`${id}\` is not ready yet: ${why.reason}.`, { code: "model_loading", headers: { "retry-after": "1" } })
      : openAIError(503, `Model \`${id}\` is unavailable: ${why.reason}.`, { code: "model_unavailable", headers: { "x-should-retry": "false" } })
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
    return this.busyReply(id)
  }

  /**
   * The one busy rule, for `chat` and `fastBusyRefusal`: the id of the engine `req` names when
   * that engine exists, can serve it (streaming, no refused field), is available and is
   * generating; else undefined.
   */
  private busyEngine(req: AnyRequest, op: Operation = "chat"): string | undefined {
    const id = req.model ?? this.defaultEngine
    const engine = this.engines.get(id)
    if (!engine || !this.busy.has(id) || (req.stream === true && !engine.streaming)) return undefined
    return engine.refuse(req, op) === undefined && engine.unavailable() === undefined ? id : undefined
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
    return this.serve("chat", req, raw, responseDone)
  }

  /**
   * Serves one validated request of any operation (`chat`, `completions`, `embeddings`) with the
   * same rules as `chat`: the same token, routing on `model`, and one request at a time per engine
   * whatever the operation (an embedding overlapping a generation on the same engine gets the
   * busy 503 too, and the other way round).
   */
  serve(op: Operation, req: AnyRequest, raw?: string, responseDone?: () => Promise<void> | undefined): Effect.Effect<HttpServerResponse.HttpServerResponse | Route.Reply, HttpError> {
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
      const refused = engine.refuse(req, op)
      if (refused) {
        this.metrics.request(id, refused.status)
        return Effect.fail(toHttpError(refused))
      }
      const why = engine.unavailable()
      if (why !== undefined) {
        this.metrics.request(id, 503)
        this.metrics.refusal(id, "unavailable")
        return Effect.fail(this.unavailableError(id, why))
      }
      if (this.busyEngine(req, op) !== undefined) {
        this.countBusyRefusal(id)
        // The hot path under load: a prebuilt body (no error object, stack trace or JSON
        // encoding per refusal); only the retry hints are per refusal.
        return Effect.succeed(HttpServerResponse.uint8Array(this.busyBodies.get(id)!, { status: 503, contentType: "application/json", headers: this.retryHeaders(id) }))
      }
      this.busy.add(id)
      this.metrics.busy(id, true)
      return this.run(op, engine, req, raw, responseDone)
    })
  }

  private run(op: Operation, engine: Engine, req: AnyRequest, raw: string | undefined, responseDone: (() => Promise<void> | undefined) | undefined): Effect.Effect<HttpServerResponse.HttpServerResponse | Route.Reply, HttpError> {
    const id = engine.id
    const controller = new AbortController()
    const t0 = performance.now()
    const running: Running = { startedAt: this.clock(), budget: engine.completionBudget(req, op), tokens: 0, firstTokenAt: undefined }
    this.running.set(id, running)
    const generation = engine.generate(req, controller.signal, {
      firstToken: () => {
        running.firstTokenAt = this.clock()
        this.metrics.firstToken(id, (performance.now() - t0) / 1000)
      },
      tokens: (n) => {
        running.tokens += n
        this.metrics.generated(id, n)
      }
    }, raw, op)
    // The pace of a finished generation informs the estimates of the next one's refusals. One
    // refused (a 400) or cut short by its client says nothing of the engine's pace. An upstream's
    // non-streamed reply reports its tokens only afterwards: its duration still counts.
    // Embeddings say nothing of the generation pace either.
    const served = op === "embeddings" ? Promise.resolve(false) : generation.reply.then((r) => r.type === "sse" || r.status < 400, () => false)
    Promise.all([generation.settled, served]).then(([, ok]) => {
      if (!ok || controller.signal.aborted) return
      const end = this.clock()
      const pace = this.pace.get(id) ?? { msPerToken: undefined, msPerGeneration: undefined, tokensPerGeneration: undefined }
      pace.msPerGeneration = ewma(pace.msPerGeneration, end - running.startedAt)
      if (running.tokens > 0) pace.tokensPerGeneration = ewma(pace.tokensPerGeneration, running.tokens)
      if (running.firstTokenAt !== undefined && running.tokens >= 2) pace.msPerToken = ewma(pace.msPerToken, (end - running.firstTokenAt) / (running.tokens - 1))
      this.pace.set(id, pace)
    })
    // Free again once the engine stopped *and* the reply left (a stream holds the engine until
    // its last chunk is written, or until the client is gone).
    const sent = responseDone?.()
    // A closed response means the client has all of it or is gone; either way nothing more of
    // this generation can be delivered (covers a disconnect before a stream started flowing).
    sent?.then(() => controller.abort())
    ;(sent ? Promise.all([generation.settled, sent]) : generation.settled).then(() => {
      this.running.delete(id)
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
    const models = [...this.engines.values()].map((e) => ({ id: e.id, engine: e.label, available: e.unavailable() === undefined }))
    return { ok: models.find((m) => m.id === this.defaultEngine)?.available ?? false, models }
  }

  private modelObject(e: Engine): Record<string, unknown> {
    return {
      id: e.id,
      object: "model",
      created: Math.floor(this.startedAt / 1000),
      owned_by: "platform",
      engine: e.label,
      streaming: e.streaming,
      default: e.id === this.defaultEngine,
      available: e.unavailable() === undefined
    }
  }

  /** `/v1/models`: OpenAI's list shape plus `available`, `streaming` and `default` per model. */
  models(): { object: "list"; data: Array<Record<string, unknown>> } {
    return { object: "list", data: [...this.engines.values()].map((e) => this.modelObject(e)) }
  }

  /** `/v1/models/{id}`: one model object as listed by `models()`, or undefined for an unknown id. */
  model(id: string): Record<string, unknown> | undefined {
    const e = this.engines.get(id)
    return e ? this.modelObject(e) : undefined
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
    : e instanceof EngineError ? openAIError(e.status, e.message, { code: e.code, param: e.param, ...(e.headers ? { headers: e.headers } : {}) })
    : openAIError(500, "The engine failed.", { code: "internal_error" })
