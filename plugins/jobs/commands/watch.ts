import { Args, Flags } from "@oclif/core"
import { PlatformCommand } from "../../../core/Command.ts"
import { apiFlag, endLine, follow, type Job } from "./JobsApi.ts"

/** Flags `jobs watch` and `jobs submit --watch` share. */
export const followFlags = {
  poll: Flags.boolean({ summary: "Poll GET /api/v1/jobs/ID instead of reading the event stream." }),
  interval: Flags.integer({ summary: "Polling interval in ms (with --poll, or after the event stream fails).", default: 500, min: 50 })
}

/**
 * Follows a job to its end for `command`: a progress bar (`progress` and `message`) on a terminal,
 * one line per change otherwise, nothing with `--json` (the command returns the final job). Sets
 * exit code 0 when the job COMPLETED; otherwise prints its end (status, error kind and message)
 * to stderr and sets exit code 1.
 */
export const watchJob = async (command: PlatformCommand, base: string, id: string, flags: { poll: boolean; interval: number }): Promise<Job> => {
  const json = command.jsonEnabled()
  const tty = !json && process.stderr.isTTY === true
  const { default: progress } = await import("cli-progress")
  const bar = tty
    ? new progress.SingleBar({ format: "{bar} {percentage}% | {status} | {message}", hideCursor: true, barsize: 30, stream: process.stderr }, progress.Presets.shades_classic)
    : undefined
  let started = false
  let last = ""
  const show = (job: Job) => {
    const values = { status: job.status, message: job.message ?? "" }
    if (bar) {
      if (!started) bar.start(100, job.progress, values)
      else bar.update(job.progress, values)
      started = true
    } else if (!json) {
      const line = `${String(job.progress).padStart(3)}% ${job.status}${job.message ? ` ${job.message}` : ""}`
      if (line !== last) process.stderr.write(`${line}\n`)
      last = line
    }
  }
  let job: Job
  try {
    job = await follow(base, id, show, {
      poll: flags.poll,
      intervalMs: flags.interval,
      onMode: (mode, reason) => {
        if (mode === "poll" && reason && !json) process.stderr.write(`${bar && started ? "\n" : ""}event stream unavailable (${reason}); polling every ${flags.interval} ms\n`)
      }
    })
  } finally {
    if (started) bar?.stop()
  }
  if (job.status !== "COMPLETED") {
    if (!json) process.stderr.write(`${endLine(job)}\n`)
    process.exitCode = 1
  } else if (!json) process.stdout.write(`${endLine(job)}\n`)
  return job
}

/** `platform jobs watch ID`: a progress bar until the job ends; exit 0 when it COMPLETED, 1 otherwise. */
export default class JobsWatch extends PlatformCommand {
  static summary = "Follow a job until it ends: progress bar with its progress and message (event stream, polling as fallback)."
  static description = "Exits 0 when the job COMPLETED; otherwise prints its status, error kind and message and exits 1. --json prints only the final job (the API's shape)."
  static examples = [
    "<%= config.bin %> jobs watch job_01jd6f8r2k0000000000000000",
    "<%= config.bin %> jobs watch job_01jd6f8r2k0000000000000000 --poll --interval 1000",
    "<%= config.bin %> jobs watch job_01jd6f8r2k0000000000000000 --json"
  ]
  static args = { id: Args.string({ description: "Job id (job_...).", required: true }) }
  static flags = { "api-url": apiFlag, ...followFlags }

  async run(): Promise<Job> {
    const { args, flags } = await this.parse(JobsWatch)
    try {
      return await watchJob(this, flags["api-url"], args.id, flags)
    } catch (e) {
      this.fail(e)
    }
  }
}
