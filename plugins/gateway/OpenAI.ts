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
  temperature: nullable(Schema.Number.pipe(Schema.between(0, 2))),
  top_p: nullable(Schema.Number.pipe(Schema.greaterThan(0), Schema.lessThanOrEqualTo(1))),
  seed: nullable(Schema.Int.pipe(Schema.greaterThanOrEqualTo(0))),
  stream: nullable(Schema.Boolean),
  stream_options: nullable(Schema.Struct({ include_usage: Schema.optional(Schema.Boolean) }, Rest)),
  stop: nullable(Schema.Union(Schema.String, Schema.Array(Schema.String).pipe(Schema.maxItems(4)))),
  presence_penalty: nullable(Schema.Number.pipe(Schema.between(-2, 2))),
  frequency_penalty: nullable(Schema.Number.pipe(Schema.between(-2, 2))),
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

/** The spec's HTTPValidationError (FastAPI shape). */
export const HTTPValidationError = Schema.Struct({
  detail: Schema.Array(Schema.Struct({
    loc: Schema.Array(Schema.Union(Schema.String, Schema.Number)),
    msg: Schema.String,
    type: Schema.String
  }))
}).annotations({ identifier: "HTTPValidationError" })

/** OpenAI's error body. */
export const OpenAIErrorBody = Schema.Struct({
  error: Schema.Struct({
    message: Schema.String,
    type: Schema.String,
    param: Schema.NullOr(Schema.String),
    code: Schema.NullOr(Schema.String)
  })
}).annotations({ identifier: "OpenAIError" })

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

/** A `chat.completion` object; `created` in Unix seconds. */
export const completion = (id: string, created: number, model: string, content: string, finish: FinishReason, usage: Usage) => ({
  id,
  object: "chat.completion" as const,
  created,
  model,
  system_fingerprint: null,
  choices: [{ index: 0, message: { role: "assistant" as const, content }, logprobs: null, finish_reason: finish }],
  usage
})

/** One `chat.completion.chunk`; `usage` is present (null or counts) only when the client asked for it. */
export const chunk = (
  id: string,
  created: number,
  model: string,
  choices: ReadonlyArray<{ delta: Record<string, unknown>; finish_reason: FinishReason | null }>,
  usage?: Usage | null
) => ({
  id,
  object: "chat.completion.chunk" as const,
  created,
  model,
  system_fingerprint: null,
  choices: choices.map((c, index) => ({ index, delta: c.delta, logprobs: null, finish_reason: c.finish_reason })),
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
