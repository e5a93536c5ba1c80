/**
 * The in-process engine: node-llama-cpp over one GGUF file, one context with one sequence.
 *
 * - `device: cpu` memory-maps the (quantised) weights and evaluates on the CPU; the context
 *   size bounds the KV cache. `device: gpu` offloads every layer and needs a GPU build of
 *   llama.cpp (`@node-llama-cpp/linux-x64-cuda`); without one the engine is unavailable.
 * - The sequence is kept between requests, so a prompt that starts like the previous one reuses
 *   its evaluated prefix (the KV cache); `/healthz` reports the hits and tokens reused.
 * - Messages are formatted with the model's own chat template (`tokenizer.chat_template`).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import {
  getLlama,
  getLlamaGpuTypes,
  JinjaTemplateChatWrapper,
  LlamaChat,
  LlamaLogLevel,
  TokenBias,
  type ChatHistoryItem,
  type Llama,
  type LlamaContext,
  type LlamaContextSequence,
  type LlamaGrammar,
  type LlamaModel
} from "node-llama-cpp"
import type { LlamaCppEngineConfig } from "./Config.ts"
import { ByteChannel, EngineError, type Engine, type Generation, type GenerationHooks, type Reply, type Unavailable } from "./Engine.ts"
import {
  chunk,
  completion,
  completionId,
  contentText,
  errorBody,
  requestedCompletionTokens,
  SSE_DONE,
  sseData,
  type ChatRequest,
  type Choice,
  type FinishReason,
  type Usage
} from "./OpenAI.ts"

// One Llama (the native binding and its thread pool) per device for the whole process: loading
// it costs about a second, and engines on the same device can share it.
const llamas = new Map<string, Promise<Llama>>()

const llamaFor = (device: "cpu" | "gpu", maxThreads: number | undefined): Promise<Llama> => {
  const key = `${device}:${maxThreads ?? "auto"}`
  let p = llamas.get(key)
  if (!p) {
    // build: "never": a machine without a prebuilt binary must not start compiling llama.cpp.
    p = getLlama({
      gpu: device === "cpu" ? false : "auto",
      build: "never",
      logLevel: LlamaLogLevel.error,
      ...(maxThreads ? { maxThreads } : {})
    })
    p.catch(() => llamas.delete(key))
    llamas.set(key, p)
  }
  return p
}

/** Longest common prefix length of two token arrays. */
const commonPrefix = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): number => {
  const n = Math.min(a.length, b.length)
  let i = 0
  while (i < n && a[i] === b[i]) i++
  return i
}

/** Maps OpenAI messages to node-llama-cpp's chat history, ending in an open model turn. */
const toHistory = (messages: ChatRequest["messages"]): ChatHistoryItem[] => {
  const history: ChatHistoryItem[] = messages.map((m) => {
    const text = contentText(m.content)
    switch (m.role ?? "user") {
      case "system": return { type: "system", text }
      case "assistant": return { type: "model", response: [text] }
      // Chat history items have no tool role; the result reaches the model as user text.
      default: return { type: "user", text }
    }
  })
  // A trailing assistant message is continued (prefill); otherwise an empty model turn is opened.
  if (history[history.length - 1]?.type !== "model") history.push({ type: "model", response: [] })
  return history
}

const finishOf = (stopReason: string): FinishReason => (stopReason === "maxTokens" ? "length" : "stop")

const unsupported = (param: string, what: string) =>
  new EngineError(400, `\`${param}\` is not supported by this model: ${what}.`, "unsupported_parameter", param)

const present = (v: unknown): boolean => v !== undefined && v !== null

/**
 * OpenAI request fields a llama-cpp engine cannot honour and that would change what the client
 * gets back: refused with a 400 naming the field rather than silently dropped. (Fields with no
 * effect on the reply, such as `user`, `metadata`, `store`, are accepted and ignored.)
 */
