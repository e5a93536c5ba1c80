/**
 * The OpenAI contract, as a user of the official `openai` client (v4, `maxRetries: 0`) meets it:
 * the six points of issue 22 (context length, token limits, `n`, models.retrieve, error bodies the
 * SDK can read, retry hints), and a property test of prompt lengths around the context size.
 * The gateway runs in the real kernel with the tiny fixture GGUF at `context_size: 4096`.
 */
import fc from "fast-check"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform, type RunningPlatform } from "../../../core/Kernel.ts"
import { writeTinyGguf } from "../../../scripts/make-tiny-gguf.ts"
import { startOpenAIUpstream, type OpenAIUpstream } from "../../fixtures/openai-upstream.ts"
import { gatewayYaml, openStream, request, sdkFailure } from "./http.ts"

process.env.PLATFORM_LOG_LEVEL ??= "error"

const TOKEN = "test-token-openai-22"
const CONTEXT = 4096
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gateway-openai-"))
const modelPath = path.join(dir, "tiny.gguf")
let upstream: OpenAIUpstream
let platform: RunningPlatform
let base: string
let client: OpenAI
/** A loopback port nothing listens on (until the recovery test starts a server there). */
let gonePort: number
let countTokens: (text: string) => number
/** Ids of every vocabulary entry that spells a digit (pieces and byte tokens <0x30>..<0x39>). */
let digitTokens: number[]
let disposeModel: () => Promise<void>

const yaml = (up: string) =>
  gatewayYaml(TOKEN, [
    `id: model-linear, kind: llama-cpp, default: true, model_path: ${modelPath}, threads: 1, context_size: ${CONTEXT}, batch_size: 512, max_tokens: 64`,
    `id: model-missing, kind: llama-cpp, model_path: ${path.join(dir, "absent.gguf")}`,
    `id: upstream, kind: upstream, url: ${up}`,
    `id: upstream-gone, kind: upstream, url: "http://127.0.0.1:${gonePort}/v1"`
  ])

/** `n` distinct words (`w0 w1 ...`): prompts whose length the tests choose. */
const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ")

/** The error an SDK call fails with (the test fails if it succeeds). */
const failure = (call: Promise<unknown>) => sdkFailure(call, OpenAI.APIError)

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => resolve(port))
    })
  })

const status = async () => (await request(base, "GET", "/status")).json() as { models: Array<{ id: string; available: boolean }> }
const available = async (id: string) => (await status()).models.find((m) => m.id === id)!.available

/** The gateway's request count for `engine` and `status`, from /metrics. */
const requestsCounted = async (engine: string, code: number): Promise<number> => {
  const text = (await request(base, "GET", "/metrics")).text
  const m = new RegExp(`gateway_requests_total\\{engine="${engine}",status="${code}"\\} (\\d+)`).exec(text)
  return m ? Number(m[1]) : 0
}

beforeAll(async () => {
  writeTinyGguf(modelPath)
  gonePort = await freePort()
  upstream = await startOpenAIUpstream()
  platform = await startPlatform({ cwd: ROOT, yaml: yaml(upstream.url) })
  base = platform.url("gateway")
  client = new OpenAI({ apiKey: TOKEN, baseURL: `${base}/v1`, maxRetries: 0, timeout: 60_000 })
  // The test's own tokenizer: the fixture's ChatML template rendered and tokenized, which a test
  // in plugin.test.ts shows is exactly what the engine evaluates.
  const { getLlama, LlamaLogLevel } = await import("node-llama-cpp")
  const llama = await getLlama({ gpu: false, build: "never", maxThreads: 1, logLevel: LlamaLogLevel.error })
  const model = await llama.loadModel({ modelPath, gpuLayers: 0, vocabOnly: true })
  countTokens = (text) => model.tokenize(`<|im_start|>user\n${text}<|im_end|>\n<|im_start|>assistant\n`, true).length
  disposeModel = () => model.dispose()
  const vocab = (model.fileInfo.metadata as any).tokenizer.ggml.tokens as string[]
  digitTokens = vocab.flatMap((t, i) => (/^<0x3[0-9]>$/.test(t) || (!t.startsWith("<0x") && /[0-9]/.test(t)) ? [i] : []))
  for (let i = 0; i < 600 && !(await available("model-linear")); i++) await new Promise((r) => setTimeout(r, 50))
}, 60_000)

