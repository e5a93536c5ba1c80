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
export const requestedCompletionTokens = (req: ChatRequest): number | undefined =>
  req.max_completion_tokens ?? req.max_tokens ?? undefined

/** A fresh completion id (`chatcmpl-` + 24 hex digits). */
export const completionId = (): string => `chatcmpl-${randomBytes(12).toString("hex")}`

/** Token counts of one completion. */
export interface Usage {
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly total_tokens: number
}

/** OpenAI's finish reasons the gateway produces. */
export type FinishReason = "stop" | "length"

/** One generated choice: its text and why it ended. */
export interface Choice {
  readonly text: string
  readonly finish: FinishReason
}

/** A `chat.completion` object with one entry per choice (index order); `created` in Unix seconds. */
export const completion = (id: string, created: number, model: string, choices: ReadonlyArray<Choice>, usage: Usage) => ({
  id,
  object: "chat.completion" as const,
  created,
  model,
  system_fingerprint: null,
  choices: choices.map((c, index) => ({ index, message: { role: "assistant" as const, content: c.text }, logprobs: null, finish_reason: c.finish })),
  usage
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
