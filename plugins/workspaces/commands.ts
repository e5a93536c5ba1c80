/**
 * CLI commands of the `workspaces` plugin: `platform workspaces list|get|create|archive|
 * unarchive|delete`, clients of a running Jobs API (`--api-url`, env PLATFORM_API_URL).
 */
import { defineCommands } from "../../core/Command.ts"
import { WorkspacesArchive, WorkspacesCreate, WorkspacesDelete, WorkspacesGet, WorkspacesList, WorkspacesUnarchive } from "./commands/workspaces.ts"

export default defineCommands("workspaces", {
  "workspaces list": WorkspacesList,
  "workspaces get": WorkspacesGet,
  "workspaces create": WorkspacesCreate,
  "workspaces archive": WorkspacesArchive,
  "workspaces unarchive": WorkspacesUnarchive,
  "workspaces delete": WorkspacesDelete
})
