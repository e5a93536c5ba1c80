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
  type ChatHistoryItem,
  type Llama,
  type LlamaContext,
  type LlamaContextSequence,
  type LlamaGrammar,
  type LlamaModel
} from "node-llama-cpp"
import type { LlamaCppEngineConfig } from "./Config.ts"
import { ByteChannel, EngineError, type Engine, type Generation, type GenerationHooks, type Reply } from "./Engine.ts"
import {
  chunk,
  completion,
  completionId,
  contentText,
  errorBody,
  SSE_DONE,
  sseData,
  type ChatRequest,
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
      contextSize: c.context_size,
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

  unavailableReason = (): string | undefined => this.reason

  generate = (req: ChatRequest, signal: AbortSignal, hooks: GenerationHooks): Generation => {
    const chat = this.chat!, sequence = this.sequence!, llama = this.llama!
    const id = completionId()
    const created = Math.floor(Date.now() / 1000)
    const model = this.id
    let grammar: LlamaGrammar | undefined
    const stream = req.stream === true
    const includeUsage = stream && req.stream_options?.include_usage === true

    const before = sequence.contextTokens
    const outBefore = sequence.tokenMeter.usedOutputTokens
    let first = true
    const channel = stream ? new ByteChannel(() => { /* early stop: the gateway aborts `signal` */ }) : undefined

    const usageOf = (): Usage => {
      const completionTokens = sequence.tokenMeter.usedOutputTokens - outBefore
      const after = sequence.contextTokens
      // The sequence holds the prompt plus every generated token but the last one, which is
      // sampled and never evaluated (generation stops right after it).
      const prompt = Math.max(0, after.length - Math.max(0, completionTokens - 1))
      return { prompt_tokens: prompt, completion_tokens: completionTokens, total_tokens: prompt + completionTokens }
    }

    // Grammar first: a bad `response_format` is a 400 before a stream commits to 200.
    const prepare = async (): Promise<void> => {
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

    const run = async (): Promise<{ text: string; finish: FinishReason; usage: Usage }> => {
      const stop = req.stop == null ? [] : typeof req.stop === "string" ? [req.stop] : req.stop
      const presence = req.presence_penalty ?? 0, frequency = req.frequency_penalty ?? 0
      const res = await chat.generateResponse(toHistory(req.messages), {
        signal,
        maxTokens: req.max_tokens ?? this.config.max_tokens,
        // OpenAI's defaults (temperature 1, top_p 1), not node-llama-cpp's greedy default.
        temperature: req.temperature ?? 1,
        topP: req.top_p ?? 1,
        ...(req.seed != null ? { seed: req.seed } : {}),
        ...(stop.length > 0 ? { customStopTriggers: stop.filter((s) => s.length > 0) } : {}),
        // OpenAI has no multiplicative repeat penalty, so it stays off (penalty 1).
        repeatPenalty: presence !== 0 || frequency !== 0 ? { penalty: 1, presencePenalty: presence, frequencyPenalty: frequency } : false,
        ...(grammar ? { grammar } : {}),
        onToken: (tokens) => {
          if (first) { first = false; hooks.firstToken() }
          hooks.tokens(tokens.length)
        },
        ...(channel
          ? { onTextChunk: (text: string) => { if (text.length > 0) channel.push(sseData(chunk(id, created, model, [{ delta: { content: text }, finish_reason: null }], includeUsage ? null : undefined))) } }
          : {})
      })
      const usage = usageOf()
      const reused = Math.min(commonPrefix(before, sequence.contextTokens), usage.prompt_tokens)
      this.stats.requests++
      this.stats.promptTokens += usage.prompt_tokens
      if (reused > 0) { this.stats.prefixHits++; this.stats.tokensReused += reused }
      return { text: res.response, finish: finishOf(res.metadata.stopReason), usage }
    }

    const prepared = prepare()
    const done = prepared.then(run)
    const settled = done.then(() => undefined, () => undefined)

    if (!channel) {
      const reply = done.then(
        (r): Reply => ({ type: "json", status: 200, body: completion(id, created, model, r.text, r.finish, r.usage) }),
        (e: unknown) => { throw asEngineError(e) }
      )
      return { reply, settled }
    }

    // Streams commit to 200 once the request is known to be servable: the first event carries
    // the role, as OpenAI's do.
    const reply = prepared.then(
      (): Reply => {
        channel.push(sseData(chunk(id, created, model, [{ delta: { role: "assistant", content: "" }, finish_reason: null }], includeUsage ? null : undefined)))
        return { type: "sse", events: channel }
      },
      (e: unknown) => { throw asEngineError(e) }
    )
    done.then(
      (r) => {
        channel.push(sseData(chunk(id, created, model, [{ delta: {}, finish_reason: r.finish }], includeUsage ? null : undefined)))
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
