/**
 * Helpers of the workspace tests: the platform.yaml (jobs on either backend and either file
 * store, job-graph, job-vectl, workspaces and the file-storing test operation), a graph that
 * stores a screenshot, data, a PDF and Markdown and synthesises text, and
 * a reader of the stored objects for checking the layout file by file.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { ROOT } from "../../../core/Kernel.ts"
import { pdf } from "../../fixtures/web-server.ts"
import { fastLimits } from "../jobs/support.ts"

export const OPS_PLUGIN = path.join(ROOT, "test/fixtures/plugins/workspace-test-ops")

/** A one-page PDF showing `text` (the web fixture's writer). */
export const pdfOf = (text: string): Uint8Array => new Uint8Array(pdf(text))

/** 1x1 PNG. */
export const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64")

/**
 * A graph storing a PNG screenshot, a JSON data file, a PDF saying `pdfText` and a Markdown
 * note, then synthesising `synthesis`; `delay_ms` holds each store so runs overlap.
 */
export const workspaceGraph = (o: { name?: string; pdfText: string; synthesis: string; note?: string; delayMs?: number }): string => `name: ${o.name ?? "ws_demo"}
inputs:
  - { name: topic, type: string, default: "quasars" }
stages:
  - name: files
    parallel:
      - { op: store_file, params: { name: "page one.png", base64: "${PNG.toString("base64")}", content_type: "image/png", delay_ms: ${o.delayMs ?? 0} }, output: shot }
      - { op: store_file, params: { name: "rows.json", text: '{"rows":[1,2,3]}', content_type: "application/json", delay_ms: ${o.delayMs ?? 0} }, output: data }
      - { op: store_file, params: { name: "brief.pdf", base64: "${Buffer.from(pdfOf(o.pdfText)).toString("base64")}", content_type: "application/pdf" }, output: pdf }
      - { op: store_file, params: { name: "notes.md", text: ${JSON.stringify(o.note ?? "# Notes\n\nnothing to add")}, content_type: "text/markdown; charset=utf-8" }, output: note }
  - name: synthesize
    sequential:
      - { op: set, params: { value: ${JSON.stringify(o.synthesis)} }, output: synthesis }
outputs: [synthesis, shot]
`

/** Options of `workspaceYaml`. */
export interface WorkspaceYamlOptions {
  readonly dataDir: string
  readonly backend?: "embedded" | "redis"
  readonly redisUrl?: string
  readonly prefix?: string
  readonly workers?: boolean
  readonly workerThread?: boolean
  /** `files:` block members (indented 6), default `backend: local`. */
  readonly files?: string
  readonly concurrency?: number
}

/** The platform.yaml of a workspace test: listener `jobs` on an ephemeral port. */
export const workspaceYaml = (o: WorkspaceYamlOptions): string => {
  const limits = { ...fastLimits, worker_timeout_s: 60, worker_concurrency: o.concurrency ?? 4 }
  return `data_dir: ${o.dataDir}
log: { level: error }
listeners:
  - { name: jobs, host: 127.0.0.1, port: 0 }
plugins:
  jobs:
    backend: ${o.backend ?? "embedded"}
    workers: ${o.workers ?? true}
${o.workerThread === undefined ? "" : `    worker_thread: ${o.workerThread}\n`}    limits:
${Object.entries(limits).map(([k, v]) => `      ${k}: ${JSON.stringify(v)}`).join("\n")}
${o.redisUrl ? `    redis: { url: "${o.redisUrl}", prefix: "${o.prefix ?? "ws"}", lock_s: 30 }\n` : ""}    files:
${o.files ?? "      backend: local"}
  job-graph: {}
  job-vectl: {}
  workspaces: {}
  workspace-test-ops:
    module: ${OPS_PLUGIN}
`
}

/** Every file under `dir` as `relative path → sha256`, sorted. */
export const hashTree = (dir: string): Record<string, string> => {
  const out: Record<string, string> = {}
  if (!fs.existsSync(dir)) return out
  for (const e of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue
    const full = path.join(e.parentPath, e.name)
    out[path.relative(dir, full).split(path.sep).join("/")] = createHash("sha256").update(fs.readFileSync(full)).digest("hex")
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)))
}
