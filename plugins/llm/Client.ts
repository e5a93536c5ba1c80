/**
 * The chat client every language-model operation uses: an OpenAI-compatible chat completions
 * API reached with the `openai` SDK, by default the platform's own gateway (resolved at call
 * time, since listeners are bound after `setup`), or any `base_url`.
 *
 * Failures become `JobFailure`s whose message starts with the operation's name: HTTP statuses by
 * the jobs contract's rules (5xx/429 NETWORK_ERROR, 408 TIMEOUT, other 4xx REMOTE_ERROR), our
 * deadline TIMEOUT, an unreachable server NETWORK_ERROR, a cancel CANCELLED, and a structured
 * answer that does not parse or fit its Schema REMOTE_ERROR.
 */
import * as Either from "effect/Either"
import * as JSONSchema from "effect/JSONSchema"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import OpenAI from "openai"
import type { ListenerInfo } from "../../core/Plugin.ts"
import { abortFailure, JobFailure, statusFailure } from "../jobs/Contract.ts"
import { type LlmConfig, llmConfigFields } from "./Config.ts"

export { type LlmConfig, llmConfigFields }

/** Per-call overrides an operation takes from its params (`base_url`, `model`); null/absent: the config's. */
export interface CallOverrides {
  readonly baseUrl?: string | null
  readonly model?: string | null
}

/** What a chat client is made of. */
export interface ChatClientOptions {
  /** API base URL (`…/v1`); null: `gateway()` at call time. */
  readonly baseUrl: string | null
  /** The gateway's base URL (`http://host:port/v1`), or undefined when no gateway listens. */
  readonly gateway: () => string | undefined
  /** Named in the failure when `gateway()` gives nothing. */
  readonly gatewayListener: string
  readonly apiKey: string
  readonly model: string
  readonly timeoutMs: number
  readonly maxRetries: number
  readonly maxInputChars: number
  readonly maxTokens: number | null
}

/** One request: a system and a user message, sent with temperature 0. */
export interface ChatCall extends CallOverrides {
  /** The operation name, first word of every failure message. */
  readonly op: string
  readonly system: string
  readonly user: string
  readonly signal: AbortSignal
}

/**
 * A structured answer: `name` is the `json_schema.name` sent (servers and the test fixture know
 * the schema by it), `schema` decodes the answer and gives the JSON Schema sent (strict), `what`
 * names the shape in a parse failure ("a list of entities").
 */
export interface Structured<A> {
  readonly name: string
  readonly what: string
  readonly schema: Schema.Schema<A, any>
}

/** The chat client of an op: free text or structured answers, failures as `JobFailure`s. */
export interface ChatClient {
  readonly options: ChatClientOptions
  /** The API base URL a call with `over` goes to; rejects with a `JobFailure` naming `op` when no gateway listens. */
  readonly endpoint: (op: string, over?: CallOverrides) => string
  /** The model's answer text, trimmed. */
  readonly text: (call: ChatCall) => Promise<string>
  /** The model's answer as JSON decoded with `structured.schema` (sent as a strict `json_schema` response format). */
  readonly json: <A>(call: ChatCall, structured: Structured<A>) => Promise<A>
}

/** `http://host:port/v1` of a bound listener; a wildcard bind address is reached on loopback. */
export const gatewayUrlOf = (l: ListenerInfo | undefined): string | undefined => {
  if (!l) return undefined
  const host = l.host === "0.0.0.0" || l.host === "" ? "127.0.0.1" : l.host === "::" ? "[::1]" : null
  return host === null ? `${l.url}/v1` : `http://${host}:${l.port}/v1`
}

/**
 * The client of a decoded config; `listener` resolves bound listeners (the plugin context's
 * `listenerInfo` or `PlatformInfo.listener`), asked again at every call.
 */
export const chatClientFor = (c: LlmConfig, listener: (name: string) => ListenerInfo | undefined): ChatClient =>
  makeChatClient({
    baseUrl: c.base_url,
    gateway: () => gatewayUrlOf(listener(c.gateway_listener)),
    gatewayListener: c.gateway_listener,
    apiKey: c.api_key,
    model: c.model,
    timeoutMs: Math.round(c.timeout_s * 1000),
    maxRetries: c.max_retries,
    maxInputChars: c.max_input_chars,
    maxTokens: c.max_tokens
  })

/** The JSON Schema of a structured answer as sent: draft-07 output of `JSONSchema.make` without `$schema`. */
export const responseSchema = (schema: Schema.Schema<any, any>): Record<string, unknown> => {
  const { $schema: _, ...rest } = JSONSchema.make(schema) as unknown as Record<string, unknown>
  return rest
}

/**
 * The JSON text inside an answer: the whole answer, or the body of a ```json fence (small models
 * fence their JSON even when a response format asked for bare JSON).
 */
const jsonText = (answer: string): string => {
  const fenced = /^\s*```(?:json)?\s*\n([\s\S]*?)\n?```\s*$/i.exec(answer)
  return (fenced ? fenced[1]! : answer).trim()
}

const clip = (s: string, n = 200) => (s.length > n ? `${s.slice(0, n)}…` : s)

