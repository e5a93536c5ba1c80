/**
 * Request and response shapes of the graph routes (`Http.ts`) and the graph job payload.
 */
import * as Schema from "effect/Schema"

/** The `graph` job payload (research-jobs spec, "graph"): exactly one of `graph` / `template`. */
export const GraphPayloadFields = Schema.Struct({
  graph: Schema.optional(Schema.String.annotations({ description: "inline YAML graph" })),
  template: Schema.optional(Schema.String.annotations({ description: "template name (GET /api/v1/templates)" })),
  params: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.Unknown }), { default: () => ({}) }).annotations({ description: "values of the graph's inputs" }),
  workspace_id: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null })
}).annotations({ identifier: "GraphPayload" })

/** One validation problem: 1-based line and column in the YAML, the path of the node, the message. */
export const GraphProblem = Schema.Struct({
  line: Schema.Int,
  column: Schema.Int,
  path: Schema.String,
  message: Schema.String
}).annotations({ identifier: "GraphProblem" })

/** Answer of POST /api/v1/graph/validate. */
export const ValidationReport = Schema.Struct({
  valid: Schema.Boolean,
  graph_name: Schema.NullOr(Schema.String),
  problems: Schema.Array(GraphProblem)
}).annotations({ identifier: "GraphValidationReport" })

/** A graph operation as listed by GET /api/v1/graph/operations. */
export const OperationInfo = Schema.Struct({
  name: Schema.String,
  plugin: Schema.String,
  category: Schema.String,
  description: Schema.String,
  input_types: Schema.Array(Schema.String),
  input_optional: Schema.Boolean,
  output_type: Schema.String,
  params: Schema.Unknown.annotations({ description: "JSON Schema of the params" })
}).annotations({ identifier: "GraphOperationInfo" })

/** A template input as listed. */
export const TemplateInput = Schema.Struct({
  name: Schema.String,
  type: Schema.String,
  required: Schema.Boolean,
  default: Schema.optional(Schema.Unknown),
  description: Schema.optional(Schema.String)
})

/** A template as listed by GET /api/v1/templates; GET /api/v1/templates/{name} adds `yaml`. */
export const TemplateInfo = Schema.Struct({
  name: Schema.String,
  builtin: Schema.Boolean,
  description: Schema.NullOr(Schema.String),
  version: Schema.NullOr(Schema.String),
  inputs: Schema.Array(Schema.Unknown),
  outputs: Schema.Array(Schema.Unknown),
  yaml: Schema.optional(Schema.String)
}).annotations({ identifier: "GraphTemplate" })

/** Body of POST /api/v1/graph/validate: a graph or a template, with optional params. */
export const ValidateRequest = Schema.Struct({
  graph: Schema.optional(Schema.String),
  template: Schema.optional(Schema.String),
  params: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
})

/** Error body with validation problems (POST /api/v1/templates). */
export const ProblemsBody = Schema.Struct({
  error: Schema.String,
  problems: Schema.optional(Schema.Array(GraphProblem))
})

/** A file an operation stored during the run. */
export const Artifact = Schema.Struct({
  name: Schema.String,
  url: Schema.String,
  content_type: Schema.NullOr(Schema.String),
  size_bytes: Schema.Int,
  stage: Schema.String,
  op: Schema.String
}).annotations({ identifier: "GraphArtifact" })
export type Artifact = typeof Artifact.Type

/** The result of a graph job (research-jobs spec, GraphResult). */
export const GraphResult = Schema.Struct({
  graph_name: Schema.String,
  stages_completed: Schema.Int,
  stages_total: Schema.Int,
  duration_seconds: Schema.Number,
  outputs: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  state: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  artifacts: Schema.Array(Artifact),
  artifacts_url: Schema.String,
  workspace_id: Schema.optional(Schema.NullOr(Schema.String))
}).annotations({ identifier: "GraphResult", description: "graph job result: named outputs, final state, stored files" })
export type GraphResult = typeof GraphResult.Type
