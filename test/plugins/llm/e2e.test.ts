/**
 * The `llm` plugin in the real kernel beside the real `gateway`, whose `upstream` engine points
 * at the model fixture: operations registered with their types, and `entities` / `integrate`
 * going through the gateway's `/v1` (config `base_url: null`) with `response_format` reaching
 * the model untouched.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Schema from "effect/Schema"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import type { GraphOperation } from "../../../core/Contribution.ts"
import * as Kernel from "../../../core/Kernel.ts"
import { ROOT, type RunningPlatform, startPlatform } from "../../../core/Kernel.ts"
import { entityStoreDir, EntityStore, responseSchema } from "../../../plugins/llm/Contract.ts"
import { entitiesAnswer } from "../../../plugins/llm/Prompts.ts"
import { type ModelServer, startModelServer } from "../../fixtures/model-server.ts"
import { jobContexts } from "../jobs/net/jobContext.ts"
import { freePort } from "../jobs/support.ts"
import { BLOG, CHUNKS, NEWS } from "./support.ts"

process.env.PLATFORM_LOG_LEVEL ??= "error"

const TOKEN = "gateway-token-123456"
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "llm-e2e-"))
let fx: ModelServer
let platform: RunningPlatform
let yaml: string
const contexts = jobContexts()

beforeAll(async () => {
  // The upstream wants the engine's own key: what reaches it proves the gateway forwarded the call.
  fx = await startModelServer({ token: "upstream-key" })
  // A fixed gateway port: a process that binds no listener (a worker) finds it in the config.
  platform = await startPlatform({
    cwd: ROOT,
    yaml: yaml = `data_dir: ${dataDir}
log: { level: error }
listeners:
  - { name: gateway, host: 127.0.0.1, port: ${await freePort()} }
  - { name: jobs, host: 127.0.0.1, port: 0 }
plugins:
  gateway:
    token: ${TOKEN}
    engines:
      - { id: model-linear, kind: upstream, default: true, url: "${fx.url}", api_key: upstream-key }
  jobs:
    backend: embedded
    files: { backend: local }
  llm:
    api_key: ${TOKEN}
    timeout_s: 20
`
  })
})
afterAll(async () => {
  await platform?.stop()
  await fx?.close()
  fs.rmSync(dataDir, { recursive: true, force: true })
})
beforeEach(() => {
  fx.requests.length = 0
})
afterEach(() => contexts.cleanup())

const op = (name: string): GraphOperation => platform.kernel.graphOps.entry(name)!.value

/** Runs a registered op as the engine does: params and input decoded by the op's Schemas. */
const run = async (name: string, params: unknown, input: unknown) => {
  const o = op(name)
  const out = await o.handler(Schema.decodeUnknownSync(o.params)(params), Schema.decodeUnknownSync(o.input)(input), contexts.make())
  return Schema.decodeUnknownSync(o.output)(out)
}

