/**
 * Running one graph job from the terminal and watching it: submit, follow (SSE, polling
 * fallback), show progress, cancel on request. Two displays: a live cli-progress bar with the
 * job's progress, elapsed time and message (a terminal), or one plain line per change on stderr
 * (test mode, pipes).
 */
import cliProgress from "cli-progress"
import { type Job, ResearchApi } from "./Client.ts"
import { seconds } from "./Render.ts"
import type { GraphPayload } from "./Templates.ts"

/** What a run shows while the job moves. */
export interface ProgressView {
  readonly start: (jobId: string) => void
  readonly update: (job: Job, cancelling: boolean) => void
  readonly stop: (job: Job) => void
}

/** The live bar: `[████░░░░] 40% | 3.2 s | PROCESSING | stage 2/5 acquire: fetch_batch: 3/10`. */
export const barView = (out: NodeJS.WriteStream = process.stdout): ProgressView => {
  let bar: cliProgress.SingleBar | undefined
  let started = 0
  let tick: NodeJS.Timeout | undefined
  let last: { status: string; message: string } = { status: "PENDING", message: "" }
  const elapsed = () => seconds((Date.now() - started) / 1000)
  return {
    start: () => {
      started = Date.now()
      bar = new cliProgress.SingleBar({
        format: "{bar} {percentage}% | {elapsed} | {status} {message}",
        barsize: 24,
        hideCursor: true,
        stream: out,
        linewrap: false,
        fps: 10,
        clearOnComplete: false,
        stopOnComplete: false
      }, cliProgress.Presets.shades_classic)
      bar.start(100, 0, { elapsed: elapsed(), status: last.status, message: "" })
      // Elapsed time moves even while the job reports nothing new.
      tick = setInterval(() => bar?.update({ elapsed: elapsed(), ...last }), 200)
    },
    update: (job, cancelling) => {
      last = { status: cancelling && job.status !== "CANCELLED" ? "CANCELLING" : job.status, message: job.message ?? "" }
      bar?.update(job.progress, { elapsed: elapsed(), ...last })
    },
    stop: (job) => {
      if (tick) clearInterval(tick)
      last = { status: job.status, message: job.status === "COMPLETED" ? "done" : (job.message ?? "") }
      bar?.update(job.status === "COMPLETED" ? 100 : job.progress, { elapsed: elapsed(), ...last })
      bar?.stop()
    }
  }
}

/** Plain lines on `err` when the progress or message changes: `[ 40%] 3.2 s PROCESSING stage 2/5 ...`. */
export const lineView = (err: NodeJS.WritableStream = process.stderr): ProgressView => {
  let started = 0
  let last = ""
  return {
    start: (id) => {
      started = Date.now()
      err.write(`submitted ${id}\n`)
    },
    update: (job, cancelling) => {
      const line = `[${String(job.progress).padStart(3)}%] ${cancelling && job.status !== "CANCELLED" ? "CANCELLING" : job.status} ${job.message ?? ""}`.trimEnd()
      if (line === last) return
      last = line
      err.write(`${line} (${seconds((Date.now() - started) / 1000)})\n`)
    },
    stop: () => {}
  }
}

/** A job being run: `cancel()` asks the API to cancel it (idempotent); `done` resolves with the final job. */
export interface RunningJob {
  readonly jobId: string
  readonly cancel: () => void
  readonly done: Promise<Job>
}

/**
 * Submits `payload` (into `workspaceId` when set) and follows the job with `view`. Rejects only
 * when the submission fails (`ApiError`); a job that fails resolves `done` with the FAILED job.
 */
export const startJob = async (api: ResearchApi, payload: GraphPayload, workspaceId: string | null, view: ProgressView): Promise<RunningJob> => {
  const job = await api.submit(payload, workspaceId)
  let cancelling = false
  let current = job
  const stopFollowing = new AbortController()
  view.start(job.job_id)
  view.update(job, false)
  const cancel = () => {
    if (cancelling) return
    cancelling = true
    view.update({ ...current, message: "cancelling…" }, true)
    // The stream then ends with the CANCELLED job; an error here leaves following to tell.
    api.cancel(job.job_id).catch(() => {})
  }
  const done = api.follow(job.job_id, (j) => {
    current = j
    view.update(j, cancelling)
  }, stopFollowing.signal).then((final) => {
    view.stop(final)
    return final
  }, (e) => {
    view.stop({ ...job, status: "FAILED", message: String((e as Error).message) })
    throw e
  })
  return { jobId: job.job_id, cancel, done }
}
