/**
 * graph jobs end to end: the real kernel boots `jobs`, `job-graph` and a plugin contributing
 * test operations; graphs and templates go through the Jobs API and the template routes.
 */
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import { jobsClient, platformYaml, tempDir } from "../jobs/support.ts"

let platform: Awaited<ReturnType<typeof startPlatform>>
let api: ReturnType<typeof jobsClient>
let base: string
let dataDir: string

const OPS_PLUGIN = path.join(ROOT, "test/fixtures/plugins/graph-test-ops")
const extra = `  job-graph:\n    max_parallel: 4\n  graph-test-ops:\n    module: ${OPS_PLUGIN}\n`

const GRAPH = `name: demo
inputs:
  - { name: n, type: int, default: 4 }
stages:
  - name: discover
    sequential:
      - { op: list_urls, params: { n: "{{ n }}" }, output: urls }
  - name: fetch_each
    parallel_foreach:
      input: urls
      as: url
      operations:
        - { op: page, params: { url: "{{ url }}", fail: ["http://h/2"] }, output: page }
      output: pages
  - name: note
    sequential:
      - { op: store_note, params: { text: "{{ length(pages) }} pages" }, output: note }
outputs: [urls, pages, note]
`

beforeAll(async () => {
  dataDir = tempDir()
  platform = await startPlatform({ cwd: ROOT, yaml: platformYaml({ backend: "embedded", dataDir, extra }) })
  base = platform.url("jobs")
  api = jobsClient(base)
})
afterAll(async () => {
  await platform?.stop()
})

