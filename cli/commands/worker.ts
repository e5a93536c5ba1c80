import { Flags } from "@oclif/core"
import { runWorkers } from "../../plugins/jobs/runtime/WorkerMode.ts"
import { configFlag, PlatformCommand } from "../Base.ts"

/**
 * `platform worker`: runs job workers only, against the Redis queue configured under
 * `plugins.jobs` (`backend: redis`). Boots every enabled plugin so their job types are known, opens
 * no listener, and consumes jobs until SIGINT/SIGTERM; running jobs are then handed back to the
 * queue (attempt counted) for another worker.
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
    let workers
    try {
      workers = await runWorkers({ file: flags.config, ...(flags.concurrency ? { concurrency: flags.concurrency } : {}) })
    } catch (e) {
      this.fail(e)
    }
    process.stderr.write(`worker ${process.pid}: running job types ${workers.jobTypes.join(", ") || "(none)"}\n`)
    await new Promise<void>((resolve) => {
      const stop = (signal: string) => {
        process.off("SIGINT", onInt)
        process.off("SIGTERM", onTerm)
        process.stderr.write(`received ${signal}, handing running jobs back and stopping\n`)
        workers.stop().then(resolve, resolve)
      }
      const onInt = () => stop("SIGINT")
      const onTerm = () => stop("SIGTERM")
      process.on("SIGINT", onInt)
      process.on("SIGTERM", onTerm)
    })
  }
}
