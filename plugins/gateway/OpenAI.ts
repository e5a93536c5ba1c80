/**
 * The OpenAI wire shapes the gateway speaks: the ChatRequest Schema (spec bounds, unknown fields
 * kept for pass-through), error bodies, and completion / chunk builders.
 */
import { Schema } from "effect"
import { randomBytes } from "node:crypto"
import { HttpError } from "../../core/HttpError.ts"

/** Extra members are kept (the spec: unknown fields pass through to the backend untouched). */
const Rest = Schema.Record({ key: Schema.String, value: Schema.Unknown })

const ContentPart = Schema.Struct({ type: Schema.String, text: Schema.optional(Schema.String) }, Rest)

/** One message. `role` defaults to `user` and `content` to "" when absent (spec). */
export const ChatMessage = Schema.Struct({
  role: Schema.optional(Schema.Literal("system", "user", "assistant", "tool")),
  // The spec says string; null (assistant tool calls) and text parts are what real clients send.
  content: Schema.optional(Schema.Union(Schema.String, Schema.Null, Schema.Array(ContentPart)))
}, Rest).annotations({ identifier: "ChatMessage" })
export type ChatMessage = Schema.Schema.Type<typeof ChatMessage>

const nullable = <A, I>(s: Schema.Schema<A, I>) => Schema.optional(Schema.NullOr(s))

/** The request body of POST /v1/chat/completions, with the spec's bounds. */
export const ChatRequest = Schema.Struct({
  model: nullable(Schema.String),
  messages: Schema.Array(ChatMessage).pipe(Schema.minItems(1)),
  max_tokens: nullable(Schema.Int.pipe(Schema.greaterThanOrEqualTo(1))),
  // What the SDK and newer clients send instead of `max_tokens`; wins when both are given.
  max_completion_tokens: nullable(Schema.Int.pipe(Schema.greaterThanOrEqualTo(1))),
  n: nullable(Schema.Int.pipe(Schema.between(1, 128))),
  temperature: nullable(Schema.Number.pipe(Schema.between(0, 2))),
  top_p: nullable(Schema.Number.pipe(Schema.greaterThan(0), Schema.lessThanOrEqualTo(1))),
  seed: nullable(Schema.Int.pipe(Schema.greaterThanOrEqualTo(0))),
  stream: nullable(Schema.Boolean),
  stream_options: nullable(Schema.Struct({ include_usage: Schema.optional(Schema.Boolean) }, Rest)),
  stop: nullable(Schema.Union(Schema.String, Schema.Array(Schema.String).pipe(Schema.maxItems(4)))),
  presence_penalty: nullable(Schema.Number.pipe(Schema.between(-2, 2))),
  frequency_penalty: nullable(Schema.Number.pipe(Schema.between(-2, 2))),
  logit_bias: nullable(Schema.Record({ key: Schema.String.pipe(Schema.pattern(/^\d+$/)), value: Schema.Number.pipe(Schema.between(-100, 100)) })),
  logprobs: nullable(Schema.Boolean),
  top_logprobs: nullable(Schema.Int.pipe(Schema.between(0, 20))),
  // llama.cpp server extensions, honoured by llama-cpp engines.
  // -1 (vLLM's spelling of "off") and 0 both disable it.
  top_k: nullable(Schema.Int.pipe(Schema.greaterThanOrEqualTo(-1))),
  min_p: nullable(Schema.Number.pipe(Schema.between(0, 1))),
  response_format: nullable(Schema.Struct({
    type: Schema.Literal("text", "json_object", "json_schema"),
    json_schema: Schema.optional(Schema.Struct({
      name: Schema.optional(Schema.String),
      schema: Schema.optional(Schema.Unknown),
      strict: Schema.optional(Schema.NullOr(Schema.Boolean))
    }, Rest))
  }, Rest))
}, Rest).annotations({ identifier: "ChatRequest", description: "OpenAI chat completion request; unknown fields pass through" })
export type ChatRequest = Schema.Schema.Type<typeof ChatRequest>

/** A prompt or embedding input: text, texts, one token array, or token arrays (OpenAI's four forms). */
const TextOrTokens = Schema.Union(
  Schema.String,
  Schema.Array(Schema.String).pipe(Schema.minItems(1)),
  Schema.Array(Schema.Int.pipe(Schema.greaterThanOrEqualTo(0))).pipe(Schema.minItems(1)),
  Schema.Array(Schema.Array(Schema.Int.pipe(Schema.greaterThanOrEqualTo(0))).pipe(Schema.minItems(1))).pipe(Schema.minItems(1))
)

/**
 * The request body of POST /v1/completions (OpenAI's legacy text completions), with the same
 * sampling bounds as chat. `max_tokens` defaults to 16, as OpenAI's does.
 */
