import { Args, Flags } from "@oclif/core"
import * as fs from "node:fs"
import { configFlag, PlatformCommand } from "../../../core/Command.ts"
import type { Problem } from "../Graph.ts"
import { offlineGraphs } from "./shared.ts"

/**
 * `platform graph validate FILE`: validates a graph YAML file offline, against the operations
 * the platform of `--config` registers, exactly as a graph job's submission does: every problem
 * with its line, column and path. Exit 0 valid, 1 invalid, 2 usage.
 */
export default class GraphValidate extends PlatformCommand {
  static summary = "Validate a graph YAML file (or a template with --template) without running it."
  static description = "Checks the graph as POST /api/v1/jobs/graph would: keys, stage modes, operations and their input types, params, {{ expressions }}, inputs; with --params also the job's params. Prints every problem as FILE:LINE:COLUMN PATH: MESSAGE."
  static examples = [
    "<%= config.bin %> graph validate pipeline.yaml",
    "<%= config.bin %> graph validate pipeline.yaml --params '{\"query\": \"solar power\"}'",
    "<%= config.bin %> graph validate --template basic_research --params '{\"query\": \"x\"}' --json"
  ]
  static args = { file: Args.string({ description: "graph YAML file", required: false }) }
  static flags = {
    config: configFlag,
    template: Flags.string({ summary: "Validate this template (built-in or custom) instead of a file.", exclusive: ["file"] }),
    params: Flags.string({ summary: "The job's params as JSON, checked against the graph's inputs." })
  }

  async run(): Promise<{ valid: boolean; graph_name: string | null; problems: ReadonlyArray<Problem> }> {
    const { args, flags } = await this.parse(GraphValidate)
    let params: Record<string, unknown> | undefined
    if (flags.params !== undefined) {
      try {
        params = JSON.parse(flags.params) as Record<string, unknown>
      } catch (e) {
        this.error(`--params is not JSON: ${(e as Error).message}`, { exit: 2 })
      }
      if (params === null || typeof params !== "object" || Array.isArray(params)) this.error("--params must be a JSON object", { exit: 2 })
    }
    if (args.file === undefined && flags.template === undefined) this.error("give FILE or --template NAME", { exit: 2 })
    let yaml: string | undefined
    if (args.file !== undefined) {
      try {
        yaml = fs.readFileSync(args.file, "utf8")
      } catch (e) {
        this.error(`cannot read ${args.file}: ${(e as Error).message}`, { exit: 2 })
      }
    }
    let graphs
    try {
      graphs = await offlineGraphs(flags.config)
    } catch (e) {
      this.fail(e)
    }
    const r = graphs.resolve({ graph: yaml, template: flags.template, ...(params !== undefined ? { params } : {}) })
    const where = args.file ?? `template ${flags.template}`
    const out = r._tag === "Right"
      ? { valid: true, graph_name: r.right.name, problems: [] as ReadonlyArray<Problem> }
      : { valid: false, graph_name: null, problems: r.left.problems }
    if (!this.jsonEnabled()) {
      if (out.valid) this.log(`${where}: valid (graph "${out.graph_name}")`)
      else for (const p of out.problems) this.log(`${where}:${p.line}:${p.column} ${p.path || "(graph)"}: ${p.message}`)
    }
    if (!out.valid) {
      if (this.jsonEnabled()) this.logJson(out)
      this.exit(1)
    }
    return out
  }
}
