/**
 * The llama.cpp engine: node-llama-cpp over one GGUF file, one context with one sequence, serving
 * chat (with tool calling), text completions, and embeddings from `embedding_model_path`. The
 * gateway runs it in a worker thread of its own (`WorkerEngine.ts`).
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
  LlamaCompletion,
  LlamaLogLevel,
  LlamaText,
  TokenBias,
  type ChatHistoryItem,
  type ChatModelFunctionCall,
  type ChatModelFunctions,
  type ChatWrapper,
  type Llama,
  type LlamaContext,
  type LlamaContextSequence,
  type LlamaEmbeddingContext,
  type LlamaGrammar,
  type LlamaModel,
  type Token
} from "node-llama-cpp"
import type { LlamaCppEngineConfig } from "./Config.ts"
import { ByteChannel, EngineError, type Engine, type Generation, type GenerationHooks, type Reply, type Unavailable } from "./Engine.ts"
import type { AnyRequest, ChatRequest, CompletionRequest, EmbeddingRequest } from "./OpenAI.ts"
import { budgetFor, refuseFor, unsupported, type ToolIn } from "./Refusals.ts"
import {
  chunk,
  completion,
  completionId,
  contentText,
  embeddingList,
  errorBody,
  requestedCompletionTokens,
  SSE_DONE,
  sseData,
  textChunk,
  textCompletion,
  toolCallId,
  type Choice,
  type FinishReason,
  type Operation,
  type ToolCall,
  type Usage
} from "./Wire.ts"
import type { ThreadPolicy } from "./Threads.ts"

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

/** An OpenAI tool call as found in an assistant message (unvalidated client input). */
interface ToolCallIn { id?: unknown; function?: { name?: unknown; arguments?: unknown } }

/**
 * Maps OpenAI messages to node-llama-cpp's chat history, ending in an open model turn. An
 * assistant message's `tool_calls` become function calls of its model turn, and the `tool`
 * messages answering them (by `tool_call_id`, else in order) their results, so the model's own
 * chat template renders calls and results in its own syntax. Throws a 400 EngineError for a
 * tool call whose `arguments` is not JSON.
 */
const toHistory = (messages: ChatRequest["messages"]): ChatHistoryItem[] => {
  const history: ChatHistoryItem[] = []
  /** Function calls of the latest assistant turn still waiting for their `tool` result, by call id. */
  let pending: Array<{ id: string; call: ChatModelFunctionCall }> = []
  messages.forEach((m, index) => {
    const text = contentText(m.content)
    switch (m.role ?? "user") {
      case "system": history.push({ type: "system", text }); break
      case "assistant": {
        const calls = Array.isArray(m.tool_calls) ? (m.tool_calls as ToolCallIn[]) : []
        const response: Array<string | ChatModelFunctionCall> = text.length > 0 || calls.length === 0 ? [text] : []
        pending = calls.map((c, i) => {
          let params: unknown
          try {
            params = typeof c.function?.arguments === "string" && c.function.arguments.length > 0 ? JSON.parse(c.function.arguments) : undefined
          } catch {
            throw new EngineError(400, `messages[${index}].tool_calls[${i}].function.arguments is not valid JSON.`, "invalid_value", `messages[${index}].tool_calls`)
          }
          const call: ChatModelFunctionCall = { type: "functionCall", name: String(c.function?.name ?? ""), params, result: undefined, ...(i === 0 ? { startsNewChunk: true } : {}) }
          response.push(call)
          return { id: String(c.id ?? i), call }
        })
        history.push({ type: "model", response })
        break
      }
      case "tool": {
        const byId = pending.findIndex((p) => p.id === m.tool_call_id)
        const target = pending.splice(byId >= 0 ? byId : 0, 1)[0]
        // A result nobody asked for still reaches the model, as user text.
        if (target) target.call.result = text
        else history.push({ type: "user", text })
        break
      }
      default: history.push({ type: "user", text })
    }
  })
  // A trailing assistant message (or tool results answering its calls) is continued; otherwise an
  // empty model turn is opened.
  if (history[history.length - 1]?.type !== "model") history.push({ type: "model", response: [] })
  return history
}


