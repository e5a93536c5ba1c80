/**
 * The Jobs API routes (research-jobs spec, "Jobs API") and the file routes, as schema-declared
 * `Route`s the `jobs` plugin mounts on its listener.
 *
 * Status codes (the spec leaves them open): POST 202 with the job as created (PENDING); 422 with
 * the job, already FAILED with a VALIDATION_ERROR, when the payload fails its schema; 400 for a
 * body that is not JSON and 404 for an unknown `{type}`, nothing recorded. GET/DELETE of an
 * unknown id 404; DELETE of a terminal job 409 with the job.
 */
import { timingSafeEqual } from "node:crypto"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { HttpError } from "../../../core/HttpError.ts"
import * as Route from "../../../core/Route.ts"
import { decodeCursor, encodeCursor, JobPage, ListJobsQuery, MAX_PAGE_BYTES, StoredFileBody } from "./Api.ts"
import type { FileStore } from "./FileStore.ts"
import { isTerminal, Job, type JobStatus } from "./Job.ts"
import { type JobsRuntimeShape, type JobStoreUnavailable, STATUSES } from "./Runtime.ts"

/** Options of the HTTP layer. */
export interface HttpOptions {
  /** `FILES_API_KEY`; undefined refuses every upload (403). */
  readonly uploadKey?: string
  /** Largest upload in bytes (413 above). */
  readonly maxUploadBytes?: number
  /** SSE keep-alive comment interval, ms (default 15000). */
  readonly heartbeatMs?: number
  /** SSE re-read of the record, ms, covering any missed change notification (default 5000). */
  readonly pollMs?: number
}

const promise = <A>(f: () => Promise<A>): Effect.Effect<A, HttpError> =>
  Effect.tryPromise({ try: f, catch: (e) => HttpError.of(503, `jobs store unavailable: ${(e as Error)?.message ?? e}`) })

/** A runtime failure as the API's `{error}` body with its 503. */
const unavailable = <A>(e: Effect.Effect<A, JobStoreUnavailable>): Effect.Effect<A, HttpError> =>
  Effect.mapError(e, (u) => HttpError.of(503, u.message))


const JobResponses = {
  200: { description: "The job", schema: Job },
  404: { description: "No such job", schema: Route.ErrorBody }
}

const enc = new TextEncoder()

/**
 * The answer to a submission of an already-parsed body: 202 with the job, 422 with the job
 * FAILED (VALIDATION_ERROR), 404 for an unknown type (nothing recorded). Rejects when the store
 * is unavailable.
 */
const submitOutcome = async (rt: JobsRuntimeShape, type: string, body: unknown): Promise<{ status: number; body: unknown }> => {
  const r = await rt.submitNow(type, body)
  if (r._tag === "UnknownType") return { status: 404, body: { error: `unknown job type "${r.type}"` } }
  return { status: r._tag === "Accepted" ? 202 : 422, body: r.job }
}

/**
 * The routes: `POST/GET/DELETE /api/v1/jobs...`, `GET /api/v1/jobs/:job_id/events` (SSE) and,
 * for the file store, `GET /files/:id/:name` and `PUT /files/:name`.
 */