afterAll(async () => {
  await disposeModel?.()
  await platform?.stop()
  await upstream?.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

describe("1. context length", () => {
  it("counts the prompt with the engine's tokenizer; a prompt over the context is a 400 context_length_exceeded, never a 500", async () => {
    const fits = words(500)
    const ok = await client.chat.completions.create({ model: "model-linear", messages: [{ role: "user", content: fits }], max_tokens: 4 })
    expect(ok.usage!.prompt_tokens).toBe(countTokens(fits))
    expect(ok.usage!.prompt_tokens).toBeGreaterThan(2000)
    expect(ok.usage!.total_tokens).toBe(ok.usage!.prompt_tokens + ok.usage!.completion_tokens)

    for (const n of [5_000, 50_000]) {
      const text = words(n)
      const e = await failure(client.chat.completions.create({ model: "model-linear", messages: [{ role: "user", content: text }], max_tokens: 16 }))
      const prompt = countTokens(text)
      expect(e).toBeInstanceOf(OpenAI.BadRequestError)
      expect(e.status).toBe(400)
      expect(e.code).toBe("context_length_exceeded")
      expect(e.type).toBe("invalid_request_error")
      expect(e.param).toBe("messages")
      // Both numbers and the context size, as OpenAI words it.
      expect(e.message).toBe(`400 This model's maximum context length is ${CONTEXT} tokens. However, you requested ${prompt + 16} tokens (${prompt} in the messages, 16 in the completion). Please reduce the length of the messages or completion.`)
    }
    // Without a limit the prompt alone must leave room for one token.
    const e = await failure(client.chat.completions.create({ model: "model-linear", messages: [{ role: "user", content: words(5_000) }] }))
    expect(e.code).toBe("context_length_exceeded")
    expect(e.message).toContain(`your messages resulted in ${countTokens(words(5_000))} tokens`)
    // The engine serves on afterwards.
    expect((await client.chat.completions.create({ messages: [{ role: "user", content: "hi" }], model: "model-linear", max_tokens: 1 })).usage!.completion_tokens).toBe(1)
  }, 60_000)

  it("the exact edge: a prompt of context - 1 tokens takes one completion token, not two", async () => {
    const text = words(2_000)
    let chars = 0
    while (countTokens(text.slice(0, chars)) < CONTEXT - 1) chars++
    const content = text.slice(0, chars)
    expect(countTokens(content)).toBe(CONTEXT - 1)
    const messages = [{ role: "user" as const, content }]
    const one = await client.chat.completions.create({ model: "model-linear", messages, max_tokens: 1, seed: 3 })
    expect(one.usage).toEqual({ prompt_tokens: CONTEXT - 1, completion_tokens: 1, total_tokens: CONTEXT })
    const free = await client.chat.completions.create({ model: "model-linear", messages, seed: 3 })
    expect(free.usage!.completion_tokens).toBe(1)
    expect(free.choices[0]!.finish_reason).toBe("length")
    expect((await failure(client.chat.completions.create({ model: "model-linear", messages, max_tokens: 2 }))).code).toBe("context_length_exceeded")
  }, 30_000)

  it("a limit that would overflow the context is refused even when the prompt is short", async () => {
    const e = await failure(client.chat.completions.create({ model: "model-linear", messages: [{ role: "user", content: "hi" }], max_tokens: CONTEXT }))
    expect(e.code).toBe("context_length_exceeded")
    expect(e.message).toContain(`${countTokens("hi")} in the messages, ${CONTEXT} in the completion`)
  })
})

describe("2. token limits", () => {
  it("max_completion_tokens is honoured, and wins over max_tokens", async () => {
    const messages = [{ role: "user" as const, content: "tell me a long story" }]
    // A seed whose unbounded answer is longer than 3 tokens: the same seed then shows the cut.
    let seed = 0
    for (; seed < 40; seed++) {
      const free = await client.chat.completions.create({ model: "model-linear", messages, seed, max_tokens: 40 })
      if (free.usage!.completion_tokens > 3) break
    }
    expect(seed).toBeLessThan(40)
    const cut = await client.chat.completions.create({ model: "model-linear", messages, seed, max_completion_tokens: 3 })
    expect(cut.usage!.completion_tokens).toBe(3)
    expect(cut.choices[0]!.finish_reason).toBe("length")
    const both = await client.chat.completions.create({ model: "model-linear", messages, seed, max_tokens: 40, max_completion_tokens: 3 })
    expect(both.usage!.completion_tokens).toBe(3)
    expect(both.choices[0]!.message.content).toBe(cut.choices[0]!.message.content)
  })

  it("fields the engine cannot honour are a 400 naming the field; an upstream gets them untouched", async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ tools: [{ type: "code_interpreter" }] }, "tools[0]"],
      [{ logprobs: true }, "logprobs"],
      [{ top_logprobs: 2 }, "top_logprobs"],
      [{ modalities: ["text", "audio"] }, "modalities"],
      [{ reasoning_effort: "high" }, "reasoning_effort"],
      [{ logit_bias: { "999999": 5 } }, "logit_bias"]
    ]
    for (const [extra, param] of cases) {
      const e = await failure(client.chat.completions.create({ model: "model-linear", messages: [{ role: "user", content: "hi" }], ...extra } as never))
      expect(e.status, param).toBe(400)
      expect(e.param).toBe(param)
      expect(e.message).toContain(`\`${param}\``)
    }
    const body = { model: "upstream", messages: [{ role: "user" as const, content: "hi" }], logprobs: true, top_logprobs: 2, n: 2, max_completion_tokens: 5 }
    await client.chat.completions.create(body)
    expect(JSON.parse(upstream.bodies.at(-1)!)).toEqual(body)
  })

  it("logit_bias is honoured: a banned token never appears", async () => {
    expect(digitTokens.length).toBeGreaterThanOrEqual(20)
    const digits = Object.fromEntries(digitTokens.map((id) => [String(id), -100]))
    const ask = (seed: number, bias?: Record<string, number>) =>
      client.chat.completions.create({ model: "model-linear", messages: [{ role: "user", content: "count: 1 2 3" }], seed, max_tokens: 40, ...(bias ? { logit_bias: bias } : {}) })
    let unbiasedDigits = 0
    for (let seed = 0; seed < 8; seed++) {
      if (/[0-9]/.test((await ask(seed)).choices[0]!.message.content ?? "")) unbiasedDigits++
      expect((await ask(seed, digits)).choices[0]!.message.content).not.toMatch(/[0-9]/)
    }
    // Without the bias the same seeds do write digits: the ban is what removed them.
    expect(unbiasedDigits).toBeGreaterThan(0)
  })
})

