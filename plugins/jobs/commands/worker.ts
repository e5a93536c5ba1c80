import { Flags } from "@oclif/core"
import { configFlag, PlatformCommand } from "../../../core/Command.ts"

/**
 * `platform worker`: launches the workers-only layers of the `jobs` plugin (`backend: redis`):
 * `jobs` and the job plugins booted, no listener; consumes jobs until SIGINT/SIGTERM, then
 * running jobs are handed back to the queue (attempt counted) for another worker.
 */
export default class Worker extends PlatformCommand {
  static summary = "Run job workers only (no HTTP listeners) against the Redis queue of plugins.jobs."
  static description = "Needs plugins.jobs.backend: redis. Start as many as you like, on any machine that reaches the same Redis; `platform serve` keeps the Jobs API (set plugins.jobs.workers: false there to run no workers in the API process). Set plugins.jobs.files.url to the API's public /files URL so results carry reachable links."
  static examples = [
    "<%= config.bin %> worker",
    "<%= config.bin %> worker --config ./platform.yaml",
    "<%= config.bin %> worker --concurrency 8"
  ]
  static flags = {
    config: configFlag,
    concurrency: Flags.integer({ summary: "Jobs run at once by this process (overrides plugins.jobs.limits.worker_concurrency).", min: 1 }),
    "log-level": Flags.string({ summary: "Minimum log level (overrides log.level).", options: ["trace", "debug", "info", "warning", "error", "none"] })
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(Worker)
    if (flags["log-level"]) process.env.PLATFORM_LOG_LEVEL = flags["log-level"]
    if (this.jsonEnabled()) process.env.PLATFORM_LOG_FORMAT = "json"
    try {
      const [Kernel, Workers] = await Promise.all([import("../../../core/Kernel.ts"), import("../Workers.ts")])
      const loaded = await Kernel.readConfig({ file: flags.config })
      const layer = Workers.layer(loaded, flags.concurrency ? { concurrency: flags.concurrency } : {})
      await Kernel.launch(loaded, layer, "handing running jobs back and stopping", (kernel) => {
        process.stderr.write(`worker ${process.pid}: running job types ${Workers.jobTypesOf(kernel).join(", ") || "(none)"}\n`)
      })
    } catch (e) {
      this.fail(e)
    }
  }
}
