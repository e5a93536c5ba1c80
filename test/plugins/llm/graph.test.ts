/**
 * The llm operations inside a real graph job: the kernel boots `jobs`, `job-graph`, the
 * `gateway` (an `upstream` engine on the model fixture) and `llm`; an inline graph goes through
 * the Jobs API and runs entities and topics in parallel (sharing the gateway's one engine),
 * store_entity, integrate, compare and to_report.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, type RunningPlatform, startPlatform } from "../../../core/Kernel.ts"
import { EntityStore, entityStoreDir } from "../../../plugins/llm/Contract.ts"
import { type ModelServer, startModelServer } from "../../fixtures/model-server.ts"
import { jobsClient, tempDir } from "../jobs/support.ts"
import { BLOG, CHUNKS, NEWS } from "./support.ts"

process.env.PLATFORM_LOG_LEVEL ??= "error"

const TOKEN = "gateway-token-123456"
let fx: ModelServer
let platform: RunningPlatform
let api: ReturnType<typeof jobsClient>
let dataDir: string

const GRAPH = `name: llm_pipeline
inputs:
  - { name: question, type: string, default: "When will Bolt Corp enter the market?" }
stages:
  - name: material
    sequential:
      - { op: set, params: { value: ${JSON.stringify([NEWS, BLOG])} }, output: texts }
      - { op: set, params: { value: ${JSON.stringify(CHUNKS)} }, output: chunks }
  - name: analyse
    parallel:
      - { op: entities, input: texts, output: entities }
      - { op: topics, input: texts, params: { max_topics: 3 }, output: topics }
  - name: store
    sequential:
      - { op: store_entity, input: entities, params: { store: graph-e2e }, output: stored }
  - name: synthesize
    sequential:
      - { op: integrate, input: chunks, params: { query: "{{ question }}" }, output: synthesis }
      - { op: compare, input: texts, params: { aspects: [Berlin] }, output: comparison }
      - op: to_report
        input: [synthesis, entities, comparison]
        params: { title: "Bolt Corp and Acme Robotics" }
        output: report
outputs: [entities, topics, stored, synthesis, comparison, report]
`

beforeAll(async () => {
  fx = await startModelServer()
  dataDir = tempDir("llm-graph-")
  platform = await startPlatform({
    cwd: ROOT,
    yaml: `data_dir: ${dataDir}
log: { level: error }
listeners:
  - { name: gateway, host: 127.0.0.1, port: 0 }
  - { name: jobs, host: 127.0.0.1, port: 0 }
plugins:
  gateway:
    token: ${TOKEN}
    engines:
      - { id: model-linear, kind: upstream, default: true, url: "${fx.url}" }
  jobs:
    backend: embedded
    files: { backend: local }
  job-graph: {}
  llm:
    api_key: ${TOKEN}
`
  })
  api = jobsClient(platform.url("jobs"))
})
afterAll(async () => {
  await platform?.stop()
  await fx?.close()
})

describe("llm operations in a graph job", () => {
  it("runs entities → store_entity → integrate → compare → to_report through the gateway to COMPLETED", async () => {
    const r = await api.submit("graph", { graph: GRAPH, params: {} })
    expect(r.status).toBe(202)
    const j = await api.waitFor(r.body.job_id, undefined, 30_000)
    expect(j).toMatchObject({ status: "COMPLETED", result: { graph_name: "llm_pipeline", stages_completed: 4, stages_total: 4 } })
    const out = (j.result as { outputs: Record<string, any> }).outputs
    expect(out.entities.find((e: any) => e.name === "Acme Robotics")).toMatchObject({ type: "organization", mentions: 3, sources: [NEWS.url, BLOG.url] })
    expect(out.topics).toHaveLength(3)
    expect(out.stored).toEqual({ store: "graph-e2e", stored: out.entities.length, total: out.entities.length })
    expect(out.synthesis).toContain("Bolt Corp plans to enter Berlin on 2026-05-01. [2]")
    expect(out.synthesis).toMatch(/\n\nSources:\n\[2\] https:\/\/blog\.example\/robots$/)
    expect(out.comparison.aspects[0]).toMatchObject({ aspect: "Berlin", verdict: "All sources discuss Berlin." })
    // The report is served by the jobs listener's file store, with every URL of its inputs listed.
    expect(out.report.title).toBe("Bolt Corp and Acme Robotics")
    const md = await (await fetch(out.report.file_url)).text()
    expect(md).toBe(out.report.markdown)
    expect(md.split("\n## Sources\n\n")[1]!.trim().split("\n")).toEqual([`1. <${BLOG.url}>`, `2. <${NEWS.url}>`])
    // entities and topics ran in parallel on the gateway's one engine: both reached the model.
    expect(fx.chats().map((b) => b.response_format?.json_schema?.name ?? "text").sort()).toEqual(["comparison", "entities", "text", "text", "topics"])
    const stored = await new EntityStore(entityStoreDir(dataDir)).get("graph-e2e")
    expect(stored!.entities.map((e) => e.name)).toContain("Maria Lopez")
  })

  it("rejects a graph giving to_report no input before anything runs", async () => {
    const bad = `name: no_material
stages:
  - name: report
    sequential:
      - { op: to_report, params: { title: "x" }, output: report }
outputs: [report]
`
    const r = await api.submit("graph", { graph: bad, params: {} })
    expect(r.status).toBe(422)
    expect(r.body.error).toContain(`operation "to_report" needs an input of type any`)
  })
})