/** `tools` as node-llama-cpp functions (name → description and parameter schema); undefined when none. */
const toFunctions = (tools: unknown): ChatModelFunctions | undefined => {
  if (!Array.isArray(tools) || tools.length === 0) return undefined
  return Object.fromEntries((tools as ToolIn[]).map((t) => [String(t.function!.name), {
    ...(typeof t.function!.description === "string" ? { description: t.function!.description } : {}),
    ...(t.function!.parameters && typeof t.function!.parameters === "object" && Object.keys(t.function!.parameters).length > 0 ? { params: t.function!.parameters as never } : {})
  }]))
}

/**
 * The forced-call variant of a chat wrapper (`tool_choice: "required"` or a named function): its
 * context state ends in node-llama-cpp's documented `noPrefixTrigger: functionCall`, which puts
 * the template's function-call prefix after the prompt and constrains the model, by grammar, to a
 * function name of the offered ones and parameters matching its schema.
 */
const forcedCallWrapper = (base: ChatWrapper): ChatWrapper => {
  const forced = Object.create(base) as ChatWrapper
  forced.generateContextState = (options) => {
    const state = base.generateContextState(options)
    return {
      // The variant of the state type that carries prefix triggers (it has no ignoreStartText).
      contextText: state.contextText,
      stopGenerationTriggers: state.stopGenerationTriggers,
      prefixTriggers: [],
      noPrefixTrigger: { type: "functionCall" as const, inject: LlamaText() }
    }
  }
  return forced
}

const finishOf = (stopReason: string): FinishReason => (stopReason === "maxTokens" ? "length" : stopReason === "functionCalls" ? "tool_calls" : "stop")

/**
 * OpenAI's refusal of a prompt that does not fit: 400 \`context_length_exceeded\` giving the
 * context size, the prompt's tokens and (when the client set one) the completion it asked for.
 */
const contextExceeded = (context: number, prompt: number, completionTokens: number | undefined, param: "messages" | "prompt"): EngineError =>
  new EngineError(400, completionTokens === undefined
    ? `This model's maximum context length is ${context} tokens. However, your ${param} resulted in ${prompt} tokens, which leaves no room for a completion. Please reduce the length of the ${param}.`
    : `This model's maximum context length is ${context} tokens. However, you requested ${prompt + completionTokens} tokens (${prompt} in the ${param}, ${completionTokens} in the completion). Please reduce the length of the ${param} or completion.`,
  "context_length_exceeded", param)

/** Prefix-cache counters, for `/healthz`. */
interface CacheStats {
  requests: number
  prefixHits: number
  tokensReused: number
  promptTokens: number
}

/**
 * Applies `threads_batch` beside `threads`. node-llama-cpp 3.22 sets llama.cpp's `n_threads` and
 * `n_threads_batch` to one value before each decode; llama.cpp itself uses `n_threads_batch` for
 * batches of more than one token (prompt evaluation) and `n_threads` for one token (generation).
 * The context's native handle is wrapped so each decode gets the count for its batch size. When
 * the handle lacks the expected methods (another node-llama-cpp version), nothing is wrapped and
 * `threads` serves both (the returned flag says which).
 */
export const applyThreadsBatch = (context: LlamaContext, threads: number, threadsBatch: number): boolean => {
  if (threads === threadsBatch) return true
  const holder = context as unknown as { _ctx?: Record<string, unknown> }
  const native = holder._ctx
  if (!native || typeof native.initBatch !== "function" || typeof native.setThreads !== "function" || typeof native.decodeBatch !== "function") return false
  const setThreads = (native.setThreads as (n: number) => void).bind(native)
  let size = 1
  const wrapped: Record<string, unknown> = {
    initBatch: (n: number) => { size = n; (native.initBatch as (n: number) => void).call(native, n) },
    // node-llama-cpp's own thread split is replaced (one context per Llama here).
    setThreads: () => undefined,
    decodeBatch: () => { setThreads(size > 1 ? threadsBatch : threads); return (native.decodeBatch as () => Promise<void>).call(native) }
  }
  try {
    // The native handle's methods are read-only: a proxy in its place intercepts the three.
    holder._ctx = new Proxy(native, {
      get: (target, key) => {
        if (typeof key === "string" && key in wrapped) return wrapped[key]
        const value = Reflect.get(target, key)
        return typeof value === "function" ? value.bind(target) : value
      }
    })
    return true
  } catch {
    return false
  }
}

