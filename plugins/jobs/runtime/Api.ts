/**
 * The Jobs API's HTTP shapes (the spec only; handlers are in `Http.ts`): the list query and
 * page, and the error bodies. Routes document their responses with these for OpenAPI.
 */
import * as Schema from "effect/Schema"
import { Job } from "./Job.ts"

/** Largest page of a job listing. */
export const MAX_PAGE = 200

/** Most bytes of listed jobs in one page (JSON); a page stops early past it, with a `next_cursor`. */
export const MAX_PAGE_BYTES = 4 * 1024 * 1024

/** Query of `GET /api/v1/jobs`. Lists are comma-separated; times are ISO 8601 (exclusive bounds). */
export const ListJobsQuery = Schema.Struct({
  status: Schema.optional(Schema.String).annotations({ description: "comma-separated statuses, e.g. QUEUED,PROCESSING" }),
  job_type: Schema.optional(Schema.String).annotations({ description: "comma-separated job types" }),
  created_after: Schema.optional(Schema.String).annotations({ description: "ISO 8601; jobs created strictly after" }),
  created_before: Schema.optional(Schema.String).annotations({ description: "ISO 8601; jobs created strictly before" }),
  limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, MAX_PAGE))).annotations({ description: `page size, default 50, at most ${MAX_PAGE}` }),
  include: Schema.optional(Schema.String.pipe(Schema.pattern(/^(payload|result)(,(payload|result))*$/, { message: () => "a comma-separated list of payload, result" }))).annotations({
    description: "what a listed job carries beyond its summary: `payload`, `result` (comma-separated); left out by default"
  }),
  offset: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative())).annotations({ description: "skip this many (after the cursor, when given)" }),
  cursor: Schema.optional(Schema.String).annotations({ description: "`next_cursor` of the previous page" })
})
export type ListJobsQuery = typeof ListJobsQuery.Type

/** A job as listed: without `payload` and `result` unless `include` asks for them. */
export const ListedJob = Schema.Struct({ ...Job.fields, payload: Schema.optional(Schema.Unknown) }).annotations({ identifier: "ListedJob" })

/**
 * A page of jobs, newest first. `total` counts all matches; `next_cursor` is absent on the last
 * page. A page holds `limit` jobs, fewer when they would pass `MAX_PAGE_BYTES` (then
 * `next_cursor` resumes after the last one given).
 */
export const JobPage = Schema.Struct({
  jobs: Schema.Array(ListedJob),
  total: Schema.Int,
  limit: Schema.Int,
  offset: Schema.Int,
  next_cursor: Schema.optional(Schema.String)
}).annotations({ identifier: "JobPage" })
export type JobPage = typeof JobPage.Type

/** Body of a file upload's answer. */
export const StoredFileBody = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  key: Schema.String,
  url: Schema.String,
  size: Schema.Int,
  content_type: Schema.String
}).annotations({ identifier: "StoredFile" })

/** Encodes a list cursor: the last job of a page (creation ms and id), base64url. */
export const encodeCursor = (job: { created_at: string; job_id: string }): string =>
  Buffer.from(`${Date.parse(job.created_at)}:${job.job_id}`).toString("base64url")

/** Decodes a cursor; undefined when malformed. */
export const decodeCursor = (cursor: string): { ms: number; id: string } | undefined => {
  const s = Buffer.from(cursor, "base64url").toString("utf8")
  const m = /^(\d+):(job_[0-9a-z]+)$/.exec(s)
  return m ? { ms: Number(m[1]), id: m[2]! } : undefined
}
