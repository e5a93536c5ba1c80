/**
 * HTTP routes of the workspaces plugin on the jobs listener (issue 13; the spec leaves them open):
 * `POST`/`GET /api/v1/workspaces`, `GET`/`PATCH`/`DELETE /api/v1/workspaces/{id}`,
 * `POST .../{id}/archive` and `.../{id}/unarchive`, `GET .../{id}/runs`,
 * `GET .../{id}/runs/{run_id}`, `GET .../{id}/artifacts`, `POST .../{id}/search`.
 * Bodies are decoded by their Schemas (422 with every issue); service failures answer with
 * their tagged error's status and JSON (404 unknown, 409 state or name conflict, 503 storage).
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Route from "../../core/Route.ts"
import {
  ArtifactRecord,
  CreateWorkspace,
  PatchWorkspace,
  RunDetail,
  RunNotFound,
  RunRecord,
  SearchRequest,
  SearchResult,
  WorkspaceManifest,
  WorkspaceNameTaken,
  WorkspaceNotFound,
  WorkspaceStateConflict,
  WorkspaceStorageError
} from "./Api.ts"
import type { WorkspacesService } from "./Workspaces.ts"

const Id = Schema.Struct({ id: Schema.String })
const tags = ["workspaces"]
const notFound = { 404: { description: "no such workspace", schema: WorkspaceNotFound } }
const conflict = { 409: { description: "the workspace's state does not allow it", schema: WorkspaceStateConflict } }
const storage = { 503: { description: "the file store failed", schema: WorkspaceStorageError } }
const invalid = { 422: { description: "the body failed its Schema", schema: Route.ValidationErrorBody } }

/** The routes over `ws`. */
export const routes = (ws: WorkspacesService): ReadonlyArray<Route.Route> => [
  Route.make({
    method: "POST",
    path: "/api/v1/workspaces",
    summary: "Create a workspace (state created)",
    tags,
    body: CreateWorkspace,
    responses: { 201: { description: "the new workspace's manifest", schema: WorkspaceManifest }, 409: { description: "the name is taken", schema: WorkspaceNameTaken }, ...invalid, ...storage },
    handler: ({ body }) => ws.create(body).pipe(Effect.map((m) => Route.reply(201, m)))
  }),
  Route.make({
    method: "GET",
    path: "/api/v1/workspaces",
    summary: "List workspaces (oldest first)",
    tags,
    responses: { 200: { description: "manifests", schema: Schema.Array(WorkspaceManifest) }, ...storage },
    handler: () => ws.list()
  }),
  Route.make({
    method: "GET",
    path: "/api/v1/workspaces/:id",
    summary: "A workspace's manifest",
    tags,
    params: Id,
    responses: { 200: { description: "the manifest", schema: WorkspaceManifest }, ...notFound, ...storage },
    handler: ({ params }) => ws.get(params.id)
  }),
  Route.make({
    method: "PATCH",
    path: "/api/v1/workspaces/:id",
    summary: "Change name, description, tags or config (not while archived)",
    tags,
    params: Id,
    body: PatchWorkspace,
    responses: { 200: { description: "the manifest", schema: WorkspaceManifest }, ...notFound, 409: { description: "archived, or the name is taken", schema: Schema.Union(WorkspaceStateConflict, WorkspaceNameTaken) }, ...invalid, ...storage },
    handler: ({ params, body }) => ws.patch(params.id, body)
  }),
  Route.make({
    method: "DELETE",
    path: "/api/v1/workspaces/:id",
    summary: "Delete a workspace and everything it stores",
    tags,
    params: Id,
    responses: { 204: { description: "deleted" }, ...notFound, ...storage },
    handler: ({ params }) => ws.remove(params.id).pipe(Effect.as(HttpServerResponse.empty({ status: 204 })))
  }),
  Route.make({
    method: "POST",
    path: "/api/v1/workspaces/:id/archive",
    summary: "Archive an active workspace: its runs' files packed into one gzip tar, originals removed, metadata kept",
    tags,
    params: Id,
    responses: { 200: { description: "the manifest (status archived)", schema: WorkspaceManifest }, ...notFound, ...conflict, ...storage },
    handler: ({ params }) => ws.archive(params.id)
  }),
  Route.make({
    method: "POST",
    path: "/api/v1/workspaces/:id/unarchive",
    summary: "Unarchive: the runs' files restored byte for byte",
    tags,
    params: Id,
    responses: { 200: { description: "the manifest (status active)", schema: WorkspaceManifest }, ...notFound, ...conflict, ...storage },
    handler: ({ params }) => ws.unarchive(params.id)
  }),
  Route.make({
    method: "GET",
    path: "/api/v1/workspaces/:id/runs",
    summary: "The workspace's runs, in start order",
    tags,
    params: Id,
    responses: { 200: { description: "run records", schema: Schema.Array(RunRecord) }, ...notFound, ...storage },
    handler: ({ params }) => ws.runs(params.id)
  }),
  Route.make({
    method: "GET",
    path: "/api/v1/workspaces/:id/runs/:run_id",
    summary: "One run: its manifest, result and report",
    tags,
    params: Schema.Struct({ id: Schema.String, run_id: Schema.String }),
    responses: { 200: { description: "the run", schema: RunDetail }, 404: { description: "no such workspace or run", schema: Schema.Union(WorkspaceNotFound, RunNotFound) }, ...conflict, ...storage },
    handler: ({ params }) => ws.run(params.id, params.run_id)
  }),
  Route.make({
    method: "GET",
    path: "/api/v1/workspaces/:id/artifacts",
    summary: "Every file the workspace's runs keep (also while archived) and its outputs",
    tags,
    params: Id,
    responses: { 200: { description: "artifact records", schema: Schema.Array(ArtifactRecord) }, ...notFound, ...storage },
    handler: ({ params }) => ws.artifacts(params.id)
  }),
  Route.make({
    method: "POST",
    path: "/api/v1/workspaces/:id/search",
    summary: "Semantic search over the workspace's index (its runs' reports, syntheses and PDFs)",
    tags,
    params: Id,
    body: SearchRequest,
    responses: { 200: { description: "matches, best first", schema: SearchResult }, ...notFound, 409: { description: "archived, or indexing is not enabled", schema: WorkspaceStateConflict }, ...invalid, ...storage },
    handler: ({ params, body }) => ws.search(params.id, body.query, body.top_k)
  })
]
