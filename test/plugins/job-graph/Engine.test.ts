/**
 * The graph engine over a real registry of test operations: stage modes, parallel_foreach
 * failures kept per element, GRAPH_MAX_PARALLEL, GRAPH_TIMEOUT, cancel, partial outputs.
 */
import { beforeEach, describe, expect, it } from "vitest"
import { run } from "../../../plugins/job-graph/Engine.ts"
import { validate } from "../../../plugins/job-graph/Graph.ts"
import { JobFailure } from "../../../plugins/jobs/Contract.ts"
import { probe, testRegistry } from "./testOps.ts"

const reg = testRegistry()
const stored: Array<{ name: string; data: string }> = []
const go = (yaml: string, o: { params?: Record<string, unknown>; maxParallel?: number; timeoutMs?: number; signal?: AbortSignal } = {}) => {
  const v = validate(yaml, { ops: (n) => reg.get(n), opNames: () => reg.ids(), params: o.params ?? {} })
  if (!v.graph) throw new Error(v.problems.map((p) => `${p.line}:${p.column} ${p.path} ${p.message}`).join("; "))
  const progress: Array<[number, string | undefined]> = []
  const result = run({
    graph: v.graph,
    params: o.params ?? {},
    ops: (n) => reg.get(n),
    limits: { timeoutMs: o.timeoutMs ?? 10_000, maxParallel: o.maxParallel ?? 10, fetchTimeoutMs: 1000, embedBatchSize: 32 },
    files: {
      put: async (name, data) => {
        stored.push({ name, data: String(data) })
        return { id: name, url: `http://files.test/${name}` }
      }
    },
    progress: async (p, m) => void progress.push([p, m]),
    signal: o.signal ?? new AbortController().signal
  })
  return { result, progress }
}

beforeEach(() => {
  Object.assign(probe, { running: 0, maxRunning: 0, aborted: 0, calls: 0 })
  stored.length = 0
})