describe("3. n", () => {
  it("n: 2 gives two choices (one generation after the other) with usage for both", async () => {
    const r = await client.chat.completions.create({ model: "model-linear", messages: [{ role: "user", content: "hello" }], n: 2, max_tokens: 6, seed: 11 })
    expect(r.choices.map((c) => c.index)).toEqual([0, 1])
    const one = await client.chat.completions.create({ model: "model-linear", messages: [{ role: "user", content: "hello" }], max_tokens: 6, seed: 11 })
    expect(r.choices[0]!.message.content).toBe(one.choices[0]!.message.content)
    expect(r.usage!.prompt_tokens).toBe(countTokens("hello"))
    expect(r.usage!.completion_tokens).toBeGreaterThan(one.usage!.completion_tokens - 1)
    expect(r.usage!.completion_tokens).toBeLessThanOrEqual(12)
  })

  it("streams n choices by index, and refuses n out of range naming the field", async () => {
    const stream = await client.chat.completions.create({ model: "model-linear", messages: [{ role: "user", content: "hello" }], n: 3, max_tokens: 4, stream: true, stream_options: { include_usage: true } })
    const finished = new Set<number>()
    let usage: OpenAI.CompletionUsage | undefined
    for await (const c of stream) {
      for (const choice of c.choices) if (choice.finish_reason) finished.add(choice.index)
      if (c.usage) usage = c.usage
    }
    expect([...finished].sort()).toEqual([0, 1, 2])
    expect(usage!.prompt_tokens).toBe(countTokens("hello"))
    // Each streamed choice a whole JSON document under response_format.
    const json = await client.chat.completions.create({ model: "model-linear", messages: [{ role: "user", content: "hello" }], n: 2, max_tokens: 60, stream: true, response_format: { type: "json_schema", json_schema: { name: "r", schema: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false } } } })
    const texts = ["", ""]
    for await (const c of json) for (const choice of c.choices) texts[choice.index] += choice.delta.content ?? ""
    for (const t of texts) expect(typeof JSON.parse(t).ok).toBe("boolean")
    const e = await failure(client.chat.completions.create({ model: "model-linear", messages: [{ role: "user", content: "hi" }], n: 500 }))
    expect(e.status).toBe(422)
    expect(e.param).toBe("n")
    expect(e.message).toMatch(/^422 Invalid value for `n`/)
  })
})