describe("graph jobs over the Jobs API", () => {
  it("runs an inline graph to COMPLETED with the GraphResult, artifacts downloadable", async () => {
    const r = await api.submit("graph", { graph: GRAPH, params: { n: 5 } })
    expect(r.status).toBe(202)
    const j = await api.waitFor(r.body.job_id)
    expect(j).toMatchObject({ status: "COMPLETED", progress: 100, result: { graph_name: "demo", stages_completed: 3, stages_total: 3 } })
    const res = j.result as { outputs: Record<string, any>; state: Record<string, unknown>; artifacts: Array<{ url: string; name: string }>; artifacts_url: string }
    expect(res.outputs.urls).toHaveLength(5)
    expect(res.outputs.pages.map((p: { url: string }) => p.url)).toEqual(["http://h/0", "http://h/1", "http://h/3", "http://h/4"])
    expect(res.state.pages_errors).toMatchObject([{ index: 2, item: "http://h/2", kind: "NETWORK_ERROR" }])
    expect(await (await fetch(res.outputs.note.url)).text()).toBe("4 pages")
    expect(res.artifacts.map((a) => a.name)).toEqual(["note.md"])
    expect(((await (await fetch(res.artifacts_url)).json()) as any).artifacts).toHaveLength(1)
  })

  it("answers 422 with the job FAILED (VALIDATION_ERROR) listing every problem with line, column and path", async () => {
    const bad = GRAPH.replace("op: page", "op: pgae").replace("outputs: [urls, pages, note]", "outputs: [urls, pages, report]")
    const r = await api.submit("graph", { graph: bad, params: { n: "five" } })
    expect(r.status).toBe(422)
    expect(r.body).toMatchObject({ status: "FAILED", error_kind: "VALIDATION_ERROR" })
    expect(r.body.error).toContain(`graph.stages[1].parallel_foreach.operations[0].op: line 13, column 17: unknown operation "pgae" (did you mean "page"?)`)
    expect(r.body.error_details.issues).toEqual([
      { path: "params.n", message: "line 3, column 5: params.n must be int: Expected number, actual \"five\"" },
      { path: "graph.stages[1].parallel_foreach.operations[0].op", message: `line 13, column 17: unknown operation "pgae" (did you mean "page"?)` },
      { path: "graph.outputs[2]", message: `line 18, column 24: output "report" is not written by any stage` }
    ])
    const neither = await api.submit("graph", { params: {} })
    expect(neither.status).toBe(422)
    expect(neither.body.error).toContain("give exactly one of graph (inline YAML) or template")
  })

  it("a stage failure ends the job FAILED naming the stage, with partial_outputs on the job", async () => {
    const g = `name: breaks
stages:
  - name: discover
    sequential:
      - { op: list_urls, params: { n: 2 }, output: urls }
  - name: explode
    sequential:
      - { op: boom, params: { message: "upstream said no" } }
outputs: [urls]
`
    const j = await api.waitFor((await api.submit("graph", { graph: g, retry_policy: { max_retries: 0 } })).body.job_id)
    expect(j).toMatchObject({ status: "FAILED", error_kind: "REMOTE_ERROR", error: `REMOTE_ERROR: stage "explode" failed: boom: upstream said no` })
    expect((j as any).error_details).toMatchObject({ stage_name: "explode", message: "boom: upstream said no", partial_outputs: { outputs: { urls: ["http://h/0", "http://h/1"] } } })
  })

  it("DELETE of a running graph job cancels it and stops its operations within a second", async () => {
    const g = GRAPH.replace(`fail: ["http://h/2"] }`, `ms: 60000 }`)
    const r = await api.submit("graph", { graph: g, params: { n: 6 } })
    await api.waitFor(r.body.job_id, (j) => j.status === "PROCESSING" && (j.message ?? "").includes("fetch_each"))
    const t0 = Date.now()
    expect((await api.cancel(r.body.job_id)).status).toBe(200)
    const j = await api.waitFor(r.body.job_id)
    expect(j.status).toBe("CANCELLED")
    expect(Date.now() - t0).toBeLessThan(1000)
  })

  it("custom templates: register (YAML or JSON), list, run by name, refuse built-in names and invalid ones, delete", async () => {
    const tpl = GRAPH.replace("name: demo", "name: my_pages\nversion: \"1.2\"\ndescription: pages of n URLs")
    const post = await fetch(`${base}/api/v1/templates`, { method: "POST", headers: { "content-type": "application/yaml" }, body: tpl })
    expect(post.status).toBe(201)
    expect(await post.json()).toMatchObject({ name: "my_pages", builtin: false, version: "1.2" })
    const again = await fetch(`${base}/api/v1/templates`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ yaml: tpl }) })
    expect(again.status).toBe(200)
    const list = (await (await fetch(`${base}/api/v1/templates`)).json()) as Array<{ name: string; builtin: boolean }>
    expect(list.find((t) => t.name === "my_pages")).toMatchObject({ builtin: false })
    expect(list.filter((t) => t.builtin).map((t) => t.name).sort()).toEqual([
      "basic_research", "company_profile", "dark_web_monitor", "deep_research", "iterative_crawl",
      "news_aggregation", "opposition_research", "source_comparison", "temporal_analysis", "video_analysis"
    ])
    const j = await api.waitFor((await api.submit("graph", { template: "my_pages", params: { n: 3 } })).body.job_id)
    expect(j).toMatchObject({ status: "COMPLETED", result: { graph_name: "my_pages" } })
    expect(((j.result as any).outputs.pages as unknown[]).length).toBe(2)
    const builtin = await fetch(`${base}/api/v1/templates`, { method: "POST", headers: { "content-type": "application/yaml" }, body: tpl.replace("name: my_pages", "name: basic_research") })
    expect(builtin.status).toBe(409)
    const invalid = await fetch(`${base}/api/v1/templates`, { method: "POST", headers: { "content-type": "application/yaml" }, body: tpl.replace("op: list_urls", "op: list_ulrs") })
    expect(invalid.status).toBe(422)
    expect(((await invalid.json()) as any).problems).toEqual([{ line: 9, column: 15, path: "stages[0].sequential[0].op", message: `unknown operation "list_ulrs" (did you mean "list_urls"?)` }])
    expect((await fetch(`${base}/api/v1/templates/my_pages`)).status).toBe(200)
    expect((await fetch(`${base}/api/v1/templates/my_pages`, { method: "DELETE" })).status).toBe(204)
    expect((await fetch(`${base}/api/v1/templates/my_pages`, { method: "DELETE" })).status).toBe(404)
    expect((await fetch(`${base}/api/v1/templates/basic_research`, { method: "DELETE" })).status).toBe(409)
    const gone = await api.submit("graph", { template: "my_pages" })
    expect(gone.status).toBe(422)
    expect(gone.body.error).toContain(`unknown template "my_pages"`)
  })

  it("lists operations with their types, and validates without running", async () => {
    const ops = (await (await fetch(`${base}/api/v1/graph/operations`)).json()) as Array<{ name: string; plugin: string; input_types: string[]; output_type: string }>
    expect(ops.find((o) => o.name === "merge")).toMatchObject({ plugin: "job-graph", input_types: ["any[]"], output_type: "any[]" })
    expect(ops.find((o) => o.name === "text_of")).toMatchObject({ plugin: "graph-test-ops", input_types: ["html[]", "html"], output_type: "text[]" })
    const v = await (await fetch(`${base}/api/v1/graph/validate`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ graph: GRAPH.replace("input: urls", "input: pages") }) })).json()
    expect(v).toMatchObject({ valid: false, problems: [{ line: 10, path: "stages[1].parallel_foreach.input" }] })
  })
})
