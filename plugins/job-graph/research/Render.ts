/**
 * How the research client shows a finished graph job in the terminal: Markdown text (the
 * synthesis, timelines) rendered with marked + marked-terminal, lists and records as
 * cli-table3 tables, artifacts with their URLs; a failure with its stage and error.
 */
import Table from "cli-table3"
import { Marked } from "marked"
import { markedTerminal } from "marked-terminal"
import type { Job } from "./Client.ts"

/** The graph job result fields shown (GraphResult of the job-graph plugin). */
interface GraphResultView {
  readonly graph_name?: string
  readonly stages_completed?: number
  readonly stages_total?: number
  readonly duration_seconds?: number
  readonly outputs?: Record<string, unknown>
  readonly artifacts?: ReadonlyArray<{ name: string; url: string; size_bytes?: number | null; content_type?: string | null }>
  readonly artifacts_url?: string
}

/** Terminal width for wrapping (80 when not a terminal). */
const width = (): number => Math.max(40, Math.min(process.stdout.columns ?? 80, 120))

/** Markdown `md` as terminal text (headings, emphasis, lists, tables, links shown with their URL). */
export const markdown = (md: string): string => {
  const m = new Marked(markedTerminal({ width: width(), reflowText: true, tab: 2 }))
  return (m.parse(md, { async: false }) as string).trimEnd()
}

/** Cuts `s` to `n` characters with an ellipsis, on one line. */
const cut = (s: string, n: number): string => {
  const one = s.replace(/\s+/g, " ").trim()
  return one.length > n ? `${one.slice(0, n - 1)}…` : one
}

// URLs stay whole: a clipped link cannot be opened.
const cell = (v: unknown, n: number): string =>
  v === null || v === undefined ? "-" : typeof v === "object" ? cut(JSON.stringify(v), n) : /^https?:\/\/\S+$/.test(String(v)) ? String(v) : cut(String(v), n)

const table = (head: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  // No rule between body rows: a list reads as a list.
  const t = new Table({ head: [...head], style: { head: [], border: [] }, wordWrap: true, chars: { mid: "", "left-mid": "", "mid-mid": "", "right-mid": "" } })
  for (const r of rows) t.push([...r])
  return t.toString()
}

/** Keys worth a column: those of the first rows, preferring short ones, at most `max`. */
const columns = (rows: ReadonlyArray<Record<string, unknown>>, max: number): Array<string> => {
  const keys: Array<string> = []
  for (const r of rows.slice(0, 5)) for (const k of Object.keys(r)) if (!keys.includes(k)) keys.push(k)
  // The bulky members (page HTML, full texts) would push every other column out of sight.
  return keys.filter((k) => !["html", "text", "content", "markdown", "vector", "embedding"].includes(k)).slice(0, max)
}

/** One output value: Markdown for text, a table for lists and records. */
export const renderValue = (name: string, value: unknown): string => {
  const title = `── ${name} `.padEnd(Math.min(width(), 60), "─")
  if (typeof value === "string") return `${title}\n${markdown(value)}`
  if (Array.isArray(value)) {
    if (value.length === 0) return `${title}\n(none)`
    const shown = value.slice(0, 20)
    const more = value.length > shown.length ? `\n… ${value.length - shown.length} more` : ""
    if (shown.every((v) => typeof v !== "object" || v === null)) {
      return `${title}\n${table(["#", name], shown.map((v, i) => [String(i + 1), cell(v, width() - 12)]))}${more}`
    }
    const rows = shown as Array<Record<string, unknown>>
    const cols = columns(rows, 4)
    const each = Math.max(12, Math.floor((width() - 8) / Math.max(1, cols.length)) - 3)
    return `${title}\n${table(["#", ...cols], rows.map((r, i) => [String(i + 1), ...cols.map((c) => cell(r[c], each))]))}${more}`
  }
  if (typeof value === "object" && value !== null) {
    const o = value as Record<string, unknown>
    // A report: its stored Markdown is at file_url; the table gives the link.
    if (typeof o.summary === "string" && Array.isArray(o.aspects)) {
      const aspects = (o.aspects as Array<Record<string, unknown>>).map((a) => [cell(a.aspect ?? a.name, 30), cell(a.summary ?? a.comparison ?? a.differences ?? a, width() - 40)])
      return `${title}\n${markdown(o.summary)}${aspects.length ? `\n${table(["aspect", "comparison"], aspects)}` : ""}`
    }
    return `${title}\n${table(["field", "value"], Object.entries(o).filter(([k]) => k !== "markdown" && k !== "text").map(([k, v]) => [k, cell(v, width() - 30)]))}`
  }
  return `${title}\n${cell(value, width())}`
}

/** Seconds as `12.3 s` or `2 min 05 s`. */
export const seconds = (s: number): string => (s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${String(Math.round(s % 60)).padStart(2, "0")} s`)

/** The whole finished job: status line, outputs (synthesis first), artifacts; or the failure. */
export const renderJob = (job: Job): string => {
  const took = job.duration_seconds !== undefined ? ` in ${seconds(job.duration_seconds)}` : ""
  if (job.status === "CANCELLED") return `✖ ${job.job_id} CANCELLED${took}`
  if (job.status === "FAILED") {
    const details = job.error_details as { stage_name?: string; partial_outputs?: { outputs?: Record<string, unknown> } } | undefined
    const partial = Object.keys(details?.partial_outputs?.outputs ?? {})
    return [
      `✖ ${job.job_id} FAILED${took}${job.error_kind ? ` (${job.error_kind})` : ""}`,
      `  ${job.error ?? "no error message"}`,
      ...(partial.length ? [`  partial outputs: ${partial.join(", ")}`] : [])
    ].join("\n")
  }
  const r = (job.result ?? {}) as GraphResultView
  const parts = [`✔ ${job.job_id} ${job.status}${took} · ${r.graph_name ?? "graph"} · ${r.stages_completed ?? "?"}/${r.stages_total ?? "?"} stages`]
  const outputs = Object.entries(r.outputs ?? {})
  // The answer first: it is what the user asked for.
  outputs.sort(([a], [b]) => Number(b === "synthesis") - Number(a === "synthesis"))
  for (const [name, value] of outputs) parts.push(renderValue(name, value))
  const artifacts = r.artifacts ?? []
  if (artifacts.length > 0) {
    // URLs whole, never clipped by a table column: they are meant to be opened.
    const lines = artifacts.map((a) => `  ${a.name}${a.size_bytes ? ` (${a.size_bytes} bytes)` : ""}  ${a.url}`)
    parts.push(`${"── artifacts ".padEnd(Math.min(width(), 60), "─")}\n${lines.join("\n")}`)
  }
  if (r.artifacts_url) parts.push(`artifacts index: ${r.artifacts_url}`)
  return parts.join("\n\n")
}