export const routes = (rt: JobsRuntimeShape, files: FileStore, opts: HttpOptions = {}): ReadonlyArray<Route.Route> => [
  Route.make({
    method: "POST",
    path: "/api/v1/jobs/:type",
    summary: "Submit a job",
    description: "Body: the payload of job type `{type}`, plus an optional `retry_policy` {max_retries, retry_on, no_retry_on}.",
    tags: ["jobs"],
    responses: {
      202: { description: "Accepted; the job as created (PENDING)", schema: Job },
      400: { description: "Body is not JSON", schema: Route.ErrorBody },
      404: { description: "Unknown job type", schema: Route.ErrorBody },
      422: { description: "Payload invalid: the job, recorded FAILED with a VALIDATION_ERROR", schema: Job }
    },
    // Submissions are the hot path (the bench floods them): answered on the raw path, without a
    // fiber (through the Effect stack the bench's submissions fall several-fold).
    raw: (req) =>
      req.json === undefined
        ? Route.reply(400, { error: "request body is not valid JSON" })
        : submitOutcome(rt, req.params.type!, req.json).then(
          (r) => Route.reply(r.status, r.body),
          (e) => Route.reply(503, { error: `jobs store unavailable: ${(e as Error)?.message ?? e}` })
        )
  }),
  Route.make({
    method: "GET",
    path: "/api/v1/jobs",
    summary: "List jobs",
    description: "Newest first, each job without `payload` and `result` unless `include` names them. Filters: status, job_type (comma-separated), created_after/created_before (ISO 8601). Paging: limit (default 50, at most 200) with offset or cursor; a page stops early at 4 MiB of jobs, with a `next_cursor`.",
    tags: ["jobs"],
    query: ListJobsQuery,
    responses: { 200: { description: "A page of jobs", schema: JobPage }, 400: { description: "Bad filter", schema: Route.ErrorBody } },
    handler: ({ query }) =>
      Effect.gen(function*() {
        const status = query.status ? query.status.split(",").map((s) => s.trim().toUpperCase()).filter(Boolean) : undefined
        const bad = status?.find((s) => !STATUSES.includes(s as JobStatus))
        if (bad) return yield* Effect.fail(HttpError.of(400, `unknown status "${bad}"`))
        const time = (name: string, v: string | undefined): Effect.Effect<number | undefined, HttpError> => {
          if (v === undefined) return Effect.succeed(undefined)
          const ms = Date.parse(v)
          return Number.isNaN(ms) ? Effect.fail(HttpError.of(400, `${name} is not an ISO 8601 time`)) : Effect.succeed(ms)
        }
        const after = query.cursor !== undefined ? decodeCursor(query.cursor) : undefined
        if (query.cursor !== undefined && !after) return yield* Effect.fail(HttpError.of(400, "malformed cursor"))
        const limit = query.limit ?? 50
        const offset = query.offset ?? 0
        const created_after = yield* time("created_after", query.created_after)
        const created_before = yield* time("created_before", query.created_before)
        const page = yield* unavailable(rt.list({
          ...(status ? { status: status as Array<JobStatus> } : {}),
          ...(query.job_type ? { job_type: query.job_type.split(",").map((s) => s.trim()).filter(Boolean) } : {}),
          ...(after ? { after } : {}),
          ...(created_after !== undefined ? { created_after } : {}),
          ...(created_before !== undefined ? { created_before } : {}),
          limit,
          offset
        }))
        // Summaries unless asked: a listing must not carry every payload and result in full.
        const include = new Set(query.include?.split(",") ?? [])
        const jobs: Array<Record<string, unknown>> = []
        let bytes = 0
        let cut = false
        for (const job of page.jobs) {
          const { payload, result, ...summary } = job
          const listed = { ...summary, ...(include.has("payload") ? { payload } : {}), ...(include.has("result") && result !== undefined ? { result } : {}) }
          bytes += include.size > 0 ? JSON.stringify(listed).length : 0
          if (jobs.length > 0 && bytes > MAX_PAGE_BYTES) {
            cut = true
            break
          }
          jobs.push(listed)
        }
        const last = jobs[jobs.length - 1] as { created_at: string; job_id: string } | undefined
        // A full (or byte-cut) page may have more after it; a cursor from its last job resumes there.
        const more = last !== undefined && (cut || page.jobs.length === limit)
        return { jobs, total: page.total, limit, offset, ...(more ? { next_cursor: encodeCursor(last) } : {}) }
      })
  }),
  Route.make({
    method: "GET",
    path: "/api/v1/jobs/:job_id",
    summary: "Get a job",
    tags: ["jobs"],
    responses: JobResponses,
    handler: ({ params }) =>
      Effect.gen(function*() {
        const job = yield* unavailable(rt.get(params.job_id!))
        if (!job) return yield* Effect.fail(HttpError.of(404, `job ${params.job_id} not found`))
        return job
      })
  }),
  Route.make({
    method: "DELETE",
    path: "/api/v1/jobs/:job_id",
    summary: "Cancel a job",
    description: "Cancels a PENDING, QUEUED or PROCESSING job (a running attempt is aborted). 409 with the job when it already ended.",
    tags: ["jobs"],
    responses: { ...JobResponses, 409: { description: "Job already ended", schema: Job } },
    handler: ({ params }) =>
      Effect.gen(function*() {
        const r = yield* unavailable(rt.cancel(params.job_id!))
        if (r._tag === "NotFound") return yield* Effect.fail(HttpError.of(404, `job ${params.job_id} not found`))
        return r._tag === "Cancelled" ? r.job : Route.reply(409, r.job)
      })
  }),
  Route.make({
    method: "GET",
    path: "/api/v1/jobs/:job_id/events",
    summary: "Job progress as server-sent events",
    description: "`event: job` with the job as data on every change (first the current state), then `event: end` with the final job; the stream closes when the job ends. Comment lines keep the connection alive.",
    tags: ["jobs"],
    responses: { 200: { description: "SSE stream", contentType: "text/event-stream" }, 404: { description: "No such job", schema: Route.ErrorBody } },
    handler: ({ params }) =>
      Effect.gen(function*() {
        const id = params.job_id!
        const exists = yield* unavailable(rt.get(id))
        if (!exists) return yield* Effect.fail(HttpError.of(404, `job ${id} not found`))
        return HttpServerResponse.stream(eventStream(rt, id, opts), {
          contentType: "text/event-stream",
          headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
        })
      })
  }),
  Route.make({
    method: "GET",
    path: "/files/:id/:name",
    summary: "Download a stored file",
    tags: ["files"],
    responses: { 200: { description: "The file", contentType: "application/octet-stream" }, 404: { description: "No such file", schema: Route.ErrorBody } },
    handler: ({ params }) =>
      Effect.gen(function*() {
        const f = yield* promise(() => files.open(params.id!, params.name!))
        if (!f) return yield* Effect.fail(HttpError.of(404, "file not found"))
        return HttpServerResponse.stream(
          Stream.fromAsyncIterable(f.body, (e) => e),
          { contentType: f.contentType, ...(f.size !== undefined ? { contentLength: f.size } : {}) }
        )
      })
  }),
  Route.make({
    method: "PUT",
    path: "/files/:name",
    summary: "Upload a file",
    description: "Needs `FILES_API_KEY` as `Authorization: Bearer <key>` or `x-api-key`. Body: the raw bytes; `content-type` is kept. Answers 201 with the file's id and absolute URL.",
    tags: ["files"],
    security: ["files_api_key"],
    // The listener's body limit is for JSON; an upload may be as large as the store allows.
    limits: { body_bytes: opts.maxUploadBytes ?? 100 * 1024 * 1024 },
    responses: {
      201: { description: "Stored", schema: StoredFileBody },
      401: { description: "Missing or wrong key", schema: Route.ErrorBody },
      403: { description: "Uploads disabled (no key configured)", schema: Route.ErrorBody },
      413: { description: "Too large", schema: Route.ErrorBody }
    },
    handler: ({ params, request }) =>
      Effect.gen(function*() {
        if (!opts.uploadKey) return yield* Effect.fail(HttpError.of(403, "uploads are disabled: no FILES_API_KEY configured"))
        const auth = request.headers["authorization"]
        const given = request.headers["x-api-key"] ?? (auth?.startsWith("Bearer ") ? auth.slice(7) : undefined)
        if (!given || !safeEqual(given, opts.uploadKey)) return yield* Effect.fail(HttpError.of(401, "missing or wrong FILES_API_KEY"))
        const max = opts.maxUploadBytes ?? 100 * 1024 * 1024
        const declared = Number(request.headers["content-length"] ?? "0")
        if (declared > max) return yield* Effect.fail(HttpError.of(413, `upload larger than ${max} bytes`))
        const buf = yield* Effect.mapError(request.arrayBuffer, () => HttpError.of(400, "could not read the body"))
        if (buf.byteLength > max) return yield* Effect.fail(HttpError.of(413, `upload larger than ${max} bytes`))
        const type = request.headers["content-type"]
        const f = yield* promise(() => files.put(params.name!, new Uint8Array(buf), type))
        return Route.reply(201, f)
      })
  })
]