describe("llm in the kernel", () => {
  it("boots and registers its operations with their categories and types", () => {
    const p = platform.kernel.plugins.find((x) => x.name === "llm")!
    expect(p.status).toBe("running")
    expect([...p.contributions.graphOps].sort()).toEqual(["chat", "compare", "entities", "integrate", "relevance_filter", "store_entity", "summarize", "to_report", "topics"])
    const types = Object.fromEntries(p.contributions.graphOps.map((n) => [n, [op(n).category, op(n).inputTypes, op(n).outputType]]))
    expect(types).toEqual({
      relevance_filter: ["filter", ["text[]"], "text[]"],
      entities: ["extract", ["text", "text[]", "chunk[]"], "entity[]"],
      topics: ["extract", ["text", "text[]", "chunk[]"], "topic[]"],
      summarize: ["extract", ["text", "text[]", "chunk[]"], "text"],
      integrate: ["synthesize", ["chunk[]", "text[]"], "text"],
      chat: ["synthesize", ["any"], "text"],
      compare: ["synthesize", ["text[]", "chunk[]"], "json"],
      to_report: ["synthesize", ["any"], "report"],
      store_entity: ["store", ["entity[]"], "json"]
    })
  })

  it("entities goes through the gateway's /v1, with response_format reaching the model untouched", async () => {
    const got = await run("entities", {}, [NEWS, BLOG])
    expect(got.find((e: any) => e.name === "Maria Lopez")).toMatchObject({ type: "person", mentions: 2, sources: [NEWS.url] })
    expect(got.find((e: any) => e.name === "Bolt Corp")).toMatchObject({ type: "organization", mentions: 2, sources: [BLOG.url] })
    const [req] = fx.requests
    // The gateway's engine key, not the llm plugin's gateway token: the call went through the gateway.
    expect(req!.headers.authorization).toBe("Bearer upstream-key")
    expect(req!.body.model).toBe("model-linear")
    expect(req!.body.response_format).toEqual({
      type: "json_schema",
      json_schema: { name: "entities", strict: true, schema: responseSchema(entitiesAnswer(["person", "organization", "location", "date", "event"]).schema) }
    })
  })

  it("integrate goes through the gateway and cites its sources", async () => {
    const got = await run("integrate", { query: "Who leads Acme Robotics?" }, CHUNKS) as string
    expect(got).toContain("Maria Lopez, the chief executive of Acme Robotics, said the plant will build delivery robots. [1]")
    expect(got.split("\n\nSources:\n")[1]).toMatch(new RegExp(`^\\[1\\] ${NEWS.url}`))
    expect(fx.chats()).toHaveLength(1)
  })

  it("calls that find the gateway's one engine busy wait for its Retry-After and all complete", async () => {
    const texts = ["first", "second", "third"].map((w) => `FIXTURE_DELAY_MS=150 The ${w} text mentions Maria Lopez.`)
    const refusals = async () => {
      const metrics = await (await fetch(`${platform.url("gateway")}/metrics`)).text()
      return Number(/gateway_refusals_total\{engine="model-linear",reason="busy"\} (\d+)/.exec(metrics)?.[1])
    }
    const before = await refusals()
    const got = await Promise.all(texts.map((t) => run("summarize", { max_words: 30 }, t)))
    expect(got).toEqual(texts)
    expect(fx.chats()).toHaveLength(3)
    // The gateway did refuse the calls that came while the engine was busy (the client retried them).
    expect(await refusals()).toBeGreaterThanOrEqual(before + 2)
  })

  it("store_entity persists under the platform's data directory, where the contract's reader finds it", async () => {
    const entities = await run("entities", { types: ["person"] }, [NEWS, BLOG])
    expect(await run("store_entity", { store: "e2e" }, entities)).toEqual({ store: "e2e", stored: 2, total: 2 })
    const stored = await new EntityStore(entityStoreDir(dataDir)).get("e2e")
    expect(stored!.entities.map((e) => e.name).sort()).toEqual(["John Chen", "Maria Lopez"])
  })

  it("is booted with the jobs plugin's workers and reaches the gateway from the configured address there", async () => {
    // What a worker process boots: `jobs` and its dependents, no listener bound, no gateway plugin.
    const loaded = await Kernel.readConfig({ cwd: ROOT, yaml })
    const worker = await Kernel.run(loaded, Kernel.layer(loaded, { focus: "jobs", mode: "inspect" }), (k) => k)
    try {
      expect(worker.value.plugins.map((p) => p.name).sort()).toEqual(["jobs", "llm"])
      expect(worker.value.listeners.size).toBe(0)
      const entities = worker.value.graphOps.entry("entities")!.value
      const got = await entities.handler(Schema.decodeUnknownSync(entities.params)({ types: ["person"] }), "Maria Lopez met John Chen.", contexts.make())
      expect(got.map((e: any) => e.name)).toEqual(["John Chen", "Maria Lopez"])
      expect(fx.requests[0]!.headers.authorization).toBe("Bearer upstream-key")
    } finally {
      await worker.stop()
    }
  })
})
