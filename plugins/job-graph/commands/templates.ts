import { configFlag, PlatformCommand, table } from "../../../core/Command.ts"
import { summarize } from "../Templates.ts"
import { offlineGraphs } from "./shared.ts"

/** `platform graph templates`: the built-in and custom graph templates with their inputs and outputs. */
export default class GraphTemplates extends PlatformCommand {
  static summary = "List the graph templates (built-in and custom) with their inputs and outputs."
  static examples = ["<%= config.bin %> graph templates", "<%= config.bin %> graph templates --json"]
  static flags = { config: configFlag }

  async run() {
    const { flags } = await this.parse(GraphTemplates)
    let graphs
    try {
      graphs = await offlineGraphs(flags.config)
    } catch (e) {
      this.fail(e)
    }
    const rows = graphs.templates.list().map((t) => ({ name: t.name, builtin: t.builtin, ...summarize(t.yaml) }))
    const inputText = (i: unknown) => {
      const x = i as { name?: string; type?: string; required?: boolean; default?: unknown }
      return `${x.name}${x.required ? "" : "?"}: ${x.type ?? "string"}${x.default !== undefined && x.default !== null ? ` = ${JSON.stringify(x.default)}` : ""}`
    }
    this.log(table(["TEMPLATE", "KIND", "VERSION", "INPUTS", "OUTPUTS"], rows.map((t) => [t.name, t.builtin ? "built-in" : "custom", t.version, t.inputs.map(inputText).join(", "), t.outputs.join(", ")])))
    return rows
  }
}
