/**
 * Graph pipelines: a 200-URL `fetch_batch` → `to_text_batch` → `chunk` → `embed_batch`
 * pipeline against the local fixture web (`/gen/1..200`), three ways, on the real operations of
 * a booted platform (web, text, job-vectl with the hashing embedder):
 * - `direct`: the four op handlers called one after another (params and inputs decoded with
 *   their Schemas, as the engine does): the work itself;
 * - `engine`: the same graph run by the graph engine in process (validation excluded);
 * - `job`: the same graph submitted as a graph job over the Jobs API and polled to COMPLETED.
 *
 * Figures (medians of `GRAPH_BENCH_ROUNDS`, default 5, after one warm-up): `*_pages_per_s`,
 * `*_ms`, `engine_overhead_ms_per_op` = (engine − direct) / 4 operations, and
 * `job_overhead_ms` = job − engine (queueing, records, result storage, polling at 20 ms).
 */
import * as Schema from "effect/Schema"
import { ROOT, startPlatform } from "../core/Kernel.ts"
import type { GraphOpContext } from "../core/Contribution.ts"
import { run } from "../plugins/job-graph/Engine.ts"
import { validate } from "../plugins/job-graph/Graph.ts"
import { webServer } from "../test/fixtures/web-server.ts"
import { jobsClient, platformYaml, tempDir } from "../test/plugins/jobs/support.ts"

const N = 200
const ROUNDS = Number(process.env.GRAPH_BENCH_ROUNDS ?? 5)
const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d

const GRAPH = `name: bench_pipeline
inputs:
  - { name: urls, type: "url[]", required: true }
stages:
  - name: acquire
    sequential:
      - { op: fetch_batch, input: urls, output: pages }
  - name: read
    sequential:
      - { op: to_text_batch, input: pages, output: texts }
      - { op: chunk, input: texts, output: chunks }
  - name: embed
    sequential:
      - { op: embed_batch, input: chunks, output: vectors }
outputs: [vectors]
`

export const benchGraph = async (): Promise<Record<string, number>> => {
  const web = await webServer()
  const platform = await startPlatform({
    cwd: ROOT,
    yaml: platformYaml({
      backend: "embedded",
      dataDir: tempDir("bench-graph-"),
      extra: `  job-graph: {}\n  web:\n    per_host_per_minute: 1000000\n    per_host_burst: 1000\n  text: {}\n  job-vectl: {}\n`
    })
  })
  try {
    const urls = Array.from({ length: N }, (_, i) => `${web.url}/gen/${i + 1}`)
    const ops = platform.kernel.graphOps
    const limits = { fetchTimeoutMs: 30_000, embedBatchSize: 32, maxParallel: 10, timeoutMs: 3_600_000 }
    const files = { put: async (name: string) => ({ id: name, url: `memory:${name}` }) }
    const ctx = (): GraphOpContext => ({ signal: new AbortController().signal, files, progress: async () => {}, limits })
    const call = async (name: string, input: unknown, params: unknown = {}) => {
      const op = ops.get(name)!
      return op.handler(Schema.decodeUnknownSync(op.params)(params), Schema.decodeUnknownSync(op.input)(input), ctx())
    }
    const direct = async () => {
      const t0 = performance.now()
      const pages = await call("fetch_batch", urls)
      const texts = await call("to_text_batch", pages)
      const chunks = await call("chunk", texts)
      const vectors = (await call("embed_batch", chunks)) as Array<unknown>
      if (vectors.length < N) throw new Error(`direct: ${vectors.length} vectors for ${N} pages`)
      return performance.now() - t0
    }
    const v = validate(GRAPH, { ops: (n) => ops.get(n), opNames: () => ops.ids(), params: { urls } })
    if (!v.graph) throw new Error(JSON.stringify(v.problems))
    const engine = async () => {
      const t0 = performance.now()
      const r = await run({ graph: v.graph!, params: { urls }, ops: (n) => ops.get(n), limits, files, progress: async () => {}, signal: new AbortController().signal })
      if ((r.outputs.vectors as Array<unknown>).length < N) throw new Error("engine: vectors missing")
      return performance.now() - t0
    }
    const api = jobsClient(platform.url("jobs"))
    const job = async () => {
      const t0 = performance.now()
      const s = await api.submit("graph", { graph: GRAPH, params: { urls } })
      const j = await api.waitFor(s.body.job_id, undefined, 300_000)
      if (j.status !== "COMPLETED") throw new Error(`job ${j.status}: ${j.error}`)
      return performance.now() - t0
    }
    await direct()
    await engine()
    const d: Array<number> = []
    const e: Array<number> = []
    const j: Array<number> = []
    for (let i = 0; i < ROUNDS; i++) {
      d.push(await direct())
      e.push(await engine())
      j.push(await job())
    }
    const [dm, em, jm] = [median(d), median(e), median(j)]
    const out = {
      pages: N,
      direct_ms: round(dm),
      engine_ms: round(em),
      job_ms: round(jm),
      direct_pages_per_s: round((N * 1000) / dm),
      engine_pages_per_s: round((N * 1000) / em),
      job_pages_per_s: round((N * 1000) / jm),
      engine_overhead_ms_per_op: round((em - dm) / 4, 2),
      job_overhead_ms: round(jm - em)
    }
    for (const [k, x] of Object.entries(out)) console.log(`${k.padEnd(28)} ${x}`)
    return out
  } finally {
    await platform.stop()
    await web.close()
  }
}
