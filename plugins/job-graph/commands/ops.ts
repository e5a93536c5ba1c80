import { Flags } from "@oclif/core"
import { configFlag, PlatformCommand, table } from "../../../core/Command.ts"
import { offlineGraphs } from "./shared.ts"

/** `platform graph ops`: the graph operations the platform's plugins contribute, with their types. */
export default class GraphOps extends PlatformCommand {
  static summary = "List the graph operations the configured plugins contribute (input → output types)."
  static examples = ["<%= config.bin %> graph ops", "<%= config.bin %> graph ops --category acquire", "<%= config.bin %> graph ops --json"]
  static flags = {
    config: configFlag,
    category: Flags.string({ summary: "Only this category.", options: ["discover", "acquire", "transform", "process", "filter", "extract", "store", "synthesize"] })
  }

  async run() {
    const { flags } = await this.parse(GraphOps)
    let graphs
    try {
      graphs = await offlineGraphs(flags.config)
    } catch (e) {
      this.fail(e)
    }
    const ops = graphs.operations().filter((o) => flags.category === undefined || o.category === flags.category)
    this.log(table(["OPERATION", "CATEGORY", "INPUT", "OUTPUT", "PLUGIN", "DESCRIPTION"], ops.map((o) => [
      o.name,
      o.category,
      o.input_types.length === 0 ? "-" : `${o.input_types.join(" | ")}${o.input_optional ? " (optional)" : ""}`,
      o.output_type,
      o.plugin,
      o.description
    ])))
    return ops
  }
}
