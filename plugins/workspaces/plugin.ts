/**
 * Plugin `workspaces` (research-jobs spec, "Workspace"): workspaces group graph runs and their
 * files in the jobs file store, with an optional semantic index. A graph job carrying
 * `workspace_id` is filed by the run observer this plugin registers with `job-graph`; the routes
 * (`Http.ts`) manage, archive, list and search workspaces. The service is `Workspaces.ts`.
 */
import * as Schema from "effect/Schema"
import { configOption, definePlugin, lazySetup } from "../../core/Plugin.ts"
import { ArtifactRecord, CreateWorkspace, PatchWorkspace, RunDetail, RunManifest, RunRecord, SearchRequest, SearchResult, WorkspaceManifest } from "./Api.ts"

const opt = configOption

/** Config of `plugins.workspaces`. */
export const WorkspacesConfig = Schema.Struct({
  embed_batch_size: opt(Schema.Int.pipe(Schema.between(1, 2048)), 32, "EMBED_BATCH_SIZE of indexing: chunks per embedding call")
}).annotations({ identifier: "WorkspacesConfig" })
export type WorkspacesConfig = typeof WorkspacesConfig.Type

const setup = lazySetup(() => import("./Setup.ts"))

export default definePlugin({
  name: "workspaces",
  version: "0.1.0",
  description: "Workspaces: graph runs with workspace_id filed in the file store (manifest, result, report, screenshots, data), archive/unarchive, semantic index and search.",
  // jobs: the file store and locks; job-graph: the run observer point; job-vectl: the index.
  dependsOn: ["jobs", "job-graph", "job-vectl"],
  defaultListener: "jobs",
  config: WorkspacesConfig,
  resources: { WorkspaceManifest, CreateWorkspace, PatchWorkspace, WorkspaceRun: RunRecord, WorkspaceRunManifest: RunManifest, WorkspaceRunDetail: RunDetail, WorkspaceArtifact: ArtifactRecord, WorkspaceSearch: SearchRequest, WorkspaceSearchResult: SearchResult },
  setup
})
