import type { PluginStatus } from "../../../core/Kernel.ts"
import { configFlag, PlatformCommand, table } from "../../Base.ts"

/** `platform plugins list`: every configured plugin with version, listener, status and contributions. */
export default class PluginsList extends PlatformCommand {
  static summary = "List configured plugins: version, listener, status and contributions."
  static description = "Boots the plugins without opening listeners. A plugin whose data or dependency is missing shows as unavailable with the reason."
  static examples = ["<%= config.bin %> plugins list", "<%= config.bin %> plugins list --json"]
  static flags = { config: configFlag }

  async run(): Promise<ReadonlyArray<PluginStatus>> {
    const { flags } = await this.parse(PluginsList)
    try {
      const { inspect } = await import("../../../core/Kernel.ts")
      const kernel = await inspect({ file: flags.config })
      this.log(table(
        ["NAME", "VERSION", "LISTENER", "STATUS", "CONTRIBUTIONS"],
        kernel.plugins.map((p) => [
          p.name,
          p.version,
          p.listener,
          p.status + (p.reason ? `: ${p.reason}` : ""),
          Object.entries(p.contributions)
            .map(([kind, ids]) => (typeof ids === "number" ? (ids ? `${ids} ${kind}` : "") : ids.length ? `${kind}: ${ids.join(",")}` : ""))
            .filter(Boolean).join("; ")
        ])
      ))
      return kernel.plugins
    } catch (e) {
      this.fail(e)
    }
  }
}
