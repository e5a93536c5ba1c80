/**
 * What the `jobs` plugin shares with plugins that keep state beside the jobs (workspaces): its
 * file store as a bucket of keyed objects, reading back the files jobs stored, and locks that
 * exclude every process running jobs on the configured backend. Re-exported by `Contract.ts`.
 *
 * The `jobs` plugin registers the one value of the `JobsStorage` point itself (id `jobs`); a
 * plugin listing `jobs` in `dependsOn` reads it in `setup` with `jobsStorage(extensions)`.
 */
import * as ExtensionPoint from "../../core/ExtensionPoint.ts"
import type { Extensions } from "../../core/ExtensionPoint.ts"
import type { ObjectBucket } from "./runtime/Bucket.ts"
import type { Locks } from "./runtime/Locks.ts"

export type { BucketObject, ObjectBucket } from "./runtime/Bucket.ts"
export { InvalidKey } from "./runtime/Bucket.ts"
export type { Locks } from "./runtime/Locks.ts"

/** The shared storage of the jobs runtime. */
export interface JobsStorage {
  readonly id: "jobs"
  /** `local` or `s3`: where the bucket lives. */
  readonly backend: "local" | "s3"
  /** `embedded` or `redis`: which processes `locks` excludes (all that run jobs). */
  readonly jobsBackend: "embedded" | "redis"
  readonly bucket: ObjectBucket
  readonly locks: Locks
  /** The bytes of a file a job stored, by its download URL (`{files_url}/<id>/<name>`); undefined when absent. */
  readonly readStored: (url: string) => Promise<Uint8Array | undefined>
}

/** The point the `jobs` plugin registers its storage into. */
export const JobsStorage = ExtensionPoint.make<JobsStorage>({ name: "jobsStorage", kind: "jobs storage", owner: "jobs", idOf: (s) => s.id })

/** The jobs storage of a booted kernel; undefined when the `jobs` plugin is not set up (yet). */
export const jobsStorage = (extensions: Extensions): JobsStorage | undefined => extensions.registry(JobsStorage).get("jobs")
