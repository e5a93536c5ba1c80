/**
 * The OpenAI wire shapes an engine writes: completion, chunk, text completion and embedding
 * builders, error bodies and server-sent events. Free of Effect and Schema so that an engine's
 * worker thread loads it in milliseconds (the request Schemas live in `OpenAI.ts`).
 */
import { randomBytes } from "node:crypto"
import type { AnyRequest, ChatMessage, ChatRequest } from "./OpenAI.ts"

/** The three operations the gateway serves; each engine runs one at a time, whatever the operation. */
export type Operation = "chat" | "completions" | "embeddings"

/** The OpenAI path of an operation under `/v1` (what an upstream engine forwards to). */
export const operationPath: Record<Operation, string> = { chat: "chat/completions", completions: "completions", embeddings: "embeddings" }

/** `{"error":{message,type,param,code}}` as a JS value. */
export const errorBody = (message: string, type: string, code: string | null, param: string | null = null) =>
  ({ error: { message, type, param, code } })

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
