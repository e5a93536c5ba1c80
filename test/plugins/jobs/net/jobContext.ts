/**
 * A real `JobContext` for handler tests: files land in a temporary directory (returned as
 * `file://` URLs), the signal is a real `AbortController`'s, progress is recorded.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { expect } from "vitest"
import type { GraphLimits } from "../../../../core/Contribution.ts"
import { type JobContext, JobFailure } from "../../../../plugins/jobs/Contract.ts"

/** The spec's default graph limits (FETCH_TIMEOUT 30 s, EMBED_BATCH_SIZE 32, GRAPH_MAX_PARALLEL 10). */
export const DEFAULT_GRAPH_LIMITS: GraphLimits = { fetchTimeoutMs: 30_000, embedBatchSize: 32, maxParallel: 10 }

/** A job context that is also a graph operation context (`limits`: the spec's defaults). */
export interface TestJobContext extends JobContext {
  readonly limits: GraphLimits
  readonly controller: AbortController
  readonly progressLog: Array<{ percent: number; message?: string }>
  readonly stored: Array<{ name: string; contentType?: string; url: string; size: number }>
  /** Reads a stored file back by its URL. */
  readonly read: (url: string) => Buffer
  readonly cleanup: () => void
}

let seq = 0

/** Builds a context for `jobId`; call `cleanup()` in `afterEach`. */
export const makeJobContext = (jobId = `job_test${++seq}`): TestJobContext => {
  const root = mkdtempSync(join(tmpdir(), "jobctx-"))
  const filesDir = join(root, "files")
  const workDir = join(root, "work")
  mkdirSync(filesDir)
  mkdirSync(workDir)
  const controller = new AbortController()
  const progressLog: TestJobContext["progressLog"] = []
  const stored: TestJobContext["stored"] = []
  let n = 0
  return {
    jobId,
    attempt: 1,
    limits: DEFAULT_GRAPH_LIMITS,
    signal: controller.signal,
    controller,
    workDir,
    progressLog,
    stored,
    progress: async (percent, message) => {
      progressLog.push({ percent, message })
    },
    files: {
      put: async (name, data, contentType) => {
        const id = `f${++n}`
        const path = join(filesDir, `${id}-${name.replace(/[^\w.-]/g, "_")}`)
        writeFileSync(path, data)
        const url = pathToFileURL(path).href
        stored.push({ name, contentType, url, size: typeof data === "string" ? Buffer.byteLength(data) : data.byteLength })
        return { id, url }
      }
    },
    read: (url) => readFileSync(fileURLToPath(url)),
    cleanup: () => rmSync(root, { recursive: true, force: true })
  }
}

/** Contexts for one test file: `make` builds one, `cleanup` (in `afterEach`) removes all made so far. */
export const jobContexts = () => {
  const made: Array<TestJobContext> = []
  return {
    make: (jobId?: string): TestJobContext => {
      const c = makeJobContext(jobId)
      made.push(c)
      return c
    },
    cleanup: (): void => made.splice(0).forEach((c) => c.cleanup())
  }
}

/** The rejection of `p`, asserted to be a `JobFailure` (the test fails if `p` resolves or rejects with anything else). */
export const expectJobFailure = async (p: Promise<unknown>): Promise<JobFailure> => {
  const e = await p.then(() => undefined, (e: unknown) => e)
  expect(e).toBeInstanceOf(JobFailure)
  return e as JobFailure
}