describe("4. models.retrieve", () => {
  it("returns the model object, and 404 model_not_found for an unknown id", async () => {
    const m = await client.models.retrieve("model-linear")
    expect(m).toMatchObject({ id: "model-linear", object: "model", owned_by: "platform", available: true, default: true })
    const listed = await client.models.list()
    expect(listed.data.map((x) => x.id)).toContain("model-linear")
    const e = await failure(client.models.retrieve("gpt-99"))
    expect(e).toBeInstanceOf(OpenAI.NotFoundError)
    expect(e.code).toBe("model_not_found")
    expect(e.message).toBe("404 The model `gpt-99` does not exist.")
  })
})

describe("5. error bodies the SDK can read", () => {
  it("422 names the first failing field (and keeps the spec's detail)", async () => {
    const e = await failure(client.chat.completions.create({ model: "model-linear", messages: [{ role: "user", content: "hi" }], temperature: 2.5 }))
    expect(e).toBeInstanceOf(OpenAI.UnprocessableEntityError)
    expect(e.message).not.toContain("no body")
    expect(e.message).toMatch(/^422 Invalid value for `temperature`: /)
    expect(e.param).toBe("temperature")
    expect(e.code).toBe("invalid_value")
    const missing = await failure(client.chat.completions.create({ model: "model-linear" } as never))
    expect(missing.code).toBe("missing_required_parameter")
    expect(missing.param).toBe("messages")
    const role = await failure(client.chat.completions.create({ model: "model-linear", messages: [{ role: "robot", content: "x" }] } as never))
    expect(role.param).toBe("messages[0].role")
    // The raw body still carries the spec's HTTPValidationError detail.
    const raw = await request(base, "POST", "/v1/chat/completions", { token: TOKEN, body: { messages: [], temperature: 2.5 } })
    expect(raw.json().detail.map((d: any) => d.loc)).toEqual([["body", "messages"], ["body", "temperature"]])
  })

  it("unknown paths and wrong methods under /v1 answer OpenAI's error object (404, 405)", async () => {
    const e = await failure(client.get("/audio/speech"))
    expect(e).toBeInstanceOf(OpenAI.NotFoundError)
    expect(e.code).toBe("unknown_url")
    expect(e.message).toBe("404 Unknown request URL: GET /v1/audio/speech.")
    const m = await failure(client.post("/models"))
    expect(m.status).toBe(405)
    expect(m.code).toBe("method_not_allowed")
    expect(m.headers?.["allow"]).toBe("GET")
    const c = await failure(client.get("/chat/completions"))
    expect(c.status).toBe(405)
    expect(c.headers?.["allow"]).toBe("POST")
    // The token is checked first, as everywhere under /v1.
    const anonymous = await request(base, "GET", "/v1/audio/speech")
    expect(anonymous.status).toBe(401)
    expect(anonymous.json().error.code).toBe("invalid_api_key")
  })
})

