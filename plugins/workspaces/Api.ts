/**
 * Shapes of the workspace routes (`Http.ts`) and of what the plugin stores: the workspace
 * manifest (research-jobs spec, "Workspace": its fields exactly, plus `status`, the state), run
 * manifests and records, artifact records, search; and the errors the routes answer with, each a
 * `Schema.TaggedError` carrying its HTTP status (the kernel sends it as its encoded JSON).
 */
// The module, not the package index: the plugin declaration imports these shapes.
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Schema from "effect/Schema"

/** `ws_` + 1-64 letters/digits: anything else is never a workspace (and never reaches storage). */
export const WORKSPACE_ID = /^ws_[A-Za-z0-9]{1,64}$/
/** Run ids are the graph job's id (`job_...`). */
export const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/

/** Workspace names: 1-100 characters, letters, digits, space, `_ . -`, starting with a letter or digit. */
export const WorkspaceName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9 _.-]{0,99}$/, { message: () => "a name is 1-100 of letters, digits, space, _ . - (starting with a letter or digit)" }),
  Schema.filter((s) => s.trimEnd() === s || "a name may not end with a space")
).annotations({ description: "unique among workspaces" })

const Tag = Schema.String.pipe(Schema.pattern(/^[^\u0000-\u001f]{1,50}$/, { message: () => "a tag is 1-50 printable characters" }))
const Tags = Schema.Array(Tag).pipe(Schema.maxItems(50, { message: () => "at most 50 tags" }))
const Description = Schema.String.pipe(Schema.maxLength(2000, { message: () => "a description is at most 2000 characters" }))

/** Workspace config (spec: `index_enabled`). */
export const WorkspaceConfig = Schema.Struct({
  index_enabled: Schema.optionalWith(Schema.Boolean.annotations({ description: "index each run's Markdown, synthesised text and PDF reports into the workspace's vectl store" }), { default: () => false })
}).annotations({ identifier: "WorkspaceConfig" })

/** The states of the spec's state table. */
export const WorkspaceStatus = Schema.Literal("created", "active", "archived")
export type WorkspaceStatus = typeof WorkspaceStatus.Type

/** `workspaces/{workspace_id}/manifest.json`, also the body of the workspace routes. */
export const WorkspaceManifest = Schema.Struct({
  workspace_id: Schema.String,
  name: Schema.String,
  description: Schema.String,
  created_at: Schema.String,
  updated_at: Schema.String,
  config: WorkspaceConfig,
  tags: Schema.Array(Schema.String),
  runs_count: Schema.Int.annotations({ description: "runs filed (each graph job with this workspace_id, once, whatever its attempts)" }),
  artifact_count: Schema.Int.annotations({ description: "files of the runs besides their manifests: result, report, screenshots, data" }),
  total_size_bytes: Schema.Int.annotations({ description: "bytes the workspace stores (all its objects but this manifest; while archived, the archive)" }),
  index_workspace_id: Schema.optional(Schema.String.annotations({ description: "vectl store of the index (idx_...), when indexing is enabled" })),
  status: WorkspaceStatus.annotations({ description: "created (no runs yet), active, archived" })
}).annotations({ identifier: "WorkspaceManifest" })
export type WorkspaceManifest = typeof WorkspaceManifest.Type

/** POST /api/v1/workspaces. */
export const CreateWorkspace = Schema.Struct({
  name: WorkspaceName,
  description: Schema.optionalWith(Description, { default: () => "" }),
  tags: Schema.optionalWith(Tags, { default: () => [] }),
  config: Schema.optionalWith(WorkspaceConfig, { default: () => ({ index_enabled: false }) })
}).annotations({ identifier: "CreateWorkspace" })
export type CreateWorkspace = typeof CreateWorkspace.Type

/** PATCH /api/v1/workspaces/{id}: the members given replace the stored ones. */
export const PatchWorkspace = Schema.Struct({
  name: Schema.optional(WorkspaceName),
  description: Schema.optional(Description),
  tags: Schema.optional(Tags),
  config: Schema.optional(WorkspaceConfig)
}).annotations({ identifier: "PatchWorkspace" })
export type PatchWorkspace = typeof PatchWorkspace.Type

/** The kinds of files a run keeps (`artifact_type`). */
export const ArtifactType = Schema.Literal("result", "report", "screenshot", "data", "output")
export type ArtifactType = typeof ArtifactType.Type

