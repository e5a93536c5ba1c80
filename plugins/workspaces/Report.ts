/**
 * The Markdown a workspace stores: each run's `report.md` (what ran, its outputs, its files or
 * its failure) and the aggregated `outputs/summary.md` (every run, with the syntheses).
 */
import type { GraphRun, GraphRunOutcome } from "../job-graph/Contract.ts"
import type { ArtifactRecord, RunManifest, WorkspaceManifest } from "./Api.ts"

const block = (v: unknown): string => {
  if (typeof v === "string") return v.trim() === "" ? "_(empty)_" : v.trim()
  const text = JSON.stringify(v, null, 2) ?? "null"
  return "```json\n" + (text.length > 20_000 ? `${text.slice(0, 20_000)}\n... (${text.length} characters in all, see result.json)` : text) + "\n```"
}

/** What a run report is made from. */
export interface RunReportInput {
  readonly workspace: WorkspaceManifest
  readonly run: GraphRun
  readonly outcome: GraphRunOutcome
  /** The run's files filed so far (result, screenshots, data). */
  readonly files: ReadonlyArray<ArtifactRecord>
  readonly finishedAt: string
  readonly durationSeconds: number
}

/** `runs/{run_id}/report.md`: header facts, then each named output (strings as Markdown), the files, or the error. */
export const runReport = (i: RunReportInput): string => {
  const { run, outcome } = i
  const lines = [
    `# ${run.graphName}`,
    "",
    `- run: \`${run.jobId}\` (attempt ${run.attempt}) in workspace "${i.workspace.name}" (\`${i.workspace.workspace_id}\`)`,
    `- status: ${outcome.status}`,
    ...(run.template ? [`- template: ${run.template}`] : []),
    `- started: ${run.startedAt}, finished: ${i.finishedAt} (${i.durationSeconds.toFixed(3)} s)`,
    ...(Object.keys(run.params).length ? [`- params: \`${JSON.stringify(run.params)}\``] : []),
    ""
  ]
  if (outcome.status === "COMPLETED") {
    lines.push(`Stages completed: ${outcome.result.stages_completed} of ${outcome.result.stages_total}.`, "")
    for (const [name, value] of Object.entries(outcome.result.outputs)) lines.push(`## ${name}`, "", block(value), "")
  } else {
    lines.push(`## Error (${outcome.errorKind})`, "", outcome.error, "")
    const stage = outcome.details?.["stage_name"]
    if (typeof stage === "string") lines.push(`Failing stage: ${stage}.`, "")
  }
  if (i.files.length) {
    lines.push("## Files", "")
    for (const f of i.files) lines.push(`- \`${f.path}\` (${f.artifact_type}, ${f.size_bytes} bytes)`)
    lines.push("")
  }
  return lines.join("\n")
}

/** `outputs/summary.md`: the workspace and its runs in order (graph, status, duration, finish). */
export const summaryReport = (m: WorkspaceManifest, runs: ReadonlyArray<RunManifest>): string => {
  const lines = [`# ${m.name}`, "", m.description, "", `${runs.length} run(s).`, "", "| run | graph | status | duration s | finished |", "|---|---|---|---|---|"]
  for (const r of runs) lines.push(`| \`${r.run_id}\` | ${r.graph_name} | ${r.status} | ${r.duration_seconds.toFixed(3)} | ${r.finished_at} |`)
  lines.push("")
  return lines.join("\n")
}
