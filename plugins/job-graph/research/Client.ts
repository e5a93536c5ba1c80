/**
 * The research client's HTTP side: the Jobs API (`POST /api/v1/jobs/graph`, `GET|DELETE
 * /api/v1/jobs/{id}`, the SSE stream `GET /api/v1/jobs/{id}/events`) and the workspace routes,
 * over `fetch` only (the client never loads the platform's engine). Errors are `ApiError`s with
 * one readable line; an address that does not answer is `Unreachable`.
 */
import { serverSentEvents } from "../../../core/Sse.ts"
import type { GraphPayload } from "./Templates.ts"

/** Default API address: the spec's loopback address and Jobs API port. */
export const DEFAULT_API_URL = "http://127.0.0.1:9003"

/** The API address: `PLATFORM_API_URL`, else `DEFAULT_API_URL`; trailing slashes dropped. */
export const apiUrl = (env: NodeJS.ProcessEnv = process.env): string => (env.PLATFORM_API_URL?.trim() || DEFAULT_API_URL).replace(/\/+$/, "")

/** The fields of a job the client reads (the API answers more). */
export interface Job {
  readonly job_id: string
  readonly status: "PENDING" | "QUEUED" | "PROCESSING" | "COMPLETED" | "FAILED" | "CANCELLED"
  readonly progress: number
  readonly message?: string
  readonly result?: unknown
  readonly error?: string
  readonly error_kind?: string
  readonly error_details?: unknown
  readonly duration_seconds?: number
  readonly created_at: string
}

/** A workspace manifest (workspaces plugin); only `workspace_id` and `name` are relied on. */
export interface Workspace {
  readonly workspace_id: string
  readonly name: string
  readonly description?: string | null
  readonly [key: string]: unknown
}

/** True once a job can no longer change. */
export const isTerminal = (s: Job["status"]): boolean => s === "COMPLETED" || s === "FAILED" || s === "CANCELLED"

/**
 * An API answer other than the expected one: `status` (0 when no answer) and a one-line message.
 * A plain `Error`: `platform research` starts without loading Effect.
 */
export class ApiError extends Error {
  readonly _tag: string = "ApiError"
  constructor(message: string, readonly status: number, readonly body?: unknown) {
    super(message)
  }
}

/** Nothing answers at the API address (connection refused, DNS, timeout). */
export class Unreachable extends ApiError {
  override readonly _tag = "Unreachable"
}

/** The message of an error body (`{error: "..."}`, a FAILED job's `error`) or the raw text. */
const bodyMessage = (body: unknown, text: string): string => {
  const b = body as { error?: unknown; message?: unknown } | null
  if (b && typeof b.error === "string") return b.error
  if (b && typeof b.error === "object" && b.error !== null && typeof (b.error as { message?: unknown }).message === "string") return (b.error as { message: string }).message
  if (b && typeof b.message === "string") return b.message
  return text.slice(0, 300)
}

/** The cause of a failed `fetch` in a few words (`ECONNREFUSED`, `ENOTFOUND`, ...). */
const causeOf = (e: unknown): string => {
  const c = (e as { cause?: { code?: string; message?: string } }).cause
  return c?.code ?? c?.message ?? (e as Error).message
}

/** A Jobs API client at `base` (see `apiUrl`). */
export class ResearchApi {
  constructor(readonly base: string) {}

