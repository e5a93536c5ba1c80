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
import * as Schema from "effect/Schema"
import { configOption, definePlugin, lazySetup } from "../../core/Plugin.ts"
import { GraphPayloadFields, GraphProblem, OperationInfo, TemplateInfo, ValidationReport } from "./Api.ts"
import { GraphResult } from "./Api.ts"

const opt = configOption

/** Config of `plugins.job-graph`. */
export const GraphConfig = Schema.Struct({
  timeout_s: opt(Schema.Int.pipe(Schema.between(1, 86_400)), 3600, "GRAPH_TIMEOUT: longest run of one graph, seconds"),
  max_parallel: opt(Schema.Int.pipe(Schema.between(1, 256)), 10, "GRAPH_MAX_PARALLEL: operations running at once across one graph"),
  fetch_timeout_s: opt(Schema.Number.pipe(Schema.between(1, 600)), 30, "FETCH_TIMEOUT: deadline of one fetch by an operation, seconds"),
  embed_batch_size: opt(Schema.Int.pipe(Schema.between(1, 2048)), 32, "EMBED_BATCH_SIZE: texts per embedding call")
}).annotations({ identifier: "JobGraphConfig" })
export type GraphConfig = typeof GraphConfig.Type

const setup = lazySetup(() => import("./Setup.ts"))

export default definePlugin({
  name: "job-graph",
  version: "0.1.0",
  description: "graph jobs: staged pipelines of contributed graph operations (sequential, parallel, parallel_foreach, conditional, loop); ten built-in templates and custom templates.",
  dependsOn: ["jobs"],
  defaultListener: "jobs",
  config: GraphConfig,
  resources: { GraphPayload: GraphPayloadFields, GraphResult, GraphProblem, GraphValidationReport: ValidationReport, GraphOperationInfo: OperationInfo, GraphTemplate: TemplateInfo },
  setup
})
