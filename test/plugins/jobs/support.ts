/**
 * Shared helpers of the jobs tests: a private `redis-server` on a free loopback port, a
 * platform.yaml for either backend, and a small HTTP client of the Jobs API with polling.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Redis } from "ioredis"
import type { Job } from "../../../plugins/jobs/runtime/Job.ts"

import { freePort } from "../../../core/Listener.ts"

/** A free TCP port on 127.0.0.1 (the kernel's; re-exported for the tests that import it from here). */
export { freePort }

/** A redis-server child on loopback, no persistence. `stop` kills it. */
export interface TestRedis {
  readonly url: string
  readonly port: number
  stop(): Promise<void>
}

/** Starts `/usr/bin/redis-server` on a free port; resolves once it answers PING. */
export const startRedis = async (): Promise<TestRedis> => {
  const port = await freePort()
  const child: ChildProcess = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" })
  const url = `redis://127.0.0.1:${port}`
  const deadline = Date.now() + 10_000
  for (;;) {
    const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
    r.on("error", () => {}) // refused until the server is up: expected while polling
    try {
      await r.connect()
      await r.ping()
      r.disconnect()
      break
    } catch {
      r.disconnect()
      if (Date.now() > deadline) throw new Error("redis-server did not start")
      await new Promise((res) => setTimeout(res, 50))
    }
  }
  return {
    url,
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve()
        child.once("exit", () => resolve())
        child.kill("SIGKILL")
      })
  }
}

/** A fresh temporary directory. */
export const tempDir = (prefix = "jobs-test-"): string => fs.mkdtempSync(path.join(os.tmpdir(), prefix))

/** Root of the test-jobs fixture plugin. */
export const FIXTURE_PLUGIN = path.resolve(import.meta.dirname, "../../plugins/jobs/fixtures/test-jobs")

/** Limits small enough for tests (seconds). */
export const fastLimits = {
  worker_timeout_s: 5,
  queue_timeout_s: 60,
  backoff_base_s: 0.05,
  backoff_cap_s: 1,
  sweep_interval_s: 0.1,
  worker_concurrency: 4
}

/** Options of `platformYaml`. */
export interface YamlOptions {
  readonly backend: "embedded" | "redis"
  readonly dataDir: string
  readonly redisUrl?: string
  readonly prefix?: string
  readonly limits?: Record<string, number | ReadonlyArray<string>>
  readonly workers?: boolean
  /** `worker_thread` (redis: workers in a thread of the serving process); the default when absent. */
  readonly workerThread?: boolean
  /** Extra YAML under `plugins:` (indented two spaces). */
  readonly extra?: string
  readonly filesKey?: string
  readonly lockS?: number
}

/** A platform.yaml with listener `jobs` on an ephemeral port, plugin `jobs` and the fixture job types. */
export const platformYaml = (o: YamlOptions): string => {
  const limits = { ...fastLimits, ...o.limits }
  const lim = Object.entries(limits).map(([k, v]) => `      ${k}: ${JSON.stringify(v)}`).join("\n")
  return `data_dir: ${o.dataDir}
log: { level: warning, format: json }
listeners:
  - { name: jobs, host: 127.0.0.1, port: 0 }
plugins:
  jobs:
    backend: ${o.backend}
    workers: ${o.workers ?? true}
${o.workerThread === undefined ? "" : `    worker_thread: ${o.workerThread}\n`}    events_heartbeat_s: 1
    limits:
${lim}
${o.redisUrl ? `    redis: { url: "${o.redisUrl}", prefix: "${o.prefix ?? "t"}", lock_s: ${o.lockS ?? 2} }\n` : ""}    files:
      backend: local
${o.filesKey ? `      api_key: "${o.filesKey}"\n` : ""}  test-jobs:
    module: ${FIXTURE_PLUGIN}
${o.extra ?? ""}`
}

/** A tiny client of the Jobs API at `base` (`http://127.0.0.1:port`). */
export const jobsClient = (base: string) => {
  const call = async (method: string, p: string, body?: unknown) => {
    const r = await fetch(`${base}${p}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body)
    })
    const text = await r.text()
    let json: any
    try {
      json = JSON.parse(text)
    } catch {
      json = text
    }
    return { status: r.status, body: json }
  }
  const client = {
    call,
    submit: (type: string, payload: unknown) => call("POST", `/api/v1/jobs/${type}`, payload),
    get: async (id: string): Promise<Job> => (await call("GET", `/api/v1/jobs/${id}`)).body as Job,
    cancel: (id: string) => call("DELETE", `/api/v1/jobs/${id}`),
    list: (qs = "") => call("GET", `/api/v1/jobs${qs ? `?${qs}` : ""}`),
    /** Polls GET until `pred` holds (default: terminal); rejects after `timeoutMs`. */
    waitFor: async (id: string, pred: (j: Job) => boolean = (j) => ["COMPLETED", "FAILED", "CANCELLED"].includes(j.status), timeoutMs = 60_000): Promise<Job> => {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const j = await client.get(id)
        if (pred(j)) return j
        if (Date.now() > deadline) throw new Error(`job ${id} stuck: ${JSON.stringify(j)}`)
        await new Promise((r) => setTimeout(r, 20))
      }
    }
  }
  return client
}
