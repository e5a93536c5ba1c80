/**
 * The requests a llama-cpp engine refuses before any work (400 naming the field), and the token
 * budget behind its busy 503's Retry-After: pure functions of the engine's config and the request,
 * so the gateway's thread answers them without asking the engine's worker thread.
 */
import type { LlamaCppEngineConfig } from "./Config.ts"
import { EngineError } from "./Engine.ts"
import type { AnyRequest, ChatRequest, CompletionRequest, Operation } from "./OpenAI.ts"
import { requestedCompletionTokens } from "./Wire.ts"

/** An OpenAI function tool (unvalidated client input). */
export interface ToolIn { type?: unknown; function?: { name?: unknown; description?: unknown; parameters?: unknown } }

export const unsupported = (param: string, what: string) =>
  new EngineError(400, `\`${param}\` is not supported by this model: ${what}.`, "unsupported_parameter", param)

export const present = (v: unknown): boolean => v !== undefined && v !== null

/**
 * OpenAI request fields a llama-cpp engine cannot honour and that would change what the client
 * gets back: refused with a 400 naming the field rather than silently dropped. (Fields with no
 * effect on the reply, such as `user`, `metadata`, `store`, are accepted and ignored.)
 */
export const refuseUnsupported = (req: ChatRequest): EngineError | undefined => {
  const r = req as Record<string, unknown>
  const list = (v: unknown) => Array.isArray(v) && v.length > 0
  const toolsRefused = refuseTools(r)
  if (toolsRefused) return toolsRefused
  // The legacy spelling of tools: clients that still send it get told to use `tools`.
  if (list(r.functions)) return unsupported("functions", "send `tools` instead (legacy `functions` is not supported)")
  if (present(r.function_call) && r.function_call !== "none" && r.function_call !== "auto") return unsupported("function_call", "this engine does not call functions")
  if (req.logprobs === true) return unsupported("logprobs", "log probabilities are not returned")
  if (present(req.top_logprobs)) return unsupported("top_logprobs", "log probabilities are not returned")
  if (present(r.audio)) return unsupported("audio", "this engine produces text only")
  if (Array.isArray(r.modalities) && r.modalities.some((m) => m !== "text")) return unsupported("modalities", "this engine produces text only")
  if (present(r.web_search_options)) return unsupported("web_search_options", "this engine does not search the web")
  if (present(r.reasoning_effort)) return unsupported("reasoning_effort", "this is not a reasoning model")
  if (present(r.verbosity)) return unsupported("verbosity", "output verbosity cannot be set")
  for (const m of req.messages) {
    if (Array.isArray(m.content) && m.content.some((p) => p.type !== "text")) {
      return unsupported("messages", "content parts other than `text` (images, audio, files) cannot be read")
    }
  }
  return undefined
}

const NAME = /^[A-Za-z0-9_-]{1,64}$/

/**
 * `tools`, `tool_choice` and `parallel_tool_calls` checked for shape (OpenAI's rules: function
 * tools only, names of 1-64 letters, digits, `_` or `-`, distinct; a named `tool_choice` must be
 * one of them); a 400 naming the field, or undefined.
 */
const refuseTools = (r: Record<string, unknown>): EngineError | undefined => {
  const invalid = (param: string, message: string) => new EngineError(400, message, "invalid_value", param)
  const tools = r.tools
  const names: string[] = []
  if (present(tools)) {
    if (!Array.isArray(tools)) return invalid("tools", "`tools` must be an array of function tools.")
    for (const [i, t] of (tools as ToolIn[]).entries()) {
      if (t?.type !== "function" || typeof t.function !== "object" || t.function === null) return unsupported(`tools[${i}]`, "only tools of type `function` can be called")
      const name = t.function.name
      if (typeof name !== "string" || !NAME.test(name)) return invalid(`tools[${i}].function.name`, "A function name is 1 to 64 letters, digits, underscores or dashes.")
      if (names.includes(name)) return invalid(`tools[${i}].function.name`, `Function \`${name}\` is listed twice in \`tools\`.`)
      const params = t.function.parameters
      if (present(params) && (typeof params !== "object" || Array.isArray(params))) return invalid(`tools[${i}].function.parameters`, "`parameters` must be a JSON Schema object.")
      names.push(name)
    }
  }
  const choice = r.tool_choice
  if (present(choice)) {
    if (typeof choice === "string") {
      if (!["none", "auto", "required"].includes(choice)) return invalid("tool_choice", "`tool_choice` is `none`, `auto`, `required` or a named function.")
      if (choice === "required" && names.length === 0) return invalid("tool_choice", "`tool_choice: required` needs `tools`.")
    } else {
      const name = (choice as { type?: unknown; function?: { name?: unknown } }).function?.name
      if ((choice as { type?: unknown }).type !== "function" || typeof name !== "string") return invalid("tool_choice", "`tool_choice` is `none`, `auto`, `required` or `{\"type\": \"function\", \"function\": {\"name\": ...}}`.")
      if (!names.includes(name)) return invalid("tool_choice", `\`tool_choice\` names function \`${name}\`, which is not in \`tools\`.`)
    }
  }
  if (names.length > 0 && present(r.response_format) && (r.response_format as { type?: unknown }).type !== "text") {
    return unsupported("response_format", "a response format cannot be combined with `tools` on this engine (both constrain the output by grammar)")
  }
  return undefined
}

/** Text completion fields a llama-cpp engine cannot honour: a 400 naming the field, or undefined. */
export const refuseCompletion = (req: CompletionRequest): EngineError | undefined => {
  if (req.echo === true) return unsupported("echo", "the prompt is not echoed")
  if (present(req.suffix) && req.suffix !== "") return unsupported("suffix", "insertion (fill-in-the-middle) is not supported")
  if (present(req.best_of) && req.best_of !== 1) return unsupported("best_of", "only `best_of: 1` is supported")
  if (present(req.logprobs)) return unsupported("logprobs", "log probabilities are not returned")
  return undefined
}

/**
 * The per-request refusals of a llama-cpp engine, by operation: pure functions of its config and
 * the request, so the gateway's thread answers them without asking the engine's worker.
 */
export const refuseFor = (id: string, config: LlamaCppEngineConfig, req: AnyRequest, op: Operation): EngineError | undefined => {
  if (op === "chat") return refuseUnsupported(req as ChatRequest)
  if (op === "completions") return refuseCompletion(req as CompletionRequest)
  if (!config.embedding_model_path) {
    return new EngineError(400, `Model \`${id}\` has no embedding model (set \`embedding_model_path\` on the engine).`, "model_not_supported", "model")
  }
  return undefined
}

/** Most tokens a request may generate (all choices): the Retry-After basis of the busy 503. */
export const budgetFor = (config: LlamaCppEngineConfig, req: AnyRequest, op: Operation): number | undefined => {
  if (op === "embeddings") return undefined
  const n = typeof req.n === "number" ? req.n : 1
  const prompts = op === "completions" && Array.isArray((req as CompletionRequest).prompt) && typeof (req as CompletionRequest).prompt[0] !== "number" ? ((req as CompletionRequest).prompt as unknown[]).length : 1
  return (requestedCompletionTokens(req) ?? (op === "completions" ? 16 : config.max_tokens)) * n * prompts
}

