/**
 * The `platform jobs ...` commands' side of the Jobs API (research-jobs spec, "Jobs API"): the
 * API address flag, the calls they make over HTTP and how a job is shown. Nothing of the jobs
 * runtime is loaded (the `Job` import is a type only): the commands manage a platform running
 * elsewhere, as curl would.
 */
import { ApiFailure, apiUrlFlag, ApiUnreachable, callApi } from "../../../core/ApiClient.ts"
import type { Job } from "../runtime/Job.ts"

export type { Job }

/** `--api-url`: the listener serving the Jobs API (env PLATFORM_API_URL; platform.yaml's `jobs` listener by default). */
export const apiFlag = apiUrlFlag("PLATFORM_API_URL", "http://127.0.0.1:9003")

/** Statuses a job never leaves. */
export const TERMINAL: ReadonlySet<string> = new Set(["COMPLETED", "FAILED", "CANCELLED"])

/** `GET /api/v1/jobs/{id}`; `ApiFailure` (404) for an unknown id. */
export const getJob = async (base: string, id: string): Promise<Job> => (await callApi<Job>(base, "GET", `/api/v1/jobs/${encodeURIComponent(id)}`)).body

/** `KIND: message` of a failed job (the API's `error` already starts with the kind, as a rule). */
export const errorText = (job: Job): string => {
  const kind = job.error_kind ?? "ERROR"
  const message = job.error ?? "(no message)"
  return message.startsWith(`${kind}:`) ? message : `${kind}: ${message}`
}

/** One line about a job's end: `job_… COMPLETED in 1.2 s`, `job_… FAILED in 0.1 s: NETWORK_ERROR: refused`. */
export const endLine = (job: Job): string => {
  const took = job.duration_seconds !== undefined ? ` in ${job.duration_seconds.toFixed(1)} s` : ""
  if (job.status === "FAILED") return `${job.job_id} FAILED${took}: ${errorText(job)}`
  return `${job.job_id} ${job.status}${took}${job.status === "CANCELLED" && job.error ? `: ${job.error}` : ""}`
}

/** Options of `follow`. */
export interface FollowOptions {
  /** Poll `GET` every `intervalMs` instead of reading the event stream. */
  readonly poll?: boolean
  /** Polling interval, ms (default 500). */
  readonly intervalMs?: number
  /** Told which way updates arrive, and when the stream is given up for polling (with why). */
  readonly onMode?: (mode: "sse" | "poll", reason?: string) => void
}

/**
 * Follows job `id` until it ends: `onJob` gets every state (the current one first). Reads the
 * API's server-sent events (`GET /api/v1/jobs/{id}/events`: `event: job` per change, `event: end`
 * last); when the stream cannot be opened or breaks before the end, it polls `GET` instead.
 * Resolves with the final job; rejects with `ApiUnreachable`/`ApiFailure` when polling fails too.
 */
export const follow = async (base: string, id: string, onJob: (job: Job) => void, options: FollowOptions = {}): Promise<Job> => {
  if (!options.poll) {
    try {
      const end = await streamEvents(base, id, onJob)
      if (end) return end
      options.onMode?.("poll", "the event stream closed before the job ended")
    } catch (e) {
      if ((e as { _tag?: string })._tag === "ApiFailure") throw e
      options.onMode?.("poll", (e as Error).message)
    }
  } else options.onMode?.("poll")
  for (;;) {
    const job = await getJob(base, id)
    onJob(job)
    if (TERMINAL.has(job.status)) return job
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 500))
  }
}

/** Reads the SSE stream; resolves with the job of `event: end`, or undefined when the stream closed first. */
const streamEvents = async (base: string, id: string, onJob: (job: Job) => void): Promise<Job | undefined> => {
  const url = `${base.replace(/\/+$/, "")}/api/v1/jobs/${encodeURIComponent(id)}/events`
  let res: Response
  try {
    res = await fetch(url, { headers: { accept: "text/event-stream" } })
  } catch (e) {
    throw new ApiUnreachable(base, (e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message)
  }
  if (res.status === 404) throw new ApiFailure(404, await res.json().catch(() => ({ error: `job ${id} not found` })), `GET /api/v1/jobs/${id}/events`)
  if (!res.ok || !res.body || !(res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    throw new Error(`the event stream answered HTTP ${res.status}`)
  }
  const decoder = new TextDecoder()
  let buffer = ""
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true })
    // Events end with a blank line; fields are `name: value` lines, comments start with ':'.
    for (let cut = buffer.indexOf("\n\n"); cut >= 0; cut = buffer.indexOf("\n\n")) {
      const block = buffer.slice(0, cut)
      buffer = buffer.slice(cut + 2)
      let event = "message"
      const data: Array<string> = []
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim()
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""))
      }
      if (data.length === 0) continue
      const job = JSON.parse(data.join("\n")) as Job
      if (event === "end") return job
      if (event === "job") onJob(job)
    }
  }
  return undefined
}
