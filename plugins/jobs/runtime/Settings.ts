/**
 * Settings of the jobs runtime: the spec's Limits table, every figure configurable. Times are in
 * seconds (fractions allowed, so tests can shrink a 3600 s limit to 0.2 s). The `jobs` plugin's
 * config decodes into this shape; the runtime can also be built from it directly.
 */
import * as Schema from "effect/Schema"
import { ErrorKind } from "./Job.ts"

const Seconds = Schema.Number.pipe(Schema.nonNegative())

/** An optional member with a default and a description (shown in the generated config reference). */
const opt = <A, I>(s: Schema.Schema<A, I>, d: () => A, description: string) =>
  Schema.optionalWith(s.annotations({ description }), { default: d })

/** Limits and retry defaults; defaults are the spec's. */
export const Limits = Schema.Struct({
  worker_timeout_s: opt(Seconds, () => 3600, "WORKER_TIMEOUT: longest run of one attempt, seconds (then FAILED with a TIMEOUT)"),
  queue_timeout_s: opt(Seconds, () => 7200, "QUEUE_TIMEOUT: longest wait of a runnable job in QUEUED, seconds (then FAILED with a TIMEOUT; backoff delays do not count)"),
  worker_concurrency: opt(Schema.Int.pipe(Schema.between(1, 1024)), () => 4, "WORKER_CONCURRENCY: jobs one process runs at once"),
  max_retries: opt(Schema.Int.pipe(Schema.between(0, 100)), () => 3, "default max_retries of a job (it runs at most max_retries + 1 times)"),
  retry_on: opt(Schema.Array(ErrorKind), () => ["TIMEOUT", "NETWORK_ERROR"] as const, "default retry_on: failure kinds that are retried"),
  no_retry_on: opt(Schema.Array(ErrorKind), () => ["VALIDATION_ERROR"] as const, "default no_retry_on: failure kinds never retried"),
  backoff_base_s: opt(Seconds, () => 30, "backoff before retry n: min(backoff_base_s * 2^(n-1), backoff_cap_s), seconds"),
  backoff_cap_s: opt(Seconds, () => 3600, "longest backoff, seconds"),
  retention_s: opt(Seconds, () => 7 * 24 * 3600, "ended jobs (and their files) are deleted this long after they ended, seconds (7 days)"),
  sweep_interval_s: opt(Seconds, () => 10, "how often queue timeouts and retention are enforced, seconds")
}).annotations({ description: "the spec's Limits, every figure configurable" })
export type Limits = typeof Limits.Type

/** Redis connection for the `redis` backend (BullMQ queue and job records). */
export const RedisSettings = Schema.Struct({
  url: opt(Schema.String, () => "redis://127.0.0.1:6379", "ioredis URL of the Redis holding the queue and the job records"),
  prefix: opt(Schema.String, () => "platform", "key prefix of records and of the BullMQ queue, so platforms can share one Redis"),
  lock_s: opt(Seconds, () => 30, "BullMQ lock lifetime, seconds: a worker that dies mid-job is noticed after about this long"),
  batch_max: opt(Schema.Int.pipe(Schema.between(1, 1024)), () => 8, "most jobs one BullMQ job carries: jobs submitted in the same event-loop turn travel together (fewer queue operations per job); a worker process runs as many of them as it has free slots and hands the rest back. 1: one BullMQ job per job")
}).annotations({ description: "Redis of the redis backend" })
export type RedisSettings = typeof RedisSettings.Type

/** The whole runtime configuration. */
export const JobsSettings = Schema.Struct({
  backend: opt(Schema.Literal("embedded", "redis"), () => "embedded" as const, "embedded: in-process workers, jobs persisted under the data directory; redis: BullMQ on ioredis, workers in any process (`platform worker`)"),
  workers: opt(Schema.Boolean, () => true, "run workers in the serving process (`platform worker` always does)"),
  worker_thread: opt(Schema.Boolean, () => true, "backend redis: `platform serve` runs its workers in a worker thread, booting the plugins there as `platform worker` does, so job handlers never hold up the API's event loop and use a core of their own; false: on the API's event loop. The embedded backend's workers always share the API's thread (its queue lives there)"),
  limits: opt(Limits, () => Schema.decodeSync(Limits)({}), "limits and retry defaults"),
  redis: opt(RedisSettings, () => Schema.decodeSync(RedisSettings)({}), "Redis of the redis backend")
})
export type JobsSettings = typeof JobsSettings.Type

/** Decodes partial settings (as written in YAML) into full settings with the spec's defaults. Throws a ParseError. */
export const decodeSettings = (input: unknown = {}): JobsSettings => Schema.decodeUnknownSync(JobsSettings)(input)