export const refuseUnsupported = (req: ChatRequest): EngineError | undefined => {
  const r = req as Record<string, unknown>
  const list = (v: unknown) => Array.isArray(v) && v.length > 0
  if (list(r.tools)) return unsupported("tools", "this engine does not call tools")
  if (present(r.tool_choice) && r.tool_choice !== "none" && r.tool_choice !== "auto") return unsupported("tool_choice", "this engine does not call tools")
  if (list(r.functions)) return unsupported("functions", "this engine does not call functions")
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

/**
 * OpenAI's refusal of a prompt that does not fit: 400 \`context_length_exceeded\` giving the
 * context size, the prompt's tokens and (when the client set one) the completion it asked for.
 */
const contextExceeded = (context: number, prompt: number, completionTokens: number | undefined): EngineError =>
  new EngineError(400, completionTokens === undefined
    ? `This model's maximum context length is ${context} tokens. However, your messages resulted in ${prompt} tokens, which leaves no room for a completion. Please reduce the length of the messages.`
    : `This model's maximum context length is ${context} tokens. However, you requested ${prompt + completionTokens} tokens (${prompt} in the messages, ${completionTokens} in the completion). Please reduce the length of the messages or completion.`,
  "context_length_exceeded", "messages")

/** Prefix-cache counters, for `/healthz`. */
interface CacheStats {
  requests: number
  prefixHits: number
  tokensReused: number
  promptTokens: number
}

/**
 * The llama.cpp engine. `LlamaCppEngine.make` never throws: a missing model file or a failed
 * load leaves the engine registered and unavailable with the reason.
 */
export class LlamaCppEngine implements Engine {
  readonly kind = "llama-cpp" as const
  readonly label: string
  readonly streaming: boolean
  readonly id: string
  /** Resolves when loading finished (successfully or not); for tests and start-up logs. */
  readonly ready: Promise<void>

  private reason: string | undefined = "loading"
  private llama: Llama | undefined
  private model: LlamaModel | undefined
  private context: LlamaContext | undefined
  private sequence: LlamaContextSequence | undefined
  private chat: LlamaChat | undefined
  private closed = false
  private readonly stats: CacheStats = { requests: 0, prefixHits: 0, tokensReused: 0, promptTokens: 0 }

  private constructor(readonly config: LlamaCppEngineConfig, readonly modelPath: string, private readonly log: (line: string) => void) {
    this.id = config.id
    this.streaming = config.streaming
    this.label = `llama-cpp/${config.device}`
    if (!fs.existsSync(modelPath)) {
      this.reason = `model file not found: ${modelPath}`
      log(`gateway: engine ${this.id} unavailable: model file not found: ${modelPath} (download one with \`platform gateway pull URL\`)`)
      this.ready = Promise.resolve()
    } else {
      this.ready = this.load().then(
        () => { this.reason = undefined },
        (e: unknown) => {
          this.reason = `model failed to load: ${e instanceof Error ? e.message : String(e)}`
          log(`gateway: engine ${this.id} unavailable: ${this.reason}`)
        }
      )
    }
  }

  /**
   * Creates the engine and starts loading `config.model_path` (resolved against `configDir`) in
   * the background; `log` receives the one line explaining an unavailable engine.
   */
  static make(config: LlamaCppEngineConfig, configDir: string, log: (line: string) => void): LlamaCppEngine {
    return new LlamaCppEngine(config, path.resolve(configDir, config.model_path), log)
  }

  private async load(): Promise<void> {
    const c = this.config
    // Asking for a GPU the machine lacks makes getLlama probe every backend for seconds; the
    // supported list answers in milliseconds.
    if (c.device === "gpu" && !(await getLlamaGpuTypes("supported")).some((t) => t !== false)) {
      throw new Error("no GPU was found, or no GPU build of llama.cpp (@node-llama-cpp/linux-x64-cuda) is installed")
    }
    const llama = await llamaFor(c.device, c.threads || undefined)
    if (c.device === "gpu" && llama.gpu === false) {
      throw new Error("no GPU build of llama.cpp (@node-llama-cpp/linux-x64-cuda) is installed, or no GPU was found")
    }
    this.llama = llama
    const model = await llama.loadModel({
      modelPath: this.modelPath,
      // cpu: nothing offloaded, weights memory-mapped so RAM holds only the pages in use;
      // gpu: every layer (and so every weight) resident in VRAM.
      gpuLayers: c.device === "gpu" ? "max" : 0,
      useMmap: true
    })
    if (this.closed) { await model.dispose(); return }
    this.model = model
    const context = await model.createContext({
      // One token more than the advertised context: LlamaChat keeps a free slot after the
      // prompt, so without it a prompt of context_size - 1 tokens with max_tokens 1 (a request
      // that fits) would be shifted out of the window. llama.cpp rounds the cache up anyway.
      contextSize: c.context_size + 1,
      batchSize: c.batch_size,
      sequences: 1,
      ...(c.threads ? { threads: c.threads } : {})
    })
    this.context = context
    this.sequence = context.getSequence()
    const template = model.fileInfo.metadata?.tokenizer?.chat_template
    let chatWrapper: "auto" | JinjaTemplateChatWrapper = "auto"
    if (typeof template === "string" && template.length > 0) {
      try {
        chatWrapper = new JinjaTemplateChatWrapper({ template, tokenizer: model.tokenizer })
      } catch (e) {
        // A template the Jinja subset cannot run: node-llama-cpp's auto-detection from the same
        // metadata is the next best thing.
        this.log(`gateway: engine ${this.id}: chat template not usable (${e instanceof Error ? e.message : e}); using auto-detected format`)
      }
    }
    this.chat = new LlamaChat({ contextSequence: this.sequence, chatWrapper })
  }

  unavailable = (): Unavailable | undefined =>
    this.reason === undefined ? undefined : { reason: this.reason, retryable: this.reason === "loading" }

  refuse = (req: ChatRequest): EngineError | undefined => refuseUnsupported(req)

  completionBudget = (req: ChatRequest): number => (requestedCompletionTokens(req) ?? this.config.max_tokens) * (req.n ?? 1)

  /** The prompt's tokens exactly as LlamaChat will evaluate them: the chat template rendered, tokenized. */
  private promptTokens(history: ChatHistoryItem[]): number {
    return this.chat!.chatWrapper.generateContextState({ chatHistory: history }).contextText.tokenize(this.model!.tokenizer).length
  }

  /** `logit_bias` as node-llama-cpp's TokenBias (-100 bans the token); 400 for ids outside the vocabulary. */
  private tokenBias(bias: Readonly<Record<string, number>>): TokenBias {
    const vocab = (this.model!.fileInfo.metadata as { tokenizer?: { ggml?: { tokens?: ReadonlyArray<string> } } } | undefined)?.tokenizer?.ggml?.tokens?.length
    const out = new TokenBias(this.model!.tokenizer)
    for (const [key, value] of Object.entries(bias)) {
      const token = Number(key)
      // An id past the vocabulary aborts llama.cpp (std::out_of_range): never hand one over.
      if (vocab === undefined || !Number.isSafeInteger(token) || token >= vocab) {
        throw new EngineError(400, `\`logit_bias\` names token ${key}, which is not in this model's vocabulary (${vocab ?? "unknown"} tokens).`, "invalid_value", "logit_bias")
      }
      out.set(token as never, value <= -100 ? "never" : { logit: value })
    }
    return out
  }

  generate = (req: ChatRequest, signal: AbortSignal, hooks: GenerationHooks): Generation => {
    const chat = this.chat!, sequence = this.sequence!, llama = this.llama!
    const id = completionId()
    const created = Math.floor(Date.now() / 1000)
    const model = this.id
    let grammar: LlamaGrammar | undefined
    const stream = req.stream === true
    const includeUsage = stream && req.stream_options?.include_usage === true
    const n = req.n ?? 1
    const history = toHistory(req.messages)
    const before = sequence.contextTokens
    const outBefore = sequence.tokenMeter.usedOutputTokens
    let first = true
    const channel = stream ? new ByteChannel(() => { /* early stop: the gateway aborts `signal` */ }) : undefined
    let promptTokens = 0
    let maxTokens = 0
    let tokenBias: TokenBias | undefined

    // Everything that can refuse the request runs before a stream commits to 200: the prompt
    // against the context (counted with the engine's own template and tokenizer), then the grammar.
    const prepare = async (): Promise<void> => {
      const contextSize = this.config.context_size
      promptTokens = this.promptTokens(history)
      const requested = requestedCompletionTokens(req)
      if (requested !== undefined) {
        if (promptTokens + requested > contextSize) throw contextExceeded(contextSize, promptTokens, requested)
        maxTokens = requested
      } else {
        // No limit asked: the engine's default, shortened to the room the prompt leaves.
        if (promptTokens >= contextSize) throw contextExceeded(contextSize, promptTokens, undefined)
        maxTokens = Math.min(this.config.max_tokens, contextSize - promptTokens)
      }
      if (req.logit_bias && Object.keys(req.logit_bias).length > 0) tokenBias = this.tokenBias(req.logit_bias)
      const format = req.response_format
      if (format?.type === "json_object") grammar = await llama.getGrammarFor("json")
      else if (format?.type === "json_schema") {
        const schema = format.json_schema?.schema
        if (typeof schema !== "object" || schema === null) {
          throw new EngineError(400, "response_format.json_schema.schema must be a JSON Schema object", "invalid_value", "response_format")
        }
        try {
          grammar = await llama.createGrammarForJsonSchema(schema as never)
        } catch (e) {
          throw new EngineError(400, `unsupported JSON schema: ${e instanceof Error ? e.message : e}`, "invalid_value", "response_format")
        }
      }
    }

    /** Generates choice `index`; n > 1 runs the choices one after another on the one sequence. */
    const generateChoice = async (index: number): Promise<Choice> => {
      const stop = req.stop == null ? [] : typeof req.stop === "string" ? [req.stop] : req.stop
      const presence = req.presence_penalty ?? 0, frequency = req.frequency_penalty ?? 0
      const res = await chat.generateResponse(history, {
        signal,
        maxTokens,
        // OpenAI's defaults (temperature 1, top_p 1), not node-llama-cpp's greedy default.
        temperature: req.temperature ?? 1,
        topP: req.top_p ?? 1,
        ...(req.top_k != null ? { topK: Math.max(0, req.top_k) } : {}),
        ...(req.min_p != null ? { minP: req.min_p } : {}),
        // Each choice its own draw: a seeded request stays reproducible, choice by choice.
        ...(req.seed != null ? { seed: req.seed + index } : {}),
        ...(stop.length > 0 ? { customStopTriggers: stop.filter((s) => s.length > 0) } : {}),
        // OpenAI has no multiplicative repeat penalty, so it stays off (penalty 1).
        repeatPenalty: presence !== 0 || frequency !== 0 ? { penalty: 1, presencePenalty: presence, frequencyPenalty: frequency } : false,
        ...(grammar ? { grammar } : {}),
        ...(tokenBias ? { tokenBias } : {}),
        onToken: (tokens) => {
          if (first) { first = false; hooks.firstToken() }
          hooks.tokens(tokens.length)
        },
        ...(channel
          ? { onTextChunk: (text: string) => { if (text.length > 0) channel.push(sseData(chunk(id, created, model, [{ index, delta: { content: text }, finish_reason: null }], includeUsage ? null : undefined))) } }
          : {})
      })
      const choice: Choice = { text: res.response, finish: finishOf(res.metadata.stopReason) }
      if (channel) channel.push(sseData(chunk(id, created, model, [{ index, delta: {}, finish_reason: choice.finish }], includeUsage ? null : undefined)))
      return choice
    }

    const run = async (): Promise<{ choices: Choice[]; usage: Usage }> => {
      const choices: Choice[] = []
      for (let i = 0; i < n && !signal.aborted; i++) {
        if (i > 0 && channel) channel.push(sseData(chunk(id, created, model, [{ index: i, delta: { role: "assistant", content: "" }, finish_reason: null }], includeUsage ? null : undefined)))
        choices.push(await generateChoice(i))
      }
      const completionTokens = sequence.tokenMeter.usedOutputTokens - outBefore
      // The prompt as counted before generating: what the sequence holds afterwards may be less
      // (a stop trigger's tokens are trimmed) and is never more.
      const usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens }
      const reused = Math.min(commonPrefix(before, sequence.contextTokens), promptTokens)
      this.stats.requests++
      this.stats.promptTokens += promptTokens
      if (reused > 0) { this.stats.prefixHits++; this.stats.tokensReused += reused }
      return { choices, usage }
    }

    const prepared = prepare()
    const done = prepared.then(run)
    const settled = done.then(() => undefined, () => undefined)

    if (!channel) {
      const reply = done.then(
        (r): Reply => ({ type: "json", status: 200, body: completion(id, created, model, r.choices, r.usage) }),
        (e: unknown) => { throw asEngineError(e) }
      )
      return { reply, settled }
    }

    // Streams commit to 200 once the request is known to be servable: the first event carries
    // the role, as OpenAI's do.
    const reply = prepared.then(
      (): Reply => {
        channel.push(sseData(chunk(id, created, model, [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }], includeUsage ? null : undefined)))
        return { type: "sse", events: channel }
      },
      (e: unknown) => { throw asEngineError(e) }
    )
    done.then(
      (r) => {
        if (includeUsage) channel.push(sseData(chunk(id, created, model, [], r.usage)))
      },
      (e: unknown) => {
        if (signal.aborted || e instanceof EngineError) return
        const err = asEngineError(e)
        channel.push(sseData(errorBody(err.message, err.status >= 500 ? "server_error" : "invalid_request_error", err.code, err.param)))
      }
    ).finally(() => { channel.push(SSE_DONE); channel.end() })
    return { reply, settled }
  }

  health = async (): Promise<Record<string, unknown>> => {
    const base = {
      id: this.id,
      kind: this.kind,
      device: this.config.device,
      available: this.reason === undefined,
      ...(this.reason !== undefined ? { reason: this.reason } : {}),
      model_path: this.modelPath
    }
    if (!this.model || !this.context || !this.sequence || !this.llama) return base
    const usage = await this.llama.getLlamaMemoryUsage().catch(() => undefined)
    const vram = this.config.device === "gpu" ? await this.llama.getVramState().catch(() => undefined) : undefined
    return {
      ...base,
      model: {
        size_bytes: this.model.size,
        type: this.model.typeDescription,
        train_context_size: this.model.trainContextSize,
        gpu_layers: this.model.gpuLayers,
        memory_estimate: this.model.memoryUsage
      },
      threads: this.context.currentThreads,
      batch_size: this.context.batchSize,
      kv_cache: {
        context_length: this.config.context_size,
        size_tokens: this.context.contextSize,
        used_tokens: this.sequence.nextTokenIndex,
        state_bytes: this.context.stateSize,
        memory_estimate: this.context.memoryUsage
      },
      prefix_cache: {
        requests: this.stats.requests,
        hits: this.stats.prefixHits,
        tokens_reused: this.stats.tokensReused,
        prompt_tokens: this.stats.promptTokens
      },
      memory: {
        ram_in_use_bytes: usage?.cpuRam ?? null,
        vram_in_use_bytes: usage?.gpuVram ?? null,
        ...(vram ? { vram_total_bytes: vram.total, vram_free_bytes: vram.free } : {})
      }
    }
  }

  close = async (): Promise<void> => {
    if (this.closed) return
    this.closed = true
    this.reason = "closed"
    await this.ready
    await this.chat?.dispose?.()
    await this.context?.dispose()
    await this.model?.dispose()
  }
}

const asEngineError = (e: unknown): EngineError =>
  e instanceof EngineError ? e : new EngineError(500, `generation failed: ${e instanceof Error ? e.message : String(e)}`, "generation_failed")