describe("6. retry hints", () => {
  it("busy: Retry-After from the running generation's remaining budget, jittered across refused clients", async () => {
    // A generation with a long budget (streamed and held open), then ten refused clients.
    // Biased +100 towards one plain token (326, "a", in the fixture's vocabulary) it runs to
    // max_tokens (4000 tokens, seconds) whatever the CPU's float rounding: a seed alone with
    // EOS banned ran 800+ tokens on one machine and stopped after 191 on another.
    const s = await openStream(base, "/v1/chat/completions", TOKEN, { messages: [{ role: "user", content: "go" }], stream: true, max_tokens: 4000, logit_bias: { "326": 100 } })
    try {
      const refused = await Promise.all(Array.from({ length: 10 }, () =>
        failure(client.chat.completions.create({ model: "model-linear", messages: [{ role: "user", content: "hi" }], max_tokens: 1 }))))
      const hints = refused.map((e) => {
        expect(e.status).toBe(503)
        expect(e.code).toBe("engine_busy")
        const ms = Number(e.headers!["retry-after-ms"])
        expect(e.headers!["retry-after"]).toBe(String(Math.ceil(ms / 1000)))
        expect(e.headers!["x-should-retry"]).toBeUndefined()
        return ms
      })
      expect(Math.min(...hints)).toBeGreaterThanOrEqual(100)
      expect(Math.max(...hints)).toBeLessThan(60_000)
      // Spread out: not one synchronized wave.
      expect(new Set(hints).size).toBeGreaterThanOrEqual(8)
      expect(Math.max(...hints) - Math.min(...hints)).toBeGreaterThan(50)
    } finally {
      s.drop()
    }
    for (let i = 0; i < 100 && (await request(base, "GET", "/healthz")).json().engines[0].busy; i++) await new Promise((r) => setTimeout(r, 10))
  })

  it("a missing model file: 503 x-should-retry false, which stops the SDK's own retries; /status says unavailable", async () => {
    const retrying = new OpenAI({ apiKey: TOKEN, baseURL: `${base}/v1`, maxRetries: 2 })
    const before = await requestsCounted("model-missing", 503)
    const e = await failure(retrying.chat.completions.create({ model: "model-missing", messages: [{ role: "user", content: "hi" }] }))
    expect(e.status).toBe(503)
    expect(e.code).toBe("model_unavailable")
    expect(e.message).toContain("model file not found")
    expect(e.headers!["x-should-retry"]).toBe("false")
    // One request reached the gateway: the SDK did not retry.
    expect(await requestsCounted("model-missing", 503)).toBe(before + 1)
    expect(await available("model-missing")).toBe(false)
  })

  it("an upstream refusing connections: 503 x-should-retry false, /status unavailable, back once it listens", async () => {
    expect(await available("upstream-gone")).toBe(false)
    const e = await failure(client.chat.completions.create({ model: "upstream-gone", messages: [{ role: "user", content: "hi" }] }))
    expect(e.status).toBe(503)
    expect(e.code).toBe("model_unavailable")
    expect(e.headers!["x-should-retry"]).toBe("false")
    // Something starts listening there: the engine's probe notices within about a second.
    const revived = await startOpenAIUpstreamOn(gonePort)
    try {
      let up = false
      for (let i = 0; i < 60 && !up; i++) {
        up = await available("upstream-gone")
        if (!up) await new Promise((r) => setTimeout(r, 100))
      }
      expect(up).toBe(true)
      const ok = await client.chat.completions.create({ model: "upstream-gone", messages: [{ role: "user", content: "hi" }] })
      expect(ok.choices[0]!.message.content).toBe("echo: hi")
    } finally {
      await revived.close()
    }
  })
})