describe("graph engine", () => {
  it("parallel_foreach over 50 URLs with 3 failing returns 47 results in input order and 3 errors", async () => {
    const fail = ["http://h/7", "http://h/21", "http://h/44"]
    const { result } = go(`name: fe
stages:
  - name: discover
    sequential:
      - { op: list_urls, params: { n: 50 }, output: urls }
  - name: fetch_each
    parallel_foreach:
      input: urls
      as: url
      operations:
        - op: page
          params: { url: "{{ url }}", fail: ${JSON.stringify(fail)}, ms: 5 }
          output: page
      output: pages
outputs: [pages, pages_errors]
`)
    const r = await result
    const pages = r.outputs.pages as Array<{ url: string }>
    expect(pages).toHaveLength(47)
    expect(pages.map((p) => p.url)).toEqual(Array.from({ length: 50 }, (_, i) => `http://h/${i}`).filter((u) => !fail.includes(u)))
    const errors = r.outputs.pages_errors as Array<{ index: number; item: string; kind: string; error: string }>
    expect(errors.map((e) => [e.index, e.item, e.kind])).toEqual([[7, "http://h/7", "NETWORK_ERROR"], [21, "http://h/21", "NETWORK_ERROR"], [44, "http://h/44", "NETWORK_ERROR"]])
    expect(errors[0]!.error).toContain("answered 500")
    expect(r.stages_completed).toBe(2)
  })

  it("GRAPH_MAX_PARALLEL bounds operations across the whole graph, including parallel stages of foreach", async () => {
    const { result } = go(`name: par
stages:
  - name: discover
    sequential:
      - { op: list_urls, params: { n: 30 }, output: urls }
  - name: fan
    parallel_foreach:
      input: urls
      concurrency: 30
      operations:
        - { op: page, params: { url: "{{ item }}", ms: 20 }, output: p }
      output: pages
outputs: [pages]
`, { maxParallel: 4 })
    expect((await result).outputs.pages).toHaveLength(30)
    expect(probe.maxRunning).toBe(4)
  })

  it("conditional and loop: branches by condition, loops until the condition holds, capped by max_iterations", async () => {
    const yaml = `name: cl
inputs:
  - { name: n, type: int, default: 3 }
  - { name: deep, type: bool, default: false }
stages:
  - name: discover
    sequential:
      - { op: list_urls, params: { n: "{{ n }}" }, output: urls }
  - name: branch
    conditional:
      if: deep && length(urls) > 2
      operations:
        - { op: say, params: { text: "deep {{ length(urls) }}" }, output: mode }
      else:
        - { op: say, params: { text: "shallow" }, output: mode }
  - name: grow
    loop:
      until: length(all) >= 7
      max_iterations: 4
      operations:
        - { op: list_urls, params: { n: 1, prefix: "http://more/{{ iteration }}/" }, output: extra }
        - { op: merge, input: [all, urls, extra], output: all }
outputs: [mode, all]
`
    const a = await go(yaml).result
    expect(a.outputs.mode).toBe("shallow")
    // urls (3) + one new URL per iteration: 4, 5, 6, 7 → until holds after the 4th iteration.
    expect(a.outputs.all).toEqual(["http://h/0", "http://h/1", "http://h/2", "http://more/0/0", "http://more/1/0", "http://more/2/0", "http://more/3/0"])
    const b = await go(yaml, { params: { deep: true, n: 10 } }).result
    expect(b.outputs.mode).toBe("deep 10")
    // until holds after the first iteration (11 URLs).
    expect(b.outputs.all).toHaveLength(11)
    const capped = await go(yaml.replace("length(all) >= 7", "length(all) >= 100")).result
    expect(capped.outputs.all).toHaveLength(3 + 4)
  })

  it("a stage failure fails the run naming the stage, and keeps partial outputs and state", async () => {
    const { result } = go(`name: pf
stages:
  - name: discover
    sequential:
      - { op: list_urls, params: { n: 2 }, output: urls }
  - name: explode
    sequential:
      - { op: boom, params: { message: "model unavailable" } }
  - name: never
    sequential:
      - { op: count, input: urls, output: c }
outputs: [urls, c]
`)
    const e = await result.then(() => undefined, (x: unknown) => x)
    expect(e).toBeInstanceOf(JobFailure)
    const f = e as JobFailure
    expect(f.kind).toBe("REMOTE_ERROR")
    expect(f.message).toBe(`stage "explode" failed: boom: model unavailable`)
    expect(f.details).toMatchObject({ stage_name: "explode", message: "boom: model unavailable", stages_completed: 1, partial_outputs: { outputs: { urls: ["http://h/0", "http://h/1"], c: null }, state: { urls: ["http://h/0", "http://h/1"] } } })
  })

  it("cancel aborts every running operation within a second", async () => {
    const ac = new AbortController()
    const { result } = go(`name: slow
stages:
  - name: discover
    sequential:
      - { op: list_urls, params: { n: 8 }, output: urls }
  - name: wait
    parallel_foreach:
      input: urls
      operations:
        - { op: page, params: { url: "{{ item }}", ms: 60000 }, output: p }
      output: pages
outputs: [pages]
`, { signal: ac.signal, maxParallel: 5 })
    await new Promise((r) => setTimeout(r, 200))
    expect(probe.running).toBe(5)
    const t0 = Date.now()
    ac.abort(new JobFailure("CANCELLED", "cancelled by DELETE"))
    const e = await result.then(() => undefined, (x: unknown) => x)
    expect(Date.now() - t0).toBeLessThan(1000)
    expect((e as JobFailure).kind).toBe("CANCELLED")
    expect(probe.aborted).toBe(5)
    expect(probe.running).toBe(0)
    expect(probe.calls).toBe(5)
  })

  it("GRAPH_TIMEOUT ends a run with TIMEOUT and partial outputs", async () => {
    const { result } = go(`name: to
stages:
  - name: discover
    sequential:
      - { op: list_urls, params: { n: 1 }, output: urls }
  - name: wait
    sequential:
      - { op: page, params: { url: "x", ms: 60000 }, output: p }
outputs: [urls, p]
`, { timeoutMs: 300 })
    const e = (await result.then(() => undefined, (x: unknown) => x)) as JobFailure
    expect(e.kind).toBe("TIMEOUT")
    expect(e.message).toContain("GRAPH_TIMEOUT")
    expect(e.details).toMatchObject({ stage_name: "wait", partial_outputs: { outputs: { urls: ["http://h/0"], p: null } } })
    expect(probe.aborted).toBe(1)
  })

  it("records artifacts written through the file store and an artifacts index; progress moves stage by stage", async () => {
    const { result, progress } = go(`name: art
inputs:
  - { name: topic, type: string, required: true }
stages:
  - name: one
    sequential:
      - { op: store_note, params: { text: "# {{ upper(topic) }}" }, output: note }
  - name: two
    sequential:
      - { op: say, params: { text: "done: {{ note.url }}" }, output: s }
outputs: [s]
`, { params: { topic: "solar" } })
    const r = await result
    expect(r.outputs.s).toBe("done: http://files.test/note.md")
    expect(r.artifacts).toEqual([{ name: "note.md", url: "http://files.test/note.md", content_type: "text/markdown", size_bytes: 7, stage: "one", op: "store_note" }])
    expect(r.artifacts_url).toBe("http://files.test/artifacts.json")
    expect(stored.find((s) => s.name === "note.md")!.data).toBe("# SOLAR")
    expect(JSON.parse(stored.find((s) => s.name === "artifacts.json")!.data).artifacts).toHaveLength(1)
    expect(progress.map((p) => p[1])).toEqual(["stage 1/2 one: started", "stage 1/2 one: 1 operation(s)", "stage 2/2 two: started", "stage 2/2 two: 1 operation(s)"])
    expect(progress.map((p) => p[0])).toEqual([0, 50, 50, 99])
  })
})
