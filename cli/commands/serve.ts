import { Flags } from "@oclif/core"
import { configFlag, PlatformCommand } from "../Base.ts"

/** `platform serve`: launches the serving layers (every plugin, every listener) until SIGINT/SIGTERM. */
export default class Serve extends PlatformCommand {
  static summary = "Run the platform: load platform.yaml, boot the enabled plugins, serve their listeners."
  static description = "Stops gracefully on SIGINT/SIGTERM: listeners stop accepting, in-flight requests finish (bounded by shutdown_grace_ms), plugin resources are released. With --json, logs are JSON lines."
  static examples = ["<%= config.bin %> serve", "<%= config.bin %> serve --config ./platform.yaml", "PLATFORM_LOG_FORMAT=pretty <%= config.bin %> serve"]
  static flags = {
    config: configFlag,
    "log-level": Flags.string({ summary: "Minimum log level (overrides log.level).", options: ["trace", "debug", "info", "warning", "error", "none"] })
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(Serve)
    if (flags["log-level"]) process.env.PLATFORM_LOG_LEVEL = flags["log-level"]
    if (this.jsonEnabled()) process.env.PLATFORM_LOG_FORMAT = "json"
    try {
      const Kernel = await import("../../core/Kernel.ts")
      const loaded = await Kernel.readConfig({ file: flags.config })
      await Kernel.launch(loaded, Kernel.serveLayer(loaded), "shutting down")
    } catch (e) {
      this.fail(e)
    }
  }
}
