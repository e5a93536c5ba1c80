/**
 * Settings of the jobs runtime: the spec's Limits table, every figure configurable. Times are in
 * seconds (fractions allowed, so tests can shrink a 3600 s limit to 0.2 s). The `jobs` plugin's
 * config decodes into this shape; the runtime can also be built from it directly.
 */
import { Schema } from "effect"
import { ErrorKind } from "./Job.ts"

const Seconds = Schema.Number.pipe(Schema.nonNegative())

/** Limits and retry defaults; defaults are the spec's. */
export const Limits = Schema.Struct({
  /** `WORKER_TIMEOUT`: max execution time of one attempt. */
  worker_timeout_s: Schema.optionalWith(Seconds, { default: () => 3600 }),
  /** `QUEUE_TIMEOUT`: max time a runnable job waits in QUEUED (backoff delays not counted). */
  queue_timeout_s: Schema.optionalWith(Seconds, { default: () => 7200 }),
  /** `WORKER_CONCURRENCY`: jobs one worker process runs at once. */
  worker_concurrency: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 1024)), { default: () => 4 }),
  max_retries: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 100)), { default: () => 3 }),
  retry_on: Schema.optionalWith(Schema.Array(ErrorKind), { default: () => ["TIMEOUT", "NETWORK_ERROR"] as const }),
  no_retry_on: Schema.optionalWith(Schema.Array(ErrorKind), { default: () => ["VALIDATION_ERROR"] as const }),
  /** Backoff base and cap: delay = min(base * 2^(attempt-1), cap). */
  backoff_base_s: Schema.optionalWith(Seconds, { default: () => 30 }),
  backoff_cap_s: Schema.optionalWith(Seconds, { default: () => 3600 }),
  /** Terminal jobs are deleted this long after they ended (7 days). */
  retention_s: Schema.optionalWith(Seconds, { default: () => 7 * 24 * 3600 }),
  /** How often queue timeouts and retention are enforced. */
  sweep_interval_s: Schema.optionalWith(Seconds, { default: () => 10 })
})
export type Limits = typeof Limits.Type

/** Redis connection for the `redis` backend (BullMQ queue and job records). */
export const RedisSettings = Schema.Struct({
  url: Schema.optionalWith(Schema.String, { default: () => "redis://127.0.0.1:6379" }),
  /** Key prefix for records and the BullMQ queue, so several platforms can share one Redis. */
  prefix: Schema.optionalWith(Schema.String, { default: () => "platform" }),
  /** BullMQ lock lifetime: a worker that dies mid-job is noticed after about this long. */
  lock_s: Schema.optionalWith(Seconds, { default: () => 30 })
})
export type RedisSettings = typeof RedisSettings.Type

/** The whole runtime configuration. */
export const JobsSettings = Schema.Struct({
  backend: Schema.optionalWith(Schema.Literal("embedded", "redis"), { default: () => "embedded" as const }),
  /** Run workers in this process (`platform serve`); `platform worker` forces true. */
  workers: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  limits: Schema.optionalWith(Limits, { default: () => Schema.decodeSync(Limits)({}) }),
  redis: Schema.optionalWith(RedisSettings, { default: () => Schema.decodeSync(RedisSettings)({}) })
})
export type JobsSettings = typeof JobsSettings.Type

/** Decodes partial settings (as written in YAML) into full settings with the spec's defaults. */
export const decodeSettings = (input: unknown = {}): JobsSettings => Schema.decodeUnknownSync(JobsSettings)(input)
