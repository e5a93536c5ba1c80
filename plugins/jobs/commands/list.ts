import { Flags } from "@oclif/core"
import { callApi } from "../../../core/ApiClient.ts"
import { PlatformCommand, table } from "../../../core/Command.ts"
import { apiFlag, errorText, type Job } from "./JobsApi.ts"

/** The Jobs API's page of jobs (`GET /api/v1/jobs`). */
interface JobPage {
  readonly jobs: ReadonlyArray<Job>
  readonly total: number
  readonly limit: number
  readonly offset: number
  readonly next_cursor?: string
}

/** `platform jobs list`: a page of jobs, newest first, as a table (`--json`: the API's page). */
export default class JobsList extends PlatformCommand {
  static summary = "List jobs, newest first (GET /api/v1/jobs)."
  static description = "Filters go to the API as they are: --type and --status take comma-separated lists. --json prints the API's page ({jobs, total, limit, offset, next_cursor})."
  static examples = [
    "<%= config.bin %> jobs list",
    "<%= config.bin %> jobs list --status FAILED,CANCELLED --limit 5",
    "<%= config.bin %> jobs list --type crawl --json"
  ]
  static flags = {
    "api-url": apiFlag,
    type: Flags.string({ summary: "Only these job types (comma-separated)." }),
    status: Flags.string({ summary: "Only these statuses (comma-separated: PENDING, QUEUED, PROCESSING, COMPLETED, FAILED, CANCELLED)." }),
    limit: Flags.integer({ summary: "At most this many jobs (1-1000; the API's default is 50).", min: 1, max: 1000 })
  }

  async run(): Promise<JobPage> {
    const { flags } = await this.parse(JobsList)
    const query = new URLSearchParams()
    if (flags.type) query.set("job_type", flags.type)
    if (flags.status) query.set("status", flags.status)
    if (flags.limit) query.set("limit", String(flags.limit))
    try {
      const { body: page } = await callApi<JobPage>(flags["api-url"], "GET", `/api/v1/jobs${query.size ? `?${query}` : ""}`)
      this.log(table(
        ["ID", "TYPE", "STATUS", "PROGRESS", "CREATED", "MESSAGE"],
        page.jobs.map((j) => [j.job_id, j.job_type, j.status, `${j.progress}%`, j.created_at, j.status === "FAILED" ? errorText(j) : j.message])
      ))
      this.log(`${page.jobs.length} of ${page.total} job${page.total === 1 ? "" : "s"}`)
      return page
    } catch (e) {
      this.fail(e)
    }
  }
}