/** A stored file of a workspace; `path` is relative to `workspaces/{workspace_id}/`. */
export const ArtifactRecord = Schema.Struct({
  path: Schema.String,
  size_bytes: Schema.Int,
  artifact_type: ArtifactType,
  content_type: Schema.NullOr(Schema.String),
  run_id: Schema.NullOr(Schema.String)
}).annotations({ identifier: "WorkspaceArtifact" })
export type ArtifactRecord = typeof ArtifactRecord.Type

/** A run as listed (spec: `run_id`, `status`, `graph_name`, `duration_seconds`). */
export const RunRecord = Schema.Struct({
  run_id: Schema.String,
  status: Schema.Literal("COMPLETED", "FAILED"),
  graph_name: Schema.String,
  duration_seconds: Schema.Number,
  started_at: Schema.String,
  finished_at: Schema.String
}).annotations({ identifier: "WorkspaceRun" })

/** `runs/{run_id}/manifest.json`: the record plus provenance, errors, its files and what was indexed. */
export const RunManifest = Schema.Struct({
  ...RunRecord.fields,
  workspace_id: Schema.String,
  job_id: Schema.String,
  attempt: Schema.Int,
  template: Schema.NullOr(Schema.String),
  params: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  error: Schema.NullOr(Schema.String),
  files: Schema.Array(ArtifactRecord),
  indexed_chunks: Schema.Int.annotations({ description: "chunks added to the workspace index by this run (0 when indexing is off)" })
}).annotations({ identifier: "WorkspaceRunManifest" })
export type RunManifest = typeof RunManifest.Type

/** GET /api/v1/workspaces/{id}/runs/{run_id}. */
export const RunDetail = Schema.Struct({
  manifest: RunManifest,
  result: Schema.Unknown.annotations({ description: "result.json: the GraphResult, or the failure" }),
  report: Schema.String.annotations({ description: "report.md" })
}).annotations({ identifier: "WorkspaceRunDetail" })

/** POST /api/v1/workspaces/{id}/search. */
export const SearchRequest = Schema.Struct({
  query: Schema.String.pipe(Schema.pattern(/\S/, { message: () => "query must contain a word" }), Schema.maxLength(4000)),
  top_k: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 100)), { default: () => 10 })
}).annotations({ identifier: "WorkspaceSearch" })

/** A search hit: the chunk, its cosine similarity, the file and run it came from. */
export const SearchMatch = Schema.Struct({
  score: Schema.Number,
  text: Schema.String,
  source: Schema.NullOr(Schema.String),
  run_id: Schema.NullOr(Schema.String)
}).annotations({ identifier: "WorkspaceSearchMatch" })

/** Answer of the search. */
export const SearchResult = Schema.Struct({
  workspace_id: Schema.String,
  index_workspace_id: Schema.String,
  query: Schema.String,
  matches: Schema.Array(SearchMatch)
}).annotations({ identifier: "WorkspaceSearchResult" })

/** No workspace with this id (or the id is not a workspace id). */
export class WorkspaceNotFound extends Schema.TaggedError<WorkspaceNotFound>()("WorkspaceNotFound", {
  error: Schema.String,
  workspace_id: Schema.String
}, HttpApiSchema.annotations({ status: 404 })) {
  static of(id: string) {
    return new WorkspaceNotFound({ error: `no workspace "${id}"`, workspace_id: id })
  }
}

/** No run with this id in the workspace. */
export class RunNotFound extends Schema.TaggedError<RunNotFound>()("RunNotFound", {
  error: Schema.String,
  workspace_id: Schema.String,
  run_id: Schema.String
}, HttpApiSchema.annotations({ status: 404 })) {}

/** The workspace's state does not allow this (a write to an archived workspace, archive twice...). */
export class WorkspaceStateConflict extends Schema.TaggedError<WorkspaceStateConflict>()("WorkspaceStateConflict", {
  error: Schema.String,
  workspace_id: Schema.String,
  status: WorkspaceStatus
}, HttpApiSchema.annotations({ status: 409 })) {}

/** Another workspace has this name. */
export class WorkspaceNameTaken extends Schema.TaggedError<WorkspaceNameTaken>()("WorkspaceNameTaken", {
  error: Schema.String,
  name: Schema.String,
  workspace_id: Schema.String.annotations({ description: "the workspace holding the name" })
}, HttpApiSchema.annotations({ status: 409 })) {}

/** The file store (or the index) failed; the request may be retried. */
export class WorkspaceStorageError extends Schema.TaggedError<WorkspaceStorageError>()("WorkspaceStorageError", {
  error: Schema.String
}, HttpApiSchema.annotations({ status: 503 })) {}

/** Every failure of the workspace service. */
export type WorkspaceError = WorkspaceNotFound | RunNotFound | WorkspaceStateConflict | WorkspaceNameTaken | WorkspaceStorageError