/** Constant-time comparison of the upload key. */
const safeEqual = (a: string, b: string): boolean => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/**
 * The SSE byte stream of one job: `event: job` per change (deduplicated), `event: end` once
 * terminal, `: keep-alive` comments. Changes come from the store's notifications; a periodic
 * re-read covers notifications lost while a Redis subscriber reconnects.
 */
export const eventStream = (rt: JobsRuntimeShape, id: string, opts: HttpOptions = {}): Stream.Stream<Uint8Array> =>
  Stream.asyncPush<Uint8Array>((emit) =>
    Effect.acquireRelease(
      Effect.promise(async () => {
        let last = ""
        let seq = 0
        let done = false
        const send = (job: Job) => {
          if (done) return
          const data = JSON.stringify(job)
          if (data === last) return
          last = data
          seq++
          const end = isTerminal(job.status)
          emit.single(enc.encode(`id: ${seq}\nevent: job\ndata: ${data}\n\n`))
          if (end) {
            done = true
            emit.single(enc.encode(`id: ${seq + 1}\nevent: end\ndata: ${data}\n\n`))
            emit.end()
          }
        }
        const unsubscribe = await Effect.runPromise(rt.watch(id, send)).catch(() => undefined)
        if (!unsubscribe) emit.end()
        const heartbeat = setInterval(() => emit.single(enc.encode(": keep-alive\n\n")), opts.heartbeatMs ?? 15_000)
        const poll = setInterval(() => {
          Effect.runPromise(rt.get(id)).then((j) => (j ? send(j) : emit.end()), () => {})
        }, opts.pollMs ?? 5_000)
        return () => {
          clearInterval(heartbeat)
          clearInterval(poll)
          unsubscribe?.()
        }
      }),
      (cleanup) => Effect.sync(cleanup)
    ), { bufferSize: "unbounded" })