export const CompletionRequest = Schema.Struct({
  model: nullable(Schema.String),
  prompt: TextOrTokens,
  max_tokens: nullable(Schema.Int.pipe(Schema.greaterThanOrEqualTo(1))),
  n: nullable(Schema.Int.pipe(Schema.between(1, 128))),
  temperature: nullable(Schema.Number.pipe(Schema.between(0, 2))),
  top_p: nullable(Schema.Number.pipe(Schema.greaterThan(0), Schema.lessThanOrEqualTo(1))),
  seed: nullable(Schema.Int.pipe(Schema.greaterThanOrEqualTo(0))),
  stream: nullable(Schema.Boolean),
  stream_options: nullable(Schema.Struct({ include_usage: Schema.optional(Schema.Boolean) }, Rest)),
  stop: nullable(Schema.Union(Schema.String, Schema.Array(Schema.String).pipe(Schema.maxItems(4)))),
  presence_penalty: nullable(Schema.Number.pipe(Schema.between(-2, 2))),
  frequency_penalty: nullable(Schema.Number.pipe(Schema.between(-2, 2))),
  logit_bias: nullable(Schema.Record({ key: Schema.String.pipe(Schema.pattern(/^\d+$/)), value: Schema.Number.pipe(Schema.between(-100, 100)) })),
  logprobs: nullable(Schema.Int.pipe(Schema.between(0, 5))),
  echo: nullable(Schema.Boolean),
  suffix: nullable(Schema.String),
  best_of: nullable(Schema.Int.pipe(Schema.between(1, 128))),
  top_k: nullable(Schema.Int.pipe(Schema.greaterThanOrEqualTo(-1))),
  min_p: nullable(Schema.Number.pipe(Schema.between(0, 1)))
}, Rest).annotations({ identifier: "CompletionRequest", description: "OpenAI text completion request; unknown fields pass through" })
export type CompletionRequest = Schema.Schema.Type<typeof CompletionRequest>

/** The request body of POST /v1/embeddings. */
export const EmbeddingRequest = Schema.Struct({
  model: nullable(Schema.String),
  input: TextOrTokens,
  encoding_format: nullable(Schema.Literal("float", "base64")),
  dimensions: nullable(Schema.Int.pipe(Schema.greaterThanOrEqualTo(1))),
  user: nullable(Schema.String)
}, Rest).annotations({ identifier: "EmbeddingRequest", description: "OpenAI embeddings request; unknown fields pass through" })
export type EmbeddingRequest = Schema.Schema.Type<typeof EmbeddingRequest>

/** The three operations the gateway serves; each engine runs one at a time, whatever the operation. */
export type Operation = "chat" | "completions" | "embeddings"

/** A validated request of any operation. */
export type AnyRequest = ChatRequest | CompletionRequest | EmbeddingRequest

/** The OpenAI path of an operation under `/v1` (what an upstream engine forwards to). */
export const operationPath: Record<Operation, string> = { chat: "chat/completions", completions: "completions", embeddings: "embeddings" }

/** OpenAI's error object: what every OpenAI client reads from a failed request. */
const ErrorObject = Schema.Struct({
  message: Schema.String,
  type: Schema.String,
  param: Schema.NullOr(Schema.String),
  code: Schema.NullOr(Schema.String)
})

/** OpenAI's error body. */
export const OpenAIErrorBody = Schema.Struct({ error: ErrorObject }).annotations({ identifier: "OpenAIError" })

/**
 * The spec's HTTPValidationError (FastAPI shape), plus OpenAI's `error` object beside `detail`
 * naming the first failing field, so OpenAI clients can show what was wrong.
 */
export const HTTPValidationError = Schema.Struct({
  detail: Schema.Array(Schema.Struct({
    loc: Schema.Array(Schema.Union(Schema.String, Schema.Number)),
    msg: Schema.String,
    type: Schema.String
  })),
  error: Schema.optional(ErrorObject)
}).annotations({ identifier: "HTTPValidationError" })

/** `{"error":{message,type,param,code}}` as a JS value. */
export const errorBody = (message: string, type: string, code: string | null, param: string | null = null) =>
  ({ error: { message, type, param, code } })

/**
 * An `HttpError` carrying an OpenAI error body: `status` is the HTTP status, `headers` extra
 * response headers (`Retry-After`, `WWW-Authenticate`).
 */
export const openAIError = (
  status: number,
  message: string,
  opts: { type?: string; code?: string | null; param?: string | null; headers?: Record<string, string> } = {}
): HttpError =>
  new HttpError({
    status,
    body: errorBody(message, opts.type ?? (status >= 500 ? "server_error" : "invalid_request_error"), opts.code ?? null, opts.param ?? null),
    ...(opts.headers ? { headers: opts.headers } : {})
  })

/**
 * The completion length a request asks for: `max_completion_tokens` when given (OpenAI: it
 * supersedes `max_tokens`), else `max_tokens`, else undefined (the engine's default).
 */
