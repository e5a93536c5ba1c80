/**
 * The busy 503's retry hints, on a Gateway with a scripted engine and a driven clock: the
 * estimate follows the running generation's remaining budget and pace, and jitter spreads it.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { describe, expect, it } from "vitest"
import { EngineError, type Engine, type GenerationHooks, type Unavailable } from "../../../plugins/gateway/Engine.ts"
import { Gateway } from "../../../plugins/gateway/Gateway.ts"
import type { ChatRequest } from "../../../plugins/gateway/OpenAI.ts"

/** An engine whose generations the test drives: `hooks` of the running one, `finish` settles it. */
const scripted = (unavailable: () => Unavailable | undefined = () => undefined) => {
  let hooks: GenerationHooks | undefined
  let finish: () => void = () => undefined
  const engine: Engine = {
    id: "m",
    kind: "llama-cpp",
    label: "scripted",
    streaming: true,
    unavailable,
    refuse: (req) => (req.logprobs ? new EngineError(400, "`logprobs` is not supported", "unsupported_parameter", "logprobs") : undefined),
    completionBudget: (req) => { const r = req as ChatRequest; return (r.max_completion_tokens ?? r.max_tokens ?? 100) * (r.n ?? 1) },
    generate: (_req, _signal, h) => {
      hooks = h
      const settled = new Promise<void>((r) => { finish = r })
      return { reply: Promise.resolve({ type: "json", status: 200, body: {} }), settled }
    },
    health: async () => ({}),
    close: async () => undefined
  }
  return { engine, hooks: () => hooks!, finish: () => finish() }
}

const setup = (random = () => 0) => {
  let now = 0
  const s = scripted()
  const gateway = new Gateway({ engines: [s.engine], defaultEngine: "m", token: "t", retryAfterS: 2, clock: () => now, random })
  const start = (req: Partial<ChatRequest>) => Effect.runPromise(gateway.chat({ messages: [{ content: "x" }], ...req } as ChatRequest))
  /** `n` tokens, one every `ms`. */
  const tokens = (n: number, ms: number) => {
    for (let i = 0; i < n; i++) {
      now += ms
      s.hooks().tokens(1)
    }
  }
  return { gateway, s, start, tokens, advance: (ms: number) => { now += ms }, at: () => now }
}

describe("busy retry hints", () => {
  it("knowing nothing: retry_after_s", async () => {
    const { gateway, start } = setup()
    await start({ max_tokens: 100 })
    expect(gateway.isBusy("m")).toBe(true)
    expect(gateway.remainingMs("m")).toBe(2000)
  })

  it("the remaining budget at the running generation's own pace", async () => {
    const { gateway, s, start, tokens, advance } = setup()
    await start({ max_tokens: 500 })
    advance(40)
    s.hooks().firstToken()
    s.hooks().tokens(1)
    tokens(99, 10) // 100 tokens, 10 ms apart
    // 400 tokens left at 10 ms each.
    expect(gateway.remainingMs("m")).toBeCloseTo(4000, 0)
    tokens(300, 10)
    expect(gateway.remainingMs("m")).toBeCloseTo(1000, 0)
    // The budget is n x max_completion_tokens (max_completion_tokens winning over max_tokens).
    s.finish()
    await new Promise((r) => setTimeout(r, 0))
    expect(gateway.isBusy("m")).toBe(false)
  })

  it("jitter: the estimate plus up to as much again (at least 500 ms more), whole seconds rounded up", async () => {
    let draw = 0
    const { gateway, s, start, tokens } = setup(() => draw)
    await start({ max_completion_tokens: 300, max_tokens: 5, n: 2 })
    s.hooks().firstToken()
    s.hooks().tokens(1)
    tokens(9, 20) // 20 ms/token, 590 of the 600-token budget left
    const estimate = gateway.remainingMs("m")
    expect(estimate).toBeCloseTo(590 * 20, 0)
    draw = 0
    expect(gateway.retryHeaders("m")).toEqual({ "retry-after-ms": String(Math.round(estimate)), "retry-after": String(Math.ceil(estimate / 1000)) })
    draw = 0.5
    const half = Math.round(estimate * 1.5)
    expect(gateway.retryHeaders("m")).toEqual({ "retry-after-ms": String(half), "retry-after": String(Math.ceil(half / 1000)) })
  })

  it("after a few generations, their typical length caps the budget; bounds 100 ms .. 59 s", async () => {
    const { gateway, s, start, tokens } = setup()
    // Three generations that stopped at 20 tokens of a 1000-token budget, 50 ms per token.
    for (let g = 0; g < 3; g++) {
      await start({ max_tokens: 1000 })
      s.hooks().firstToken()
      s.hooks().tokens(1)
      tokens(19, 50)
      s.finish()
      await new Promise((r) => setTimeout(r, 0))
    }
    await start({ max_tokens: 1000 })
    s.hooks().firstToken()
    s.hooks().tokens(1)
    tokens(4, 50)
    // Typical 20 tokens, 5 done: 15 left at 50 ms, not 995.
    expect(gateway.remainingMs("m")).toBeCloseTo(15 * 50, 0)
    // Past the typical length: a quarter of it more.
    tokens(30, 50)
    expect(gateway.remainingMs("m")).toBeCloseTo(5 * 50, 0)
    // Nearly nothing left: never under 100 ms.
    s.finish()
    await new Promise((r) => setTimeout(r, 0))
    await start({ max_tokens: 6 })
    s.hooks().firstToken()
    s.hooks().tokens(1)
    tokens(4, 10)
    expect(gateway.remainingMs("m")).toBe(100)
    s.finish()
    await new Promise((r) => setTimeout(r, 0))
    // A huge budget at a slow pace is capped below the 60 s the OpenAI SDKs accept.
    const slow = setup()
    await slow.start({ max_tokens: 100_000 })
    slow.s.hooks().firstToken()
    slow.s.hooks().tokens(1)
    slow.tokens(9, 1000)
    expect(slow.gateway.remainingMs("m")).toBe(59_000)
  })
})

