import * as fs from "node:fs"
import { Args, Flags } from "@oclif/core"
import { ApiFailure, callApi } from "../../../core/ApiClient.ts"
import { PlatformCommand } from "../../../core/Command.ts"
import { apiFlag, type Job } from "./JobsApi.ts"
import { followFlags, watchJob } from "./watch.ts"

/** `-f a.b=1` sets `{a: {b: 1}}`: values are JSON where they parse (numbers, booleans, arrays), text otherwise. */
const setField = (payload: Record<string, unknown>, assignment: string): void => {
  const eq = assignment.indexOf("=")
  if (eq <= 0) throw new Error(`--field ${assignment}: expected KEY=VALUE`)
  const keys = assignment.slice(0, eq).split(".")
  const raw = assignment.slice(eq + 1)
  let value: unknown = raw
  try {
    value = JSON.parse(raw)
  } catch {
    // Plain text: kept as the string it is.
  }
  let at = payload
  for (const key of keys.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>
  at[keys[keys.length - 1]!] = value
}

/** `platform jobs submit TYPE`: submits a job with a payload from --payload FILE (or - for stdin) and/or --field KEY=VALUE. */
export default class JobsSubmit extends PlatformCommand {
  static summary = "Submit a job of TYPE (POST /api/v1/jobs/TYPE); payload from --payload FILE, stdin (--payload -) or --field KEY=VALUE."
  static description = "Fields are applied over the --payload document; a value is JSON where it parses (5, true, [\"a\"]) and text otherwise; dotted keys nest (retry_policy.max_retries=0). An invalid payload is recorded FAILED with a VALIDATION_ERROR: the command lists the issues and exits 1. --watch follows the job like `jobs watch`. --json prints the API's job."
  static examples = [
    "<%= config.bin %> jobs submit crawl -f query=\"solar panels\" -f max_urls=20",
    "<%= config.bin %> jobs submit crawl --payload ./crawl.json --watch",
    "echo '{\"query\": \"solar panels\"}' | <%= config.bin %> jobs submit crawl --payload - --json"
  ]
  static args = { type: Args.string({ description: "Job type (see `platform plugins list`).", required: true }) }
  static flags = {
    "api-url": apiFlag,
    payload: Flags.string({ char: "p", summary: "JSON file with the payload; - reads stdin." }),
    field: Flags.string({ char: "f", summary: "Payload field KEY=VALUE (repeatable).", multiple: true }),
    watch: Flags.boolean({ char: "w", summary: "Follow the job until it ends (exit 0 only when it COMPLETED)." }),
    ...followFlags
  }

  async run(): Promise<Job> {
    const { args, flags } = await this.parse(JobsSubmit)
    let payload: Record<string, unknown> = {}
    if (flags.payload !== undefined) {
      const text = flags.payload === "-" ? fs.readFileSync(0, "utf8") : fs.readFileSync(flags.payload, "utf8")
      try {
        payload = JSON.parse(text)
      } catch (e) {
        this.error(`--payload ${flags.payload}: not JSON (${(e as Error).message})`, { exit: 1 })
      }
    }
    try {
      for (const f of flags.field ?? []) setField(payload, f)
    } catch (e) {
      this.error((e as Error).message, { exit: 1 })
    }
    try {
      const { status, body: job } = await callApi<Job>(flags["api-url"], "POST", `/api/v1/jobs/${encodeURIComponent(args.type)}`, { body: payload, accept: [202, 422] })
      if (status === 422) {
        const issues = (job.error_details as { issues?: Array<{ path: string; message: string }> } | undefined)?.issues ?? []
        if (this.jsonEnabled()) this.logJson(job)
        else this.logToStderr([`${job.job_id}: invalid ${args.type} payload (VALIDATION_ERROR): ${job.error ?? ""}`, ...issues.map((i) => `  ${i.path || "(payload)"}: ${i.message}`)].join("\n"))
        this.exit(1)
      }
      if (!this.jsonEnabled()) this.log(`${job.job_id} ${job.status} (${job.job_type})`)
      return flags.watch ? await watchJob(this, flags["api-url"], job.job_id, flags) : job
    } catch (e) {
      if (e instanceof ApiFailure && e.status === 404 && !this.jsonEnabled()) this.error(`unknown job type "${args.type}" (the API at ${flags["api-url"]} has no such type)`, { exit: 1 })
      this.fail(e)
    }
  }
}
