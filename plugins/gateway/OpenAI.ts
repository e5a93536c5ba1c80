/**
 * The OpenAI wire shapes the gateway speaks: the ChatRequest Schema (spec bounds, unknown fields
 * kept for pass-through), error bodies, and completion / chunk builders.
 */
import * as Schema from "effect/Schema"
import { HttpError } from "../../core/HttpError.ts"
import { errorBody } from "./Wire.ts"

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

/** Sampling fields chat and text completions share, with OpenAI's bounds. */
const sampling = {
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
}

/** llama.cpp server extensions, honoured by llama-cpp engines; -1 (vLLM's spelling of "off") and 0 both disable `top_k`. */
const llamaExtensions = {
  top_k: nullable(Schema.Int.pipe(Schema.greaterThanOrEqualTo(-1))),
  min_p: nullable(Schema.Number.pipe(Schema.between(0, 1)))
}

/** The request body of POST /v1/chat/completions, with the spec's bounds. */
export const ChatRequest = Schema.Struct({
  model: nullable(Schema.String),
  messages: Schema.Array(ChatMessage).pipe(Schema.minItems(1)),
  max_tokens: nullable(Schema.Int.pipe(Schema.greaterThanOrEqualTo(1))),
  // What the SDK and newer clients send instead of `max_tokens`; wins when both are given.
  max_completion_tokens: nullable(Schema.Int.pipe(Schema.greaterThanOrEqualTo(1))),
  ...sampling,
  logprobs: nullable(Schema.Boolean),
  top_logprobs: nullable(Schema.Int.pipe(Schema.between(0, 20))),
  ...llamaExtensions,
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
  ...sampling,
  logprobs: nullable(Schema.Int.pipe(Schema.between(0, 5))),
  echo: nullable(Schema.Boolean),
  suffix: nullable(Schema.String),
  best_of: nullable(Schema.Int.pipe(Schema.between(1, 128))),
  ...llamaExtensions
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

/** A validated request of any operation. */
export type AnyRequest = ChatRequest | CompletionRequest | EmbeddingRequest

// The wire builders, also reachable from here for the gateway's own modules.
export * from "./Wire.ts"
