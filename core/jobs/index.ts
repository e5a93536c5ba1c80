/**
 * The jobs runtime (research-jobs spec: Job, retry policy, states, Jobs API, limits) as one
 * import: `import * as Jobs from "core/jobs/index.ts"`.
 *
 * - `Job`, `JobStatus`, `RetryPolicy`, `backoffSeconds`, `shouldRetry`: the resource and its rules.
 * - `JobsSettings` / `decodeSettings`: backend choice and every limit (seconds).
 * - `JobsRuntime`: submit / get / list / cancel / watch, workers, sweeper; `open` picks the
 *   `embedded` (file log + in-process queue) or `redis` (Redis records + BullMQ) backend.
 * - `FileStore`, `makeFileStore`: the `files` service (local folder or S3-compatible bucket).
 * - `routes`: the Jobs API and file routes for a listener.
 * - `runWorkers`: `platform worker` (workers only, no listeners).
 */
export * from "./Api.ts"
export * from "./FileStore.ts"
export { routes, eventStream, type HttpOptions } from "./Http.ts"
export * from "./Job.ts"
export { applyListQuery, FileJobStore, type JobStore, type ListPage, type ListQuery } from "./JobStore.ts"
export { EmbeddedQueue, type JobQueue, RedisQueue } from "./Queue.ts"
export { RedisJobStore } from "./RedisJobStore.ts"
export { type Cancelled, JobsRuntime, type Role, type RuntimeOptions, type Submitted } from "./Runtime.ts"
export { S3Client, type S3Settings, signV4 } from "./S3.ts"
export * from "./Settings.ts"
export { classify, formatIssues, type JobTypeLookup, JobWorker, WorkerShutdown } from "./Worker.ts"
export { ROLE_ENV, runWorkers, type RunningWorkers } from "./WorkerMode.ts"
