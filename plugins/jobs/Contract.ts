/**
 * The public contract of the `jobs` plugin: the only module of it other plugins import. A job
 * plugin lists `jobs` in `dependsOn` and returns `extensions: jobTypes(...)` from `setup`; its
 * handlers may use the network helpers below (fetches with deadlines, 429 backoff and per-host
 * rate limits, geo routing), which every job type shares. Plugins keeping state beside the jobs
 * (workspaces) read the shared storage (`jobsStorage`): the file store as a bucket, locks.
 */
export { type JobContext, JobErrorKind, JobFailure, type JobFiles, type JobType, JobTypes, jobTypes } from "./JobType.ts"
export { abortFailure, DeadlineExceeded, invalid, statusFailure, transportFailure } from "./net/Failure.ts"
export { type FetchConfig, fetchConfigFields, Fetcher, fetcherFor, type FetcherOptions, type FetchRequest, type FetchResponse, retryAfterMs } from "./net/Fetcher.ts"
export { directOnly, GeoField, type GeoFilter, GeoRouter, type GeoRouterContribution, GeoRouters, geoRouters, type GeoResolver, parseGeo, pluggedGeoResolver, type Route, torAware } from "./net/GeoRouting.ts"
export { RateLimiter, type RateLimiterOptions, sleep } from "./net/RateLimiter.ts"
export { type BucketObject, InvalidKey, JobsStorage, jobsStorage, type Locks, type ObjectBucket } from "./Storage.ts"
