/**
 * The chat client's failure paths against the model fixture and closed ports: answers that do
 * not parse or fit the schema, HTTP errors, deadlines, refused connections, cancel, no gateway;
 * and `scoreRelevance`, the contract's structured helper.
 */
import * as net from "node:net"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { JobFailure } from "../../../plugins/jobs/Contract.ts"
import { gatewayUrlOf, scoreRelevance } from "../../../plugins/llm/Contract.ts"
import { entitiesOp, summarizeOp, topicsOp } from "../../../plugins/llm/GraphOps.ts"
import { configuredListener } from "../../../plugins/llm/Setup.ts"
import { type ModelServer, startModelServer } from "../../fixtures/model-server.ts"
import { expectJobFailure, jobContexts } from "../jobs/net/jobContext.ts"
import { clientOf, NEWS } from "./support.ts"

let fx: ModelServer
const contexts = jobContexts()
const defaults = { types: ["person", "organization"], max: 50, model: null, base_url: null }

beforeAll(async () => {
  fx = await startModelServer()
})
afterAll(async () => {
  await fx?.close()
})
beforeEach(() => {
  fx.requests.length = 0
})
afterEach(() => contexts.cleanup())

/** A port nothing listens on (bound, then released). */
const closedPort = (): Promise<number> =>
  new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as net.AddressInfo
      s.close(() => resolve(port))
    })
  })

