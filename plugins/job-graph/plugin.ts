/**
 * Plugin `job-graph`: the `graph` job type (research-jobs spec, "graph"): staged pipelines of
 * graph operations, inline YAML or one of the templates, validated as a whole before anything
 * runs; the template routes; the `merge` operation; `platform graph` commands and the terminal
 * research client `platform research` (an HTTP client of this job type, `research/`).
 *
 * The engine knows no operation by name: it reads the kernel's graph operation registry, so a
 * plugin contributing `graphOps` adds operations every graph and template can use at once.
 * Limits (spec, "Limits"): GRAPH_TIMEOUT 3600 s, GRAPH_MAX_PARALLEL 10, FETCH_TIMEOUT 30 s,
 * EMBED_BATCH_SIZE 32.
 */
import * as path from "node:path"
import { Effect, Either, Schema } from "effect"
import { configOption, definePlugin } from "../../core/Plugin.ts"
import type { Registry } from "../../core/Registry.ts"
import { Extensions, GraphOpRegistry } from "../../core/Services.ts"
import { JobFailure, type JobType, jobTypes } from "../jobs/Contract.ts"
import { type GraphRun, type GraphRunObserver, GraphRunObservers } from "./Contract.ts"
import { GraphPayloadFields, GraphProblem, OperationInfo, TemplateInfo, ValidationReport } from "./Api.ts"
import { GraphResult, run } from "./Engine.ts"
import { formatProblem } from "./Graph.ts"
import { Graphs } from "./Graphs.ts"
import { routes } from "./Http.ts"
import { keywordAlertsOp, mergeOp, setOp } from "./Ops.ts"
import { TemplateStore } from "./Templates.ts"

const opt = configOption

/** Config of `plugins.job-graph`. */
export const GraphConfig = Schema.Struct({
  timeout_s: opt(Schema.Int.pipe(Schema.between(1, 86_400)), 3600, "GRAPH_TIMEOUT: longest run of one graph, seconds"),
  max_parallel: opt(Schema.Int.pipe(Schema.between(1, 256)), 10, "GRAPH_MAX_PARALLEL: operations running at once across one graph"),
  fetch_timeout_s: opt(Schema.Number.pipe(Schema.between(1, 600)), 30, "FETCH_TIMEOUT: deadline of one fetch by an operation, seconds"),
  embed_batch_size: opt(Schema.Int.pipe(Schema.between(1, 2048)), 32, "EMBED_BATCH_SIZE: texts per embedding call")
}).annotations({ identifier: "JobGraphConfig" })
export type GraphConfig = typeof GraphConfig.Type

/** The `graph` job payload, validated as a whole against the operations and templates. */
export const graphPayload = (graphs: Graphs) =>
  GraphPayloadFields.pipe(Schema.filter((p) => {
    const r = graphs.resolve(p)
    if (Either.isRight(r)) return true
    return r.left.problems.map((x) => ({
      path: x.path.startsWith("params.") ? ["params", x.path.slice(7)] : x.path === "" ? [r.left.field] : [r.left.field, x.path],
      message: `line ${x.line}, column ${x.column}: ${x.message}`
    }))
  }))

/** The `graph` job type over `graphs`; `observers` are told of each run (workspaces). */
export const graphJob = (graphs: Graphs, c: GraphConfig, observers?: Registry<GraphRunObserver>): JobType<typeof GraphPayloadFields.Type, GraphResult> => ({
  id: "graph",
  description: "Runs a staged pipeline of graph operations (inline YAML or a template with params); result: outputs, state and artifacts.",
  payload: graphPayload(graphs),
  result: GraphResult,
  handler: async (p, ctx) => {
    const r = graphs.resolve(p)
    // Validated at submit; a worker whose operations or templates differ reports it here.
    if (Either.isLeft(r)) throw new JobFailure("VALIDATION_ERROR", r.left.problems.map(formatProblem).join("; "), false, { problems: r.left.problems })
    const run_: GraphRun = {
      jobId: ctx.jobId,
      attempt: ctx.attempt,
      graphName: r.right.name,
      template: p.template ?? null,
      params: p.params,
      workspaceId: p.workspace_id,
      startedAt: new Date().toISOString()
    }
    const watchers = observers?.values().map((e) => e.value) ?? []
    for (const o of watchers) await o.onStart?.(run_, { signal: ctx.signal })
    let result: GraphResult
    try {
      result = await run({
        graph: r.right,
        params: p.params,
        ops: (n) => graphs.ops.get(n),
        limits: { timeoutMs: c.timeout_s * 1000, maxParallel: c.max_parallel, fetchTimeoutMs: c.fetch_timeout_s * 1000, embedBatchSize: c.embed_batch_size },
        files: ctx.files,
        progress: ctx.progress,
        signal: ctx.signal,
        workspaceId: p.workspace_id
      })
    } catch (e) {
      if (!ctx.signal.aborted && e instanceof JobFailure) {
        for (const o of watchers) await o.onFinished(run_, { status: "FAILED", errorKind: e.kind, error: e.message, ...(e.details ? { details: e.details } : {}) }, { signal: ctx.signal, files: ctx.files })
      }
      throw e
    }
    for (const o of watchers) await o.onFinished(run_, { status: "COMPLETED", result }, { signal: ctx.signal, files: ctx.files })
    return result
  }
})

export default definePlugin({
  name: "job-graph",
  version: "0.1.0",
  description: "graph jobs: staged pipelines of contributed graph operations (sequential, parallel, parallel_foreach, conditional, loop); ten built-in templates and custom templates.",
  dependsOn: ["jobs"],
  defaultListener: "jobs",
  config: GraphConfig,
  resources: { GraphPayload: GraphPayloadFields, GraphResult, GraphProblem, GraphValidationReport: ValidationReport, GraphOperationInfo: OperationInfo, GraphTemplate: TemplateInfo },
  setup: (ctx) =>
    Effect.gen(function*() {
      const ops = yield* GraphOpRegistry
      const templates = yield* Effect.try({
        try: () => new TemplateStore(path.join(ctx.dataDir, "templates")),
        catch: (e) => e as Error
      }).pipe(Effect.orDie)
      const graphs = new Graphs(ops, templates)
      const observers = (yield* Extensions).registry(GraphRunObservers)
      return {
        extensions: jobTypes(graphJob(graphs, ctx.config, observers)),
        graphOps: [mergeOp, setOp, keywordAlertsOp],
        routes: routes(graphs),
        status: () => ({ operations: ops.ids().length, templates: templates.list().length })
      }
    })
})