  /** `method path` with a JSON body; resolves with the status and parsed body; rejects `Unreachable`. */
  private async call(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<{ status: number; body: unknown }> {
    let res: Response
    try {
      res = await fetch(`${this.base}${path}`, {
        method,
        ...(body !== undefined ? { body: JSON.stringify(body), headers: { "content-type": "application/json" } } : {}),
        signal: signal ?? AbortSignal.timeout(15_000)
      })
    } catch (e) {
      if ((e as Error).name === "AbortError" && signal?.aborted) throw e
      throw new Unreachable(`cannot reach the Jobs API at ${this.base} (${causeOf(e)}); start it with \`platform serve\` or set PLATFORM_API_URL`, 0)
    }
    const text = await res.text()
    let parsed: unknown = text
    try {
      parsed = text === "" ? null : JSON.parse(text)
    } catch {
      // Not JSON: the message shows the text.
    }
    return { status: res.status, body: parsed }
  }

  private async expect<T>(method: string, path: string, ok: ReadonlyArray<number>, body?: unknown): Promise<T> {
    const r = await this.call(method, path, body)
    if (!ok.includes(r.status)) {
      throw new ApiError(`${method} ${path}: HTTP ${r.status}: ${bodyMessage(r.body, String(r.body))}`, r.status, r.body)
    }
    return r.body as T
  }

  /** Answers when the Jobs API is up (lists one job); rejects `Unreachable` or `ApiError`. */
  async ping(): Promise<void> {
    await this.expect("GET", "/api/v1/jobs?limit=1", [200])
  }

  /**
   * Submits a graph job. Resolves with the job (PENDING); a payload the platform refuses (422:
   * recorded FAILED) rejects with `ApiError` carrying the validation message.
   */
  async submit(payload: GraphPayload, workspaceId: string | null): Promise<Job> {
    const r = await this.call("POST", "/api/v1/jobs/graph", { ...payload, ...(workspaceId ? { workspace_id: workspaceId } : {}) })
    if (r.status === 202) return r.body as Job
    throw new ApiError(`the job was refused (HTTP ${r.status}): ${bodyMessage(r.body, String(r.body))}`, r.status, r.body)
  }

  /** The job `id`. */
  get(id: string): Promise<Job> {
    return this.expect("GET", `/api/v1/jobs/${encodeURIComponent(id)}`, [200])
  }

  /** Cancels `id`; resolves with the job (already ended: as it ended, the API's 409). */
  cancel(id: string): Promise<Job> {
    return this.expect("DELETE", `/api/v1/jobs/${encodeURIComponent(id)}`, [200, 409])
  }

  /**
   * Follows job `id` until it ends, calling `onUpdate` with each state: the SSE stream
   * (`event: job` per change), and polling every `pollMs` when the stream cannot be opened or
   * breaks before the end. Resolves with the final job. `signal` stops following (rejects).
   */
  async follow(id: string, onUpdate: (job: Job) => void, signal: AbortSignal, pollMs = 500): Promise<Job> {
    let last: Job | undefined
    const seen = (j: Job) => {
      last = j
      onUpdate(j)
    }
    try {
      const res = await fetch(`${this.base}/api/v1/jobs/${encodeURIComponent(id)}/events`, { headers: { accept: "text/event-stream" }, signal })
      if (res.status === 200 && res.body) {
        for await (const e of serverSentEvents(res.body as unknown as AsyncIterable<Uint8Array>)) {
          const job = JSON.parse(e.data) as Job
          seen(job)
          if (isTerminal(job.status)) return job
        }
      } else {
        await res.body?.cancel()
      }
    } catch (e) {
      if (signal.aborted) throw e
      // The stream broke: polling takes over below.
    }
    for (;;) {
      if (signal.aborted) throw signal.reason
      const job = await this.get(id)
      if (JSON.stringify(job) !== JSON.stringify(last)) seen(job)
      if (isTerminal(job.status)) return job
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, pollMs)
        signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true })
      })
    }
  }

  /** Creates a workspace named `name`. */
  createWorkspace(name: string): Promise<Workspace> {
    return this.expect("POST", "/api/v1/workspaces", [200, 201], { name, description: "created from platform research", tags: ["research-client"], config: {} })
  }

  /** The workspaces (the list route answers an array or `{workspaces: [...]}`). */
  async listWorkspaces(): Promise<ReadonlyArray<Workspace>> {
    const body = await this.expect<unknown>("GET", "/api/v1/workspaces", [200])
    if (Array.isArray(body)) return body as Array<Workspace>
    const inner = (body as { workspaces?: unknown; items?: unknown }).workspaces ?? (body as { items?: unknown }).items
    return Array.isArray(inner) ? (inner as Array<Workspace>) : []
  }

  /** The workspace `id`. */
  getWorkspace(id: string): Promise<Workspace> {
    return this.expect("GET", `/api/v1/workspaces/${encodeURIComponent(id)}`, [200])
  }
}