describe("unavailable engines", () => {
  const refusal = async (why: Unavailable) => {
    const gateway = new Gateway({ engines: [scripted(() => why).engine], defaultEngine: "m", token: "t", retryAfterS: 1 })
    const out = await Effect.runPromise(Effect.either(gateway.chat({ messages: [{ content: "x" }] } as ChatRequest)))
    if (!Either.isLeft(out)) throw new Error("expected a refusal")
    return out.left
  }

  it("a model still loading: 503 model_loading with retry-after 1 (a retry will succeed)", async () => {
    const e = await refusal({ reason: "loading", retryable: true })
    expect(e.status).toBe(503)
    expect(e.headers).toEqual({ "retry-after": "1" })
    expect((e.body as any).error.code).toBe("model_loading")
  })

  it("a model that cannot serve: 503 model_unavailable with x-should-retry false", async () => {
    const e = await refusal({ reason: "model file not found: /x.gguf", retryable: false })
    expect(e.status).toBe(503)
    expect(e.headers).toEqual({ "x-should-retry": "false" })
    expect((e.body as any).error).toMatchObject({ code: "model_unavailable", message: expect.stringContaining("model file not found") })
  })
})

describe("the fast path's busy refusal", () => {
  it("carries the same jittered hints as the full path", async () => {
    const { gateway, s, start, tokens } = setup(() => 0.25)
    await start({ max_tokens: 200 })
    s.hooks().firstToken()
    s.hooks().tokens(1)
    tokens(9, 10)
    const reply = gateway.fastBusyRefusal({ method: "POST", path: "/v1/chat/completions", headers: { authorization: "Bearer t" }, params: {}, json: { messages: [{ content: "y" }] }, rawBody: new Uint8Array(), remoteAddress: "127.0.0.1" })
    expect(reply?.status).toBe(503)
    expect(reply?.headers).toMatchObject(gateway.retryHeaders("m"))
    expect(JSON.parse(new TextDecoder().decode(reply!.body as Uint8Array)).error.code).toBe("engine_busy")
    // A request the engine refuses (a field it cannot honour) is left to the full path: its 400
    // comes before the busy check there.
    expect(gateway.fastBusyRefusal({ method: "POST", path: "/v1/chat/completions", headers: { authorization: "Bearer t" }, params: {}, json: { messages: [{ content: "y" }], logprobs: true }, rawBody: new Uint8Array(), remoteAddress: "127.0.0.1" })).toBeUndefined()
    const full = await Effect.runPromise(Effect.either(gateway.chat({ messages: [{ content: "y" }], logprobs: true } as ChatRequest)))
    expect(Either.isLeft(full) && full.left.status).toBe(400)
  })
})