export const requestedCompletionTokens = (req: AnyRequest): number | undefined => {
  // Embedding requests have neither field: both read as absent.
  const r = req as ChatRequest
  return r.max_completion_tokens ?? r.max_tokens ?? undefined
}

/** A fresh completion id (`chatcmpl-` + 24 hex digits). */
export const completionId = (): string => `chatcmpl-${randomBytes(12).toString("hex")}`

/** Token counts of one completion. */
export interface Usage {
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly total_tokens: number
}

/** OpenAI's finish reasons the gateway produces. */
export type FinishReason = "stop" | "length" | "tool_calls"

/** One tool call of an assistant message, as OpenAI writes it (`arguments` is JSON text). */
export interface ToolCall {
  readonly id: string
  readonly type: "function"
  readonly function: { readonly name: string; readonly arguments: string }
}

/** One generated choice: its text, the tools it calls, and why it ended. */
export interface Choice {
  readonly text: string
  readonly finish: FinishReason
  readonly toolCalls?: ReadonlyArray<ToolCall>
}

/** A fresh tool call id (`call_` + 24 hex digits). */
export const toolCallId = (): string => `call_${randomBytes(12).toString("hex")}`

/** A `chat.completion` object with one entry per choice (index order); `created` in Unix seconds. */
export const completion = (id: string, created: number, model: string, choices: ReadonlyArray<Choice>, usage: Usage) => ({
  id,
  object: "chat.completion" as const,
  created,
  model,
  system_fingerprint: null,
  choices: choices.map((c, index) => ({
    index,
    // OpenAI: a message that calls tools has `content: null` unless text came before the calls.
    message: c.toolCalls && c.toolCalls.length > 0
      ? { role: "assistant" as const, content: c.text.length > 0 ? c.text : null, tool_calls: c.toolCalls }
      : { role: "assistant" as const, content: c.text },
    logprobs: null,
    finish_reason: c.finish
  })),
  usage
})

/** A `text_completion` object (POST /v1/completions), one entry per choice; `created` in Unix seconds. */
export const textCompletion = (id: string, created: number, model: string, choices: ReadonlyArray<Choice>, usage: Usage) => ({
  id,
  object: "text_completion" as const,
  created,
  model,
  system_fingerprint: null,
  choices: choices.map((c, index) => ({ index, text: c.text, logprobs: null, finish_reason: c.finish })),
  usage
})

/** One streamed `text_completion` event: `text` is the new piece of choice `index`. */
export const textChunk = (id: string, created: number, model: string, choices: ReadonlyArray<{ index: number; text: string; finish_reason: FinishReason | null }>, usage?: Usage | null) => ({
  id,
  object: "text_completion" as const,
  created,
  model,
  system_fingerprint: null,
  choices: choices.map((c) => ({ index: c.index, text: c.text, logprobs: null, finish_reason: c.finish_reason })),
  ...(usage !== undefined ? { usage } : {})
})

/**
 * The embeddings list: one `embedding` per input in input order, each a float array, or its
 * little-endian float32 bytes in base64 when `base64` (what the OpenAI SDKs ask for by default).
 */
export const embeddingList = (model: string, vectors: ReadonlyArray<ReadonlyArray<number>>, promptTokens: number, base64: boolean) => ({
  object: "list" as const,
  data: vectors.map((v, index) => ({
    object: "embedding" as const,
    index,
    embedding: base64 ? Buffer.from(Float32Array.from(v).buffer).toString("base64") : v
  })),
  model,
  usage: { prompt_tokens: promptTokens, total_tokens: promptTokens }
})

/**
 * One `chat.completion.chunk`; `usage` is present (null or counts) only when the client asked
 * for it. `index` is the choice each entry belongs to (n > 1 streams choice after choice).
 */
export const chunk = (
  id: string,
  created: number,
  model: string,
  choices: ReadonlyArray<{ index?: number; delta: Record<string, unknown>; finish_reason: FinishReason | null }>,
  usage?: Usage | null
) => ({
  id,
  object: "chat.completion.chunk" as const,
  created,
  model,
  system_fingerprint: null,
  choices: choices.map((c, i) => ({ index: c.index ?? i, delta: c.delta, logprobs: null, finish_reason: c.finish_reason })),
  ...(usage !== undefined ? { usage } : {})
})

const encoder = new TextEncoder()

/** One server-sent event carrying `data` as JSON, as bytes. */
export const sseData = (data: unknown): Uint8Array => encoder.encode(`data: ${JSON.stringify(data)}\n\n`)

/** The stream terminator event. */
export const SSE_DONE: Uint8Array = encoder.encode("data: [DONE]\n\n")

/** Flattens OpenAI content (string, null or text parts) to text. */
export const contentText = (content: ChatMessage["content"]): string =>
  content == null ? "" : typeof content === "string" ? content : content.map((p) => p.text ?? "").join("")
