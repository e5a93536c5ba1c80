import { Args } from "@oclif/core"
import { callApi } from "../../../core/ApiClient.ts"
import { PlatformCommand } from "../../../core/Command.ts"
import { apiFlag, type Job } from "./JobsApi.ts"

/** `platform jobs cancel ID`: cancels a PENDING, QUEUED or PROCESSING job; exit 1 when it had already ended. */
export default class JobsCancel extends PlatformCommand {
  static summary = "Cancel a job that has not ended (DELETE /api/v1/jobs/ID)."
  static description = "A running attempt is aborted and the job ends CANCELLED. A job that already ended is left as it is: the command says how it ended and exits 1. --json prints the API's job."
  static examples = ["<%= config.bin %> jobs cancel job_01jd6f8r2k0000000000000000", "<%= config.bin %> jobs cancel job_01jd6f8r2k0000000000000000 --json"]
  static args = { id: Args.string({ description: "Job id (job_...).", required: true }) }
  static flags = { "api-url": apiFlag }

  async run(): Promise<Job> {
    const { args, flags } = await this.parse(JobsCancel)
    try {
      const { status, body: job } = await callApi<Job>(flags["api-url"], "DELETE", `/api/v1/jobs/${encodeURIComponent(args.id)}`, { accept: [200, 409] })
      if (status === 409) {
        if (this.jsonEnabled()) this.logJson(job)
        else this.logToStderr(`${job.job_id} had already ended: ${job.status}`)
        this.exit(1)
      }
      this.log(`${job.job_id} ${job.status}`)
      return job
    } catch (e) {
      this.fail(e)
    }
  }
}
