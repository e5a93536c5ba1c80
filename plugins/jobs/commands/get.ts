import { Args } from "@oclif/core"
import { PlatformCommand } from "../../../core/Command.ts"
import { apiFlag, errorText, getJob, type Job } from "./JobsApi.ts"

/** `platform jobs get ID`: one job's state, times, error and result (`--json`: the API's job). */
export default class JobsGet extends PlatformCommand {
  static summary = "Show one job: status, progress, times, error and result (GET /api/v1/jobs/ID)."
  static examples = ["<%= config.bin %> jobs get job_01jd6f8r2k0000000000000000", "<%= config.bin %> jobs get job_01jd6f8r2k0000000000000000 --json"]
  static args = { id: Args.string({ description: "Job id (job_...).", required: true }) }
  static flags = { "api-url": apiFlag }

  async run(): Promise<Job> {
    const { args, flags } = await this.parse(JobsGet)
    try {
      const job = await getJob(flags["api-url"], args.id)
      const rows: Array<[string, unknown]> = [
        ["job", job.job_id],
        ["type", job.job_type],
        ["status", job.status],
        ["progress", `${job.progress}%${job.message ? ` ${job.message}` : ""}`],
        ["created", job.created_at],
        ["started", job.started_at],
        ["completed", job.completed_at ?? job.failed_at ?? job.cancelled_at],
        ["duration", job.duration_seconds !== undefined ? `${job.duration_seconds} s` : undefined],
        ["attempts", `${job.attempts} (max retries ${job.max_retries})`],
        ["error", job.error !== undefined ? errorText(job) : undefined],
        ["files", job.files?.length ? job.files.join(", ") : undefined]
      ]
      for (const [name, value] of rows) if (value !== undefined) this.log(`${name.padEnd(10)} ${value}`)
      if (job.result !== undefined) this.log(`result\n${JSON.stringify(job.result, null, 2)}`)
      return job
    } catch (e) {
      this.fail(e)
    }
  }
}