/** Builds a client; `OpenAI` instances are kept per base URL (their keep-alive connections too). */
export const makeChatClient = (options: ChatClientOptions): ChatClient => {
  const sdks = new Map<string, OpenAI>()
  const sdk = (baseURL: string) => {
    let s = sdks.get(baseURL)
    if (!s) sdks.set(baseURL, (s = new OpenAI({ baseURL, apiKey: options.apiKey, timeout: options.timeoutMs, maxRetries: options.maxRetries })))
    return s
  }

  const endpoint = (op: string, over?: CallOverrides): string => {
    const explicit = over?.baseUrl ?? options.baseUrl
    if (explicit) return explicit.replace(/\/+$/, "")
    const g = options.gateway()
    if (!g) {
      throw new JobFailure("VALIDATION_ERROR", `${op}: no model API is configured: base_url is null and no gateway listens on listener "${options.gatewayListener}" (enable the gateway plugin or set base_url)`, false)
    }
    return g
  }

  /**
   * Maps an SDK error to a `JobFailure`; `where` names the server in the message. `signal` is the
   * job's (a cancel), `deadline` the call's own (`timeoutMs` over all attempts).
   */
  const failure = (op: string, err: unknown, signal: AbortSignal, deadline: AbortSignal, where: string): JobFailure => {
    if (err instanceof JobFailure) return err
    if (signal.aborted) {
      const f = abortFailure(signal)
      return f.kind === "CANCELLED" ? new JobFailure("CANCELLED", `${op}: ${f.message}`, false) : new JobFailure(f.kind, `${op}: ${f.message}`, f.retryable)
    }
    if (deadline.aborted || err instanceof OpenAI.APIConnectionTimeoutError) return new JobFailure("TIMEOUT", `${op}: the model at ${where} did not answer within ${options.timeoutMs / 1000} s`)
    if (err instanceof OpenAI.APIConnectionError) {
      const cause = (err.cause as { code?: string; message?: string } | undefined)
      return new JobFailure("NETWORK_ERROR", `${op}: cannot reach the model at ${where}: ${cause?.code ?? cause?.message ?? err.message}`)
    }
    if (err instanceof OpenAI.APIError && err.status !== undefined) {
      const detail = (err.error as { message?: unknown } | undefined)?.message
      return statusFailure(err.status, `${op}: the model at ${where}`, clip(typeof detail === "string" ? detail : err.message))
    }
    return new JobFailure("REMOTE_ERROR", `${op}: the model at ${where} failed: ${err instanceof Error ? err.message : String(err)}`)
  }

  /** One completion; resolves its first choice's content and finish reason. */
  const complete = async (call: ChatCall, responseFormat?: OpenAI.ChatCompletionCreateParams["response_format"]) => {
    const base = endpoint(call.op, call)
    const where = `${base}/chat/completions`
    // One deadline over every attempt: the SDK's own timeout is per attempt, and it retries timeouts.
    const deadline = AbortSignal.timeout(options.timeoutMs)
    const signal = AbortSignal.any([call.signal, deadline])
    if (call.signal.aborted) throw failure(call.op, new OpenAI.APIUserAbortError(), call.signal, deadline, where)
    const request = sdk(base).chat.completions.create({
      model: call.model ?? options.model,
      temperature: 0,
      messages: [{ role: "system", content: call.system }, { role: "user", content: call.user }],
      ...(options.maxTokens !== null ? { max_tokens: options.maxTokens } : {}),
      ...(responseFormat ? { response_format: responseFormat } : {})
    }, { signal, ...(options.apiKey ? {} : { headers: { Authorization: null } }) })
    // The SDK sleeps between retries without watching the signal: the race makes a cancel or the
    // deadline land at once (the pending retry then sees the aborted signal and sends nothing).
    let onAbort!: () => void
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(new OpenAI.APIUserAbortError())
      signal.addEventListener("abort", onAbort, { once: true })
    })
    try {
      const res = await Promise.race([request, aborted])
      const choice = res.choices?.[0]
      if (!choice || typeof choice.message?.content !== "string") {
        throw new JobFailure("REMOTE_ERROR", `${call.op}: the model at ${where} answered no message content`)
      }
      return { content: choice.message.content, finish: choice.finish_reason }
    } catch (e) {
      throw failure(call.op, e, call.signal, deadline, where)
    } finally {
      signal.removeEventListener("abort", onAbort)
      request.catch(() => undefined)
    }
  }

  return {
    options,
    endpoint,
    text: async (call) => (await complete(call)).content.trim(),
    json: async <A>(call: ChatCall, structured: Structured<A>): Promise<A> => {
      const { content, finish } = await complete(call, {
        type: "json_schema",
        json_schema: { name: structured.name, strict: true, schema: responseSchema(structured.schema) }
      })
      const cut = finish === "length" ? " (the answer was cut at the completion token limit)" : ""
      const bad = (detail: string) =>
        new JobFailure("REMOTE_ERROR", `${call.op}: the model's answer did not parse as ${structured.what}: ${detail}${cut}`)
      let value: unknown
      try {
        value = JSON.parse(jsonText(content))
      } catch (e) {
        throw bad(`${(e as Error).message}; the answer began ${JSON.stringify(clip(content, 120))}`)
      }
      const decoded = Schema.decodeUnknownEither(structured.schema)(value, { onExcessProperty: "ignore" })
      if (Either.isLeft(decoded)) throw bad(clip(ParseResult.TreeFormatter.formatErrorSync(decoded.left).replace(/\s+/g, " "), 400))
      return decoded.right
    }
  }
}