describe("answers that do not parse", () => {
  it("an answer that is not JSON fails the op with REMOTE_ERROR naming the shape and the answer", async () => {
    const f = await expectJobFailure(entitiesOp(clientOf(fx.url)).handler(defaults, "Maria Lopez wrote FIXTURE_BAD_JSON.", contexts.make()))
    expect(f.kind).toBe("REMOTE_ERROR")
    expect(f.message).toMatch(/^entities: the model's answer did not parse as a list of entities: .*JSON.*; the answer began "Sure! Here are the results: \{entities: \["$/)
  })

  it("JSON that does not fit the answer Schema fails the same way, with the Schema's complaint", async () => {
    const f = await expectJobFailure(topicsOp(clientOf(fx.url)).handler({ max_topics: 3, model: null, base_url: null }, ["FIXTURE_WRONG_SHAPE topics please"], contexts.make()))
    expect(f.kind).toBe("REMOTE_ERROR")
    expect(f.message).toMatch(/^topics: the model's answer did not parse as a list of topics: .*\["topics"\].*is missing/)
  })

  it("a JSON answer inside a ```json fence is accepted (small models fence their JSON)", async () => {
    const client = clientOf(fx.url)
    const server = await startFencingServer()
    try {
      const got = await client.json({ op: "t", system: "s", user: "u", signal: new AbortController().signal, baseUrl: server.url }, {
        name: "relevance", what: "a relevance score", schema: (await import("../../../plugins/llm/Prompts.ts")).RelevanceAnswer.schema
      })
      expect(got).toEqual({ score: 7, reason: "fenced" })
    } finally {
      await server.close()
    }
  })
})

describe("HTTP and transport failures", () => {
  it("an upstream 500 is a NETWORK_ERROR with the status and the server's message (not retried when it says so)", async () => {
    const f = await expectJobFailure(summarizeOp(clientOf(fx.url, { maxRetries: 3 })).handler({ max_words: 50, focus: null, model: null, base_url: null }, "FIXTURE_STATUS_500", contexts.make()))
    expect(f.kind).toBe("NETWORK_ERROR")
    expect(f.message).toBe(`summarize: the model at ${fx.url}/chat/completions failed: HTTP 500 (the fixture was asked to fail)`)
    expect(fx.chats()).toHaveLength(1)
  })

  it("a 401 (wrong api key) is a REMOTE_ERROR, not retryable", async () => {
    const guarded = await startModelServer({ token: "right" })
    try {
      const f = await expectJobFailure(summarizeOp(clientOf(guarded.url, { apiKey: "wrong", maxRetries: 2 })).handler({ max_words: 50, focus: null, model: null, base_url: null }, "text", contexts.make()))
      expect(f).toMatchObject({ kind: "REMOTE_ERROR", retryable: false })
      expect(f.message).toMatch(/HTTP 401 \(invalid api key\)$/)
    } finally {
      await guarded.close()
    }
  })

  it("an empty api key sends no Authorization header; a key is sent as a bearer token", async () => {
    const signal = new AbortController().signal
    await clientOf(fx.url, { apiKey: "" }).text({ op: "t", system: "s", user: "Question: hi", signal })
    await clientOf(fx.url, { apiKey: "k1" }).text({ op: "t", system: "s", user: "Question: hi", signal })
    expect(fx.requests.map((r) => r.headers.authorization)).toEqual([undefined, "Bearer k1"])
  })

  it("a refused connection is a NETWORK_ERROR; a model slower than timeout_s is a TIMEOUT", async () => {
    const port = await closedPort()
    const refused = await expectJobFailure(summarizeOp(clientOf(`http://127.0.0.1:${port}/v1`)).handler({ max_words: 50, focus: null, model: null, base_url: null }, "text", contexts.make()))
    expect(refused.kind).toBe("NETWORK_ERROR")
    expect(refused.message).toMatch(new RegExp(`^summarize: cannot reach the model at http://127.0.0.1:${port}/v1/chat/completions: `))
    const t0 = performance.now()
    // The deadline covers retries too: the SDK would otherwise retry the timed-out call 3 times.
    const slow = await expectJobFailure(summarizeOp(clientOf(fx.url, { timeoutMs: 300, maxRetries: 3 })).handler({ max_words: 50, focus: null, model: null, base_url: null }, "FIXTURE_HANG", contexts.make()))
    expect(slow.kind).toBe("TIMEOUT")
    expect(slow.message).toBe(`summarize: the model at ${fx.url}/chat/completions did not answer within 0.3 s`)
    expect(performance.now() - t0).toBeLessThan(1000)
    // Past the SDK's first retry backoff (at most 0.5 s): the retry found the call aborted and sent nothing.
    await new Promise((r) => setTimeout(r, 700))
    expect(fx.chats()).toHaveLength(1)
  })

  it("cancel aborts an in-flight request within a second, and the server sees the client go away", async () => {
    const c = contexts.make()
    const aborted = fx.aborted()
    const p = entitiesOp(clientOf(fx.url)).handler(defaults, "FIXTURE_HANG Maria Lopez", c)
    while (fx.chats().length === 0) await new Promise((r) => setTimeout(r, 5))
    const t0 = performance.now()
    c.controller.abort(new Error("job cancelled"))
    const f = await expectJobFailure(p)
    expect(performance.now() - t0).toBeLessThan(1000)
    expect(f).toMatchObject({ kind: "CANCELLED", message: "entities: cancelled: job cancelled" })
    for (let i = 0; i < 100 && fx.aborted() === aborted; i++) await new Promise((r) => setTimeout(r, 10))
    expect(fx.aborted()).toBe(aborted + 1)
  })

  it("a cancel during the SDK's retry wait lands at once, and no request follows it", async () => {
    // A 503 with Retry-After 1 s: the SDK sleeps that long before retrying, not watching the signal.
    const busy = await startBusyServer()
    try {
      const c = contexts.make()
      const p = summarizeOp(clientOf(busy.url, { maxRetries: 3 })).handler({ max_words: 50, focus: null, model: null, base_url: null }, "text", c)
      while (busy.count() === 0) await new Promise((r) => setTimeout(r, 5))
      await new Promise((r) => setTimeout(r, 50))
      const t0 = performance.now()
      c.controller.abort()
      expect((await expectJobFailure(p)).kind).toBe("CANCELLED")
      expect(performance.now() - t0).toBeLessThan(200)
      // Past the retry time: the retry saw the aborted signal and sent nothing.
      await new Promise((r) => setTimeout(r, 1300))
      expect(busy.count()).toBe(1)
    } finally {
      await busy.close()
    }
  })

  it("base_url null without a gateway listening fails clearly (no request made)", async () => {
    const f = await expectJobFailure(summarizeOp(clientOf("", { baseUrl: null })).handler({ max_words: 50, focus: null, model: null, base_url: null }, "text", contexts.make()))
    expect(f).toMatchObject({ kind: "VALIDATION_ERROR", retryable: false })
    expect(f.message).toBe('summarize: no model API is configured: base_url is null and no gateway listens on listener "gateway" (enable the gateway plugin or set base_url)')
    // With a gateway the same client goes there, asked at call time.
    let listening: string | undefined
    const client = clientOf("", { baseUrl: null, gateway: () => listening })
    listening = fx.url
    expect(await summarizeOp(client).handler({ max_words: 50, focus: null, model: null, base_url: null }, "Maria Lopez founded Acme Robotics.", contexts.make())).toBe("Maria Lopez founded Acme Robotics.")
  })
})

describe("the model fixture", () => {
  it("lists its model to an OpenAI client, refuses unknown routes, and records requests", async () => {
    const { default: OpenAI } = await import("openai")
    const sdk = new OpenAI({ baseURL: fx.url, apiKey: "k", maxRetries: 0 })
    const models = []
    for await (const m of sdk.models.list()) models.push(m.id)
    expect(models).toEqual(["model-linear"])
    const missing = await fetch(`${fx.url}/embeddings`, { method: "POST", body: "{}" })
    expect(missing.status).toBe(404)
    expect(fx.requests.map((r) => `${r.method} ${r.path}`)).toEqual(["GET /v1/models", "POST /v1/embeddings"])
  })
})

describe("where the gateway is", () => {
  it("a bound listener's URL, with wildcard binds reached on loopback", () => {
    expect(gatewayUrlOf({ name: "gateway", host: "127.0.0.1", port: 9001, url: "http://127.0.0.1:9001" })).toBe("http://127.0.0.1:9001/v1")
    expect(gatewayUrlOf({ name: "gateway", host: "0.0.0.0", port: 9001, url: "http://0.0.0.0:9001" })).toBe("http://127.0.0.1:9001/v1")
    expect(gatewayUrlOf({ name: "gateway", host: "::", port: 9001, url: "http://[::]:9001" })).toBe("http://[::1]:9001/v1")
    expect(gatewayUrlOf(undefined)).toBeUndefined()
  })

  it("a process that binds no listener reads host and port from the platform config (not port 0)", () => {
    const text = "listeners:\n  - { name: gateway, host: 127.0.0.1, port: 9101 }\n  - { name: jobs, port: 0 }\nplugins: {}\n"
    const find = configuredListener({ file: "/tmp/platform.yaml", text })
    expect(find("gateway")).toEqual({ name: "gateway", host: "127.0.0.1", port: 9101, url: "http://127.0.0.1:9101" })
    expect(find("jobs")).toBeUndefined()
    expect(find("nope")).toBeUndefined()
    expect(configuredListener({ file: "/tmp/platform.yaml", text: "::: not yaml" })("gateway")).toBeUndefined()
  })
})

describe("scoreRelevance", () => {
  it("scores 0..10 by the model's structured answer, with a reason", async () => {
    const signal = new AbortController().signal
    const on = await scoreRelevance(clientOf(fx.url), "delivery robots Berlin", NEWS.text, signal)
    expect(on).toEqual({ score: 10, reason: "3 of 3 query terms occur in the text: delivery, robots, berlin." })
    const half = await scoreRelevance(clientOf(fx.url), "robots in Tokyo", NEWS.text, signal)
    expect(half.score).toBe(5)
    const off = await scoreRelevance(clientOf(fx.url), "medieval poetry", NEWS.text, signal, { model: "judge" })
    expect(off.score).toBe(0)
    expect(fx.chats().map((b) => b.response_format.json_schema.name)).toEqual(["relevance", "relevance", "relevance"])
    expect(fx.chats()[2].model).toBe("judge")
    const bad = await scoreRelevance(clientOf(fx.url), "q", "FIXTURE_BAD_JSON", signal).catch((e: unknown) => e)
    expect(bad).toBeInstanceOf(JobFailure)
    expect((bad as JobFailure).message).toMatch(/^relevance: the model's answer did not parse as a relevance score: /)
  })
})

/** A server answering every chat with a fenced JSON relevance answer. */
const startFencingServer = async () => {
  const { createServer } = await import("node:http")
  const server = createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify({ id: "x", object: "chat.completion", created: 0, model: "m", choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "```json\n{\"score\": 7, \"reason\": \"fenced\"}\n```" } }] }))
    })
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/v1`, close: () => new Promise<void>((r) => server.close(() => r())) }
}

/** A server answering every request 503 with Retry-After 1 s, counting requests. */
const startBusyServer = async () => {
  const { createServer } = await import("node:http")
  let n = 0
  const server = createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      n++
      res.writeHead(503, { "content-type": "application/json", "retry-after": "1" })
      res.end(JSON.stringify({ error: { message: "busy", type: "server_error", param: null, code: "engine_busy" } }))
    })
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/v1`, count: () => n, close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()) }) }
}
