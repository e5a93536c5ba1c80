import { Flags } from "@oclif/core"
import { startPlatform } from "../../core/Kernel.ts"
import { configFlag, PlatformCommand } from "../Base.ts"

/** `platform serve`: boots the kernel and serves every listener until SIGINT/SIGTERM. */
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
    let platform
    try {
      platform = await startPlatform({ file: flags.config })
    } catch (e) {
      this.fail(e)
    }
    await new Promise<void>((resolve) => {
      const stop = (signal: string) => {
        process.off("SIGINT", onInt)
        process.off("SIGTERM", onTerm)
        process.stderr.write(`received ${signal}, shutting down\n`)
        platform.stop().then(resolve, resolve)
      }
      const onInt = () => stop("SIGINT")
      const onTerm = () => stop("SIGTERM")
      process.on("SIGINT", onInt)
      process.on("SIGTERM", onTerm)
    })
  }
}
