/**
 * What every engine implements. The gateway owns the busy flag and the HTTP side; an engine
 * turns one valid request into one reply and says when it is free again (`settled`).
 */
import type { AnyRequest, Operation } from "./OpenAI.ts"

/** A reply sent as one body: `body` is bytes to send verbatim or a JS value to JSON-encode. */
export interface JsonReply {
  readonly type: "json"
  readonly status: number
  readonly body: Uint8Array | unknown
  readonly headers?: Record<string, string>
}

/**
 * A server-sent-event reply (status 200): `events` yields already-framed SSE bytes and ends
 * after `data: [DONE]`. Errors after the first byte are yielded as a `data: {"error":...}`
 * event by the engine itself, so iteration never throws.
 */
export interface SseReply {
  readonly type: "sse"
  readonly events: AsyncIterable<Uint8Array>
}

export type Reply = JsonReply | SseReply

/** Callbacks an engine calls while generating, for metrics. */
export interface GenerationHooks {
  /** The first generated token (or upstream byte of the reply) arrived. */
  readonly firstToken: () => void
  /** `n` more tokens were generated. */
  readonly tokens: (n: number) => void
}

/**
 * One generation in flight. `reply` resolves when the status is known (rejects only with an
 * `HttpError`-convertible `EngineError`); `settled` resolves (never rejects) once the engine has
 * stopped working on it, which is when the gateway frees the engine.
 */
export interface Generation {
  readonly reply: Promise<Reply>
  readonly settled: Promise<void>
}

/**
 * A failure an engine reports before the first byte: becomes an OpenAI error response
 * (Gateway.ts `toHttpError`). A plain `Error` rather than a `Schema.TaggedError`: the engine's
 * worker thread loads this module and no Effect, and the status differs per refusal.
 */
export class EngineError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | null = null,
    readonly param: string | null = null,
    readonly headers?: Record<string, string>
  ) {
    super(message)
  }
}

/**
 * Why an engine is not serving. `retryable`: a retry can succeed without anyone acting (the model
 * is still loading); otherwise (file missing, load failed, upstream refusing connections) the
 * 503 tells clients not to retry (`x-should-retry: false`).
 */
export interface Unavailable {
  readonly reason: string
  readonly retryable: boolean
}

/** An engine as the gateway sees it. */
export interface Engine {
  readonly id: string
  readonly kind: "llama-cpp" | "upstream"
  /** Short engine description for `/status` (`llama-cpp/cpu`, `upstream`). */
  readonly label: string
  readonly streaming: boolean
  /** Undefined while serving; otherwise why not (loading, model file missing, no GPU build, upstream refusing connections). */
  readonly unavailable: () => Unavailable | undefined
  /**
   * The 400 for a request naming a field this engine cannot honour (or, for `embeddings`, an
   * engine without an embedding model), or undefined. Synchronous and cheap (no tokenizing): it
   * runs before the busy check, on the fast path too. `op` defaults to `chat`.
   */
  readonly refuse: (req: AnyRequest, op?: Operation) => EngineError | undefined
  /**
   * Most tokens `req` may generate, all choices together, when the engine knows it (for the busy
   * 503's Retry-After); undefined when only the backend knows (an upstream without a limit).
   */
  readonly completionBudget: (req: AnyRequest, op?: Operation) => number | undefined
  /**
   * Starts a generation (or an embedding) for a validated request of operation `op` (default
   * `chat`; `req` is then a ChatRequest, else a CompletionRequest or EmbeddingRequest). Called
   * only while the engine is free; must not throw. `signal` aborts it (client gone): the engine
   * stops and settles promptly. `raw` is the request body exactly as received (JSON text), for
   * engines that forward it.
   */
  readonly generate: (req: AnyRequest, signal: AbortSignal, hooks: GenerationHooks, raw?: string, op?: Operation) => Generation
  /** Cache and memory figures for `/healthz` (free-form JSON). */
  readonly health: () => Promise<Record<string, unknown>>
  /** Releases the model and connections; idempotent. */
  readonly close: () => Promise<void>
}

/**
 * A single-consumer async queue of byte chunks: the bridge from callback-style producers
 * (node-llama-cpp's `onTextChunk`, socket events) to an `AsyncIterable` the HTTP layer pulls.
 * `onCancel` runs when the consumer stops early (client disconnected).
 */
export class ByteChannel implements AsyncIterable<Uint8Array> {
  private readonly queue: Uint8Array[] = []
  private waiting: ((r: IteratorResult<Uint8Array>) => void) | undefined
  private ended = false

  constructor(private readonly onCancel: () => void) {}

  /** Queues a chunk; ignored after `end`. */
  push(chunk: Uint8Array): void {
    if (this.ended) return
    const w = this.waiting
    if (w) { this.waiting = undefined; w({ value: chunk, done: false }) } else this.queue.push(chunk)
  }

  /** No more chunks: the consumer sees the end after draining the queue. */
  end(): void {
    if (this.ended) return
    this.ended = true
    const w = this.waiting
    if (w && this.queue.length === 0) { this.waiting = undefined; w({ value: undefined, done: true }) }
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return {
      next: () => {
        const chunk = this.queue.shift()
        if (chunk) return Promise.resolve({ value: chunk, done: false })
        if (this.ended) return Promise.resolve({ value: undefined, done: true })
        return new Promise((resolve) => { this.waiting = resolve })
      },
      return: () => {
        if (!this.ended) { this.ended = true; this.queue.length = 0; this.onCancel() }
        return Promise.resolve({ value: undefined, done: true })
      }
    }
  }
}
