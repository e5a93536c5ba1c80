/** The `job-graph` plugin's implementation, imported when the plugin is set up (see `plugin.ts`). */
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { Registry } from "../../core/Registry.ts"
import { Extensions, GraphOpRegistry } from "../../core/Services.ts"
import { JobFailure, type JobType, jobTypes } from "../jobs/Contract.ts"
import { type GraphRun, type GraphRunObserver, GraphRunObservers } from "./Contract.ts"
import { GraphPayloadFields } from "./Api.ts"
import { GraphResult, run } from "./Engine.ts"
import { formatProblem } from "./Graph.ts"
import { Graphs } from "./Graphs.ts"
import { routes } from "./Http.ts"
import { keywordAlertsOp, mergeOp, setOp } from "./Ops.ts"
import { TemplateStore } from "./Templates.ts"
import type { PluginContext } from "../../core/Plugin.ts"
import type { GraphConfig } from "./plugin.ts"

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

/** `setup` of the plugin: the `graph` job type over the contributed operations and the template store, the merge/set/keyword_alerts operations and the graph routes. */
export const setup = (ctx: PluginContext<GraphConfig>) =>
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
