/**
 * `platform workspaces list|get|create|archive|unarchive|delete`: the workspace routes of a
 * running Jobs API from the terminal; `--json` prints what the API answered.
 */
import { Args, Flags } from "@oclif/core"
import { PlatformCommand, table } from "../../../core/Command.ts"
import { apiUrlFlag, callApi, idArg, size } from "./client.ts"

interface Manifest {
  workspace_id: string
  name: string
  description: string
  status: string
  runs_count: number
  artifact_count: number
  total_size_bytes: number
  tags: Array<string>
  created_at: string
  updated_at: string
  config: { index_enabled: boolean }
  index_workspace_id?: string
}

const describe = (m: Manifest): string =>
  [
    `${m.workspace_id}  ${m.name}  (${m.status})`,
    ...(m.description ? [`  ${m.description}`] : []),
    `  runs ${m.runs_count}, artifacts ${m.artifact_count}, ${size(m.total_size_bytes)}`,
    `  tags: ${m.tags.length ? m.tags.join(", ") : "-"}`,
    `  index: ${m.config.index_enabled ? m.index_workspace_id ?? "enabled" : "off"}`,
    `  created ${m.created_at}, updated ${m.updated_at}`
  ].join("\n")

/** `platform workspaces list`. */
export class WorkspacesList extends PlatformCommand {
  static summary = "List workspaces."
  static examples = ["<%= config.bin %> workspaces list", "<%= config.bin %> workspaces list --json --api-url http://10.0.0.5:9003"]
  static flags = { "api-url": apiUrlFlag }

  async run() {
    const { flags } = await this.parse(WorkspacesList)
    const list = (await callApi(this, flags["api-url"], "GET", "")) as Array<Manifest>
    this.log(list.length === 0 ? "no workspaces" : table(["ID", "NAME", "STATUS", "RUNS", "ARTIFACTS", "SIZE", "TAGS"], list.map((m) => [m.workspace_id, m.name, m.status, m.runs_count, m.artifact_count, size(m.total_size_bytes), m.tags.join(",")])))
    return list
  }
}

/** `platform workspaces get ID`. */
export class WorkspacesGet extends PlatformCommand {
  static summary = "Show one workspace's manifest."
  static examples = ["<%= config.bin %> workspaces get ws_0123abcd"]
  static args = { id: idArg }
  static flags = { "api-url": apiUrlFlag }

  async run() {
    const { args, flags } = await this.parse(WorkspacesGet)
    const m = (await callApi(this, flags["api-url"], "GET", `/${encodeURIComponent(args.id)}`)) as Manifest
    this.log(describe(m))
    return m
  }
}

/** `platform workspaces create NAME`. */
export class WorkspacesCreate extends PlatformCommand {
  static summary = "Create a workspace."
  static examples = ["<%= config.bin %> workspaces create \"Quasar study\" --description \"distant engines\" --tag astro --index"]
  static args = { name: Args.string({ required: true, description: "workspace name (unique)" }) }
  static flags = {
    "api-url": apiUrlFlag,
    description: Flags.string({ char: "d", summary: "What the workspace is for." }),
    tag: Flags.string({ char: "t", summary: "A tag (repeatable).", multiple: true }),
    index: Flags.boolean({ summary: "Index each run's reports for semantic search (config.index_enabled)." })
  }

  async run() {
    const { args, flags } = await this.parse(WorkspacesCreate)
    const m = (await callApi(this, flags["api-url"], "POST", "", {
      name: args.name,
      ...(flags.description !== undefined ? { description: flags.description } : {}),
      tags: flags.tag ?? [],
      config: { index_enabled: flags.index }
    })) as Manifest
    this.log(describe(m))
    return m
  }
}

/** A command POSTing to `/{id}/<action>` and printing the manifest. */
const transition = (action: "archive" | "unarchive", summary: string) =>
  class extends PlatformCommand {
    static summary = summary
    static examples = [`<%= config.bin %> workspaces ${action} ws_0123abcd`]
    static args = { id: idArg }
    static flags = { "api-url": apiUrlFlag }

    async run() {
      const { args, flags } = await this.parse(this.constructor as typeof WorkspacesArchive)
      const m = (await callApi(this, flags["api-url"], "POST", `/${encodeURIComponent(args.id)}/${action}`)) as Manifest
      this.log(describe(m))
      return m
    }
  }

/** `platform workspaces archive ID`. */
export const WorkspacesArchive = transition("archive", "Archive a workspace: its runs packed into one compressed archive, metadata kept.")
/** `platform workspaces unarchive ID`. */
export const WorkspacesUnarchive = transition("unarchive", "Unarchive a workspace: its runs' files restored.")

/** `platform workspaces delete ID`. */
export class WorkspacesDelete extends PlatformCommand {
  static summary = "Delete a workspace and everything it stores."
  static examples = ["<%= config.bin %> workspaces delete ws_0123abcd"]
  static args = { id: idArg }
  static flags = { "api-url": apiUrlFlag }

  async run() {
    const { args, flags } = await this.parse(WorkspacesDelete)
    await callApi(this, flags["api-url"], "DELETE", `/${encodeURIComponent(args.id)}`)
    this.log(`deleted ${args.id}`)
    return { workspace_id: args.id, deleted: true }
  }
}