describe("property: prompt lengths around the context size", () => {
  it("never a 5xx; accepted iff prompt + completion fits; prompt_tokens is the tokenizer's count", async () => {
    const text = words(2_000)
    // Prefix lengths (in characters) whose prompts run from ~200 tokens below the context to above it.
    let lo = 0, hi = text.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (countTokens(text.slice(0, mid)) < CONTEXT - 200) lo = mid + 1
      else hi = mid
    }
    const from = lo
    let to = from
    while (to < text.length && countTokens(text.slice(0, to)) <= CONTEXT + 20) to += 16
    const seen = { accepted: 0, refused: 0, atTheLimit: 0 }
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: from, max: to }),
        fc.constantFrom("max_tokens", "max_completion_tokens", "both", "none"),
        fc.integer({ min: -3, max: 3 }),
        async (chars, field, slack) => {
          const content = text.slice(0, chars)
          const prompt = countTokens(content)
          // The requested completion: the room left, moved by `slack` (below, at, above the context).
          const requested = Math.max(1, CONTEXT - prompt + slack)
          const limit = field === "max_tokens" ? { max_tokens: requested }
            : field === "max_completion_tokens" ? { max_completion_tokens: requested }
            : field === "both" ? { max_tokens: CONTEXT * 2, max_completion_tokens: requested }
            : {}
          const r = await request(base, "POST", "/v1/chat/completions", { token: TOKEN, body: { messages: [{ role: "user", content }], seed: 1, ...limit } })
          expect(r.status).toBeLessThan(500)
          const fits = field === "none" ? prompt < CONTEXT : prompt + requested <= CONTEXT
          if (fits) {
            seen.accepted++
            if (field !== "none" && prompt + requested === CONTEXT) seen.atTheLimit++
            expect(r.status).toBe(200)
            const usage = r.json().usage
            expect(usage.prompt_tokens).toBe(prompt)
            expect(usage.completion_tokens).toBeLessThanOrEqual(field === "none" ? Math.min(64, CONTEXT - prompt) : requested)
          } else {
            seen.refused++
            expect(r.status).toBe(400)
            const error = r.json().error
            expect(error.code).toBe("context_length_exceeded")
            expect(error.message).toContain(`${CONTEXT} tokens`)
            expect(error.message).toContain(`${prompt}`)
          }
        }
      ),
      { numRuns: 40, seed: 22 }
    )
    // The runs covered both sides of the limit and the limit itself.
    expect(seen.accepted).toBeGreaterThan(0)
    expect(seen.refused).toBeGreaterThan(0)
    expect(seen.atTheLimit).toBeGreaterThan(0)
  }, 180_000)
})

/** The upstream fixture on a given port (the `upstream-gone` engine's), for the recovery test. */
const startOpenAIUpstreamOn = async (port: number): Promise<{ close: () => Promise<void> }> => {
  // A TCP forwarder from `port` to a fresh fixture keeps the fixture's own code unchanged.
  const fixture = await startOpenAIUpstream({ record: false })
  const target = Number(new URL(fixture.url).port)
  const sockets = new Set<net.Socket>()
  const server = net.createServer((c) => {
    const u = net.connect(target, "127.0.0.1")
    sockets.add(c).add(u)
    c.pipe(u).pipe(c)
    const end = () => { c.destroy(); u.destroy() }
    c.on("error", end).on("close", end)
    u.on("error", end).on("close", end)
  })
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", r))
  return {
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((r) => server.close(() => r()))
      await fixture.close()
    }
  }
}
