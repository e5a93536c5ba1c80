import { configFlag, PlatformCommand, table } from "../Base.ts"

/** `platform routes`: the HTTP routes mounted on each listener. */
export default class Routes extends PlatformCommand {
  static summary = "List the HTTP routes mounted on each listener."
  static examples = ["<%= config.bin %> routes", "<%= config.bin %> routes --json"]
  static flags = { config: configFlag }

  async run(): Promise<Array<{ listener: string; host: string; port: number; routes: Array<{ method: string; path: string; plugin: string; summary: string | null }> }>> {
    const { flags } = await this.parse(Routes)
    try {
      const { inspect } = await import("../../core/Kernel.ts")
      const kernel = await inspect({ file: flags.config })
      const out = kernel.loaded.config.listeners.map((l) => ({
        listener: l.name,
        host: l.host,
        port: l.port,
        routes: [
          { method: "GET", path: "/openapi.json", plugin: "kernel", summary: "OpenAPI document of this listener" },
          ...(kernel.routes.get(l.name) ?? []).map(({ plugin, route }) => ({ method: route.method, path: route.path, plugin, summary: route.summary ?? null }))
        ]
      }))
      for (const l of out) {
        this.log(`${l.listener} (${l.host}:${l.port})`)
        this.log(table(["METHOD", "PATH", "PLUGIN", "SUMMARY"], l.routes.map((r) => [r.method, r.path, r.plugin, r.summary])).replace(/^/gm, "  "))
        this.log("")
      }
      return out
    } catch (e) {
      this.fail(e)
    }
  }
}