/** What one generation produces per choice, whatever the operation. */
interface Produced { text: string; stopReason: string; toolCalls?: ToolCall[] }

/**
 * The llama.cpp engine. `LlamaCppEngine.make` never throws: a missing model file or a failed
 * load leaves the engine registered and unavailable with the reason. It runs wherever it is
 * created; the gateway hosts it in a worker thread (`LlamaCppWorker.ts`), so none of its work
 * (tokenizing, templates, grammars, per-token JavaScript) runs on the event loop serving HTTP.
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
  private completer: LlamaCompletion | undefined
  private embedder: { model: LlamaModel; context: LlamaEmbeddingContext; owned: boolean } | undefined
  private threadsBatchApplied = false
  private closed = false
  private readonly stats: CacheStats = { requests: 0, prefixHits: 0, tokensReused: 0, promptTokens: 0 }

  private constructor(
    readonly config: LlamaCppEngineConfig,
    readonly modelPath: string,
    readonly embeddingModelPath: string | undefined,
    readonly threads: ThreadPolicy,
    private readonly log: (line: string) => void
  ) {
    this.id = config.id
    this.streaming = config.streaming
    this.label = `llama-cpp/${config.device}`
    const missing = [modelPath, embeddingModelPath].find((p) => p !== undefined && !fs.existsSync(p))
    if (missing !== undefined) {
      this.reason = `model file not found: ${missing}`
      log(`gateway: engine ${this.id} unavailable: model file not found: ${missing} (download one with \`platform gateway pull URL\`)`)
      this.ready = Promise.resolve()
    } else {
      this.ready = this.load().then(
        () => { this.reason = this.closed ? "closed" : undefined },
        (e: unknown) => {
          this.reason = `model failed to load: ${e instanceof Error ? e.message : String(e)}`
          log(`gateway: engine ${this.id} unavailable: ${this.reason}`)
        }
      )
    }
  }

  /**
   * Creates the engine and starts loading `config.model_path` (and `embedding_model_path`),
   * resolved against `configDir`, with the thread counts of `threads`; `log` receives the one
   * line explaining an unavailable engine.
   */
  static make(config: LlamaCppEngineConfig, configDir: string, threads: ThreadPolicy, log: (line: string) => void): LlamaCppEngine {
    return new LlamaCppEngine(
      config,
      path.resolve(configDir, config.model_path),
      config.embedding_model_path ? path.resolve(configDir, config.embedding_model_path) : undefined,
      threads,
      log
    )
  }

  private async load(): Promise<void> {
    const c = this.config
    // Asking for a GPU the machine lacks makes getLlama probe every backend for seconds; the
    // supported list answers in milliseconds.
    if (c.device === "gpu" && !(await getLlamaGpuTypes("supported")).some((t) => t !== false)) {
      throw new Error("no GPU was found, or no GPU build of llama.cpp (@node-llama-cpp/linux-x64-cuda) is installed")
    }
    const { threads, threadsBatch } = this.threads
    // maxThreads bounds node-llama-cpp's whole thread budget: without it, it is max(cores, 4),
    // which oversubscribes a small machine (llama.cpp's threads spin at barriers).
    const llama = await getLlama({ gpu: c.device === "cpu" ? false : "auto", build: "never", logLevel: LlamaLogLevel.error, maxThreads: Math.max(threads, threadsBatch) })
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
      threads: Math.max(threads, threadsBatch)
    })
    this.context = context
    this.threadsBatchApplied = applyThreadsBatch(context, threads, threadsBatch)
    if (!this.threadsBatchApplied) this.log(`gateway: engine ${this.id}: threads_batch cannot be set apart from threads with this node-llama-cpp; using ${Math.max(threads, threadsBatch)} for both`)
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
    this.completer = new LlamaCompletion({ contextSequence: this.sequence })
    if (this.embeddingModelPath !== undefined) {
      const same = path.resolve(this.embeddingModelPath) === path.resolve(this.modelPath)
      const embedModel = same ? model : await llama.loadModel({ modelPath: this.embeddingModelPath, gpuLayers: c.device === "gpu" ? "max" : 0, useMmap: true })
      // An input is embedded in one batch (its tokens attend to each other): the batch is the context.
      const embedSize = Math.min(c.context_size, embedModel.trainContextSize)
      const embedContext = await embedModel.createEmbeddingContext({ contextSize: embedSize, batchSize: embedSize, threads: threadsBatch })
      this.embedder = { model: embedModel, context: embedContext, owned: !same }
    }
    // One token generated at load, so the first request does not pay for the lazily set up
    // sampler, grammar machinery and first evaluation (seconds on a cold machine).
    await this.chat.generateResponse([{ type: "user", text: "hi" }, { type: "model", response: [] }], { maxTokens: 1 })
    await this.sequence.eraseContextTokenRanges([{ start: 0, end: this.sequence.nextTokenIndex }])
  }

  unavailable = (): Unavailable | undefined =>
    this.reason === undefined ? undefined : { reason: this.reason, retryable: this.reason === "loading" }

  refuse = (req: AnyRequest, op: Operation = "chat"): EngineError | undefined => refuseFor(this.id, this.config, req, op)

  completionBudget = (req: AnyRequest, op: Operation = "chat"): number | undefined => budgetFor(this.config, req, op)

  /** The prompt's tokens exactly as LlamaChat will evaluate them: the chat template rendered, tokenized. */
  private promptTokens(history: ChatHistoryItem[], functions: ChatModelFunctions | undefined): number {
    return this.chat!.chatWrapper.generateContextState({ chatHistory: history, ...(functions ? { availableFunctions: functions } : {}) }).contextText.tokenize(this.model!.tokenizer).length
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

  /** Token ids of a prompt given as ids: 400 for ids outside the vocabulary (llama.cpp would abort). */
  private checkedTokens(tokens: ReadonlyArray<number>, param: string): Token[] {
    const vocab = (this.model!.fileInfo.metadata as { tokenizer?: { ggml?: { tokens?: ReadonlyArray<string> } } } | undefined)?.tokenizer?.ggml?.tokens?.length
    const bad = tokens.find((t) => vocab === undefined || t >= vocab)
    if (bad !== undefined) throw new EngineError(400, `\`${param}\` holds token ${bad}, which is not in this model's vocabulary (${vocab ?? "unknown"} tokens).`, "invalid_value", param)
    return tokens as Token[]
  }

  generate = (req: AnyRequest, signal: AbortSignal, hooks: GenerationHooks, _raw?: string, op: Operation = "chat"): Generation => {
    if (op === "embeddings") return this.embed(req as EmbeddingRequest, signal, hooks)
    const chat = this.chat!, sequence = this.sequence!, llama = this.llama!
    const isChat = op === "chat"
    // Chat and text completion requests share the sampling fields (same names, same bounds).
    const chatReq = req as ChatRequest, textReq = req as CompletionRequest
    const id = isChat ? completionId() : completionId().replace("chatcmpl-", "cmpl-")
    const created = Math.floor(Date.now() / 1000)
    const model = this.id
    let grammar: LlamaGrammar | undefined
    const stream = req.stream === true
    const includeUsage = stream && (req.stream_options as { include_usage?: boolean } | null | undefined)?.include_usage === true
    const usageField = includeUsage ? null : undefined
    /** The prompts of a text completion: one per entry of `prompt` (text or token ids). */
    const prompts: Array<string | Token[]> = isChat ? [] : typeof textReq.prompt === "string" ? [textReq.prompt]
      : typeof textReq.prompt[0] === "string" ? (textReq.prompt as string[])
      : typeof textReq.prompt[0] === "number" ? [textReq.prompt as number[] as Token[]] : (textReq.prompt as number[][] as Token[][])
    const perPrompt = (typeof req.n === "number" ? req.n : 1)
    const n = isChat ? perPrompt : perPrompt * prompts.length
    const before = sequence.contextTokens
    const outBefore = sequence.tokenMeter.usedOutputTokens
    let first = true
    const channel = stream ? new ByteChannel(() => { /* early stop: the gateway aborts `signal` */ }) : undefined
    let promptTokens = 0
    let maxTokens = 0
    let tokenBias: TokenBias | undefined
    let history: ChatHistoryItem[] = []
    const toolChoice = (chatReq as Record<string, unknown>).tool_choice
    const offered = isChat && toolChoice !== "none" ? toFunctions((chatReq as Record<string, unknown>).tools) : undefined
    const named = typeof toolChoice === "object" && toolChoice !== null ? String((toolChoice as { function: { name: string } }).function.name) : undefined
    const functions = offered && named ? { [named]: offered[named]! } : offered
    const forced = functions !== undefined && (toolChoice === "required" || named !== undefined)
    const parallel = (chatReq as Record<string, unknown>).parallel_tool_calls !== false
    const stop = chatReq.stop == null ? [] : typeof chatReq.stop === "string" ? [chatReq.stop] : chatReq.stop

    // Everything that can refuse the request runs before a stream commits to 200: the prompt
    // against the context (counted with the engine's own template and tokenizer), then the grammar.
    const prepare = async (): Promise<void> => {
      const contextSize = this.config.context_size
      let longest = 0
      if (isChat) {
        history = toHistory(chatReq.messages)
        promptTokens = longest = this.promptTokens(history, functions)
      } else {
        for (const [i, p] of prompts.entries()) {
          const count = typeof p === "string" ? this.model!.tokenize(p, true).length : this.checkedTokens(p, prompts.length > 1 ? `prompt[${i}]` : "prompt").length
          promptTokens += count * perPrompt
          longest = Math.max(longest, count)
        }
      }
      // OpenAI's text completions default to 16 tokens; chat to the engine's default.
      const requested = requestedCompletionTokens(req) ?? (isChat ? undefined : 16)
      if (requested !== undefined) {
        if (longest + requested > contextSize) throw contextExceeded(contextSize, longest, requested, isChat ? "messages" : "prompt")
        maxTokens = requested
      } else {
        // No limit asked: the engine's default, shortened to the room the prompt leaves.
        if (longest >= contextSize) throw contextExceeded(contextSize, longest, undefined, isChat ? "messages" : "prompt")
        maxTokens = Math.min(this.config.max_tokens, contextSize - longest)
      }
      if (chatReq.logit_bias && Object.keys(chatReq.logit_bias).length > 0) tokenBias = this.tokenBias(chatReq.logit_bias)
      const format = isChat ? chatReq.response_format : undefined
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
      if (functions) {
        // The parameter schemas become grammars when a call is generated: a schema the grammar
        // cannot express is a 400 now rather than a failure mid-stream.
        for (const [name, f] of Object.entries(functions)) {
          if (!f.params) continue
          try {
            await llama.createGrammarForJsonSchema(f.params as never)
          } catch (e) {
            throw new EngineError(400, `unsupported JSON schema in the parameters of tool \`${name}\`: ${e instanceof Error ? e.message : e}`, "invalid_value", "tools")
          }
        }
      }
    }

    let generated = 0
    const onToken = (tokens: ReadonlyArray<Token>) => {
      if (first) { first = false; hooks.firstToken() }
      generated += tokens.length
      hooks.tokens(tokens.length)
    }
    const sampling = (index: number) => {
      const r = chatReq
      const presence = r.presence_penalty ?? 0, frequency = r.frequency_penalty ?? 0
      return {
        signal,
        maxTokens,
        // OpenAI's defaults (temperature 1, top_p 1), not node-llama-cpp's greedy default.
        temperature: r.temperature ?? 1,
        topP: r.top_p ?? 1,
        ...(r.top_k != null ? { topK: Math.max(0, r.top_k) } : {}),
        ...(r.min_p != null ? { minP: r.min_p } : {}),
        // Each choice its own draw: a seeded request stays reproducible, choice by choice.
        ...(r.seed != null ? { seed: r.seed + index } : {}),
        ...(stop.length > 0 ? { customStopTriggers: stop.filter((s) => s.length > 0) } : {}),
        // OpenAI has no multiplicative repeat penalty, so it stays off (penalty 1).
        repeatPenalty: presence !== 0 || frequency !== 0 ? { penalty: 1, presencePenalty: presence, frequencyPenalty: frequency } : false as const,
        ...(tokenBias ? { tokenBias } : {}),
        onToken
      }
    }
    const pushChat = (index: number, delta: Record<string, unknown>, finish: FinishReason | null = null) =>
      channel!.push(sseData(chunk(id, created, model, [{ index, delta, finish_reason: finish }], usageField)))

    /** Generates chat choice `index`; with `tools`, possibly calls instead of (or after) text. */
    const generateChatChoice = async (index: number): Promise<Produced> => {
      const streamedCalls = new Map<number, number>()
      let runner = chat
      if (forced) runner = new LlamaChat({ contextSequence: sequence, chatWrapper: forcedCallWrapper(chat.chatWrapper) })
      try {
        const res = await runner.generateResponse(history, {
          ...sampling(index),
          ...(grammar ? { grammar } : {}),
          ...(functions ? { functions, maxParallelFunctionCalls: parallel ? 8 : 1 } : {}),
          ...(channel ? { onTextChunk: (text: string) => { if (text.length > 0) pushChat(index, { content: text }) } } : {}),
          ...(channel && functions
            ? {
                onFunctionCallParamsChunk: (c: { callIndex: number; functionName: string; paramsChunk: string }) => {
                  // OpenAI's streamed tool call: the first delta names it (id, name), the rest
                  // append to its arguments.
                  if (!streamedCalls.has(c.callIndex)) {
                    streamedCalls.set(c.callIndex, streamedCalls.size)
                    pushChat(index, { tool_calls: [{ index: streamedCalls.get(c.callIndex), id: toolCallId(), type: "function", function: { name: c.functionName, arguments: c.paramsChunk } }] })
                  } else if (c.paramsChunk.length > 0) {
                    pushChat(index, { tool_calls: [{ index: streamedCalls.get(c.callIndex), function: { arguments: c.paramsChunk } }] })
                  }
                }
              }
            : {})
        } as never) as Awaited<ReturnType<LlamaChat["generateResponse"]>> & { functionCalls?: Array<{ functionName: string; params: unknown }> }
        const toolCalls = res.functionCalls?.map((f): ToolCall => ({ id: toolCallId(), type: "function", function: { name: f.functionName, arguments: JSON.stringify(f.params ?? {}) } }))
        return { text: res.response, stopReason: res.metadata.stopReason, ...(toolCalls && toolCalls.length > 0 ? { toolCalls } : {}) }
      } finally {
        if (runner !== chat) runner.dispose({ disposeSequence: false })
      }
    }

    /** Generates text completion choice `index` (prompt `index / n`, draw `index % n`). */
    const generateTextChoice = async (index: number): Promise<Produced> => {
      const prompt = prompts[Math.floor(index / perPrompt)]!
      const res = await this.completer!.generateCompletionWithMeta(prompt, {
        ...sampling(index % perPrompt),
        ...(channel ? { onTextChunk: (text: string) => { if (text.length > 0) channel.push(sseData(textChunk(id, created, model, [{ index, text, finish_reason: null }], usageField))) } } : {})
      })
      return { text: res.response, stopReason: res.metadata.stopReason }
    }

    const run = async (): Promise<{ choices: Choice[]; usage: Usage }> => {
      const choices: Choice[] = []
      for (let i = 0; i < n && !signal.aborted; i++) {
        if (i > 0 && channel && isChat) pushChat(i, { role: "assistant", content: "" })
        const produced = await (isChat ? generateChatChoice(i) : generateTextChoice(i))
        const finish = produced.toolCalls ? "tool_calls" : finishOf(produced.stopReason)
        const choice: Choice = { text: produced.text, finish, ...(produced.toolCalls ? { toolCalls: produced.toolCalls } : {}) }
        if (channel) {
          if (isChat) pushChat(i, {}, finish)
          else channel.push(sseData(textChunk(id, created, model, [{ index: i, text: "", finish_reason: finish }], usageField)))
        }
        choices.push(choice)
      }
      // LlamaCompletion's token meter also counts the prompt's last token (it yields logits), so
      // text completions count the tokens generated instead.
      const completionTokens = isChat ? sequence.tokenMeter.usedOutputTokens - outBefore : generated
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
        (r): Reply => ({ type: "json", status: 200, body: isChat ? completion(id, created, model, r.choices, r.usage) : textCompletion(id, created, model, r.choices, r.usage) }),
        (e: unknown) => { throw asEngineError(e) }
      )
      return { reply, settled }
    }

    // Streams commit to 200 once the request is known to be servable: a chat stream's first
    // event carries the role, as OpenAI's do.
    const reply = prepared.then(
      (): Reply => {
        if (isChat) pushChat(0, { role: "assistant", content: "" })
        return { type: "sse", events: channel }
      },
      (e: unknown) => { throw asEngineError(e) }
    )
    done.then(
      (r) => {
        if (includeUsage) channel.push(sseData(isChat ? chunk(id, created, model, [], r.usage) : textChunk(id, created, model, [], r.usage)))
      },
      (e: unknown) => {
        if (signal.aborted || e instanceof EngineError) return
        const err = asEngineError(e)
        channel.push(sseData(errorBody(err.message, err.status >= 500 ? "server_error" : "invalid_request_error", err.code, err.param)))
      }
    ).finally(() => { channel.push(SSE_DONE); channel.end() })
    return { reply, settled }
  }

  /** Embeds each input (text or token ids) in order with the embedding model; counts its tokens. */
  private embed(req: EmbeddingRequest, signal: AbortSignal, hooks: GenerationHooks): Generation {
    const embedder = this.embedder!
    const inputs: Array<string | Token[]> = typeof req.input === "string" ? [req.input]
      : typeof req.input[0] === "string" ? (req.input as string[])
      : typeof req.input[0] === "number" ? [req.input as number[] as Token[]] : (req.input as number[][] as Token[][])
    const limit = embedder.context.model.trainContextSize
    const done = (async () => {
      const vectors: number[][] = []
      let tokens = 0
      for (const [i, input] of inputs.entries()) {
        if (signal.aborted) throw new EngineError(499, "client went away")
        const ids = typeof input === "string" ? embedder.model.tokenize(input, true) : input
        const param = inputs.length > 1 ? `input[${i}]` : "input"
        if (typeof input !== "string") this.checkedTokens(input, param)
        const room = Math.min(this.config.context_size, limit)
        if (ids.length > room) throw new EngineError(400, `This model's maximum context length is ${room} tokens, however you requested ${ids.length} tokens in ${param}. Please reduce your input.`, "context_length_exceeded", param)
        const embedding = await embedder.context.getEmbeddingFor(ids as Token[])
        if (vectors.length === 0) hooks.firstToken()
        vectors.push([...embedding.vector])
        tokens += ids.length
      }
      const dims = vectors[0]?.length ?? 0
      if (req.dimensions != null && req.dimensions !== dims) {
        throw new EngineError(400, `\`dimensions\` must be ${dims} for this model (its embedding size); shortened embeddings are not supported.`, "invalid_value", "dimensions")
      }
      return embeddingList(this.id, vectors, tokens, req.encoding_format === "base64")
    })()
    const reply = done.then((body): Reply => ({ type: "json", status: 200, body }), (e: unknown) => { throw asEngineError(e) })
    return { reply, settled: done.then(() => undefined, () => undefined) }
  }

  health = async (): Promise<Record<string, unknown>> => {
    const base = {
      id: this.id,
      kind: this.kind,
      device: this.config.device,
      available: this.reason === undefined,
      ...(this.reason !== undefined ? { reason: this.reason } : {}),
      model_path: this.modelPath,
      ...(this.embeddingModelPath ? { embedding_model_path: this.embeddingModelPath } : {}),
      thread_policy: { ...this.threads, threads_batch_applied: this.threadsBatchApplied }
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
      threads: this.threads.threads,
      threads_batch: this.threads.threadsBatch,
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
    await this.embedder?.context.dispose()
    if (this.embedder?.owned) await this.embedder.model.dispose()
    this.completer?.dispose({ disposeSequence: false })
    await this.chat?.dispose?.()
    await this.context?.dispose()
    await this.model?.dispose()
  }
}

const asEngineError = (e: unknown): EngineError =>
  e instanceof EngineError ? e : new EngineError(500, `generation failed: ${e instanceof Error ? e.message : String(e)}`, "generation_failed")
