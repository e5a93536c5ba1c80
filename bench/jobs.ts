/**
 * Jobs throughput: trivial jobs submitted over HTTP to the real platform (kernel + `jobs` plugin)
 * and run to COMPLETED, on the embedded and the redis backend, next to raw BullMQ (`queue.add`
 * + `Worker`, no HTTP, no job records) on the same private redis-server in the same run.
 *
 * Both sides are measured the same way: the producer (HTTP client, or BullMQ `queue.add` caller)
 * runs in a worker thread with 32 requests in flight, the consumer (the platform, or the raw
 * BullMQ Worker) in the main thread with the same worker concurrency; the figure is jobs per
 * second from the first submit to the last completion, after a 50-job warm-up.
 *
 * Each figure is the best of `JOBS_BENCH_ROUNDS` (default 2) interleaved rounds.
 *
 * Figures: `embedded_jobs_per_s`, `redis_jobs_per_s` (workers in the API process),
 * `redis_separate_worker_jobs_per_s` (API process without workers plus one `platform worker`
 * process, the deployment `platform worker` is for), `raw_bullmq_jobs_per_s`,
 * `redis_vs_raw_bullmq` (target >= 0.5), and `http_floor_req_per_s`: the same producer posting
 * to an unknown job type (404, nothing recorded), i.e. what the listener alone sustains, with
 * `redis_vs_http_floor`; and `*_cpu_ms_per_job`: CPU time per job of this process (all threads,
 * producer included) plus the redis-server, which the machine's other load does not inflate. `JOBS_BENCH_N` sets the job count (default 3000),
 * `JOBS_BENCH_CONCURRENCY` the worker concurrency (default 4, the spec's WORKER_CONCURRENCY).
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { Worker as Thread } from "node:worker_threads"
import { Worker } from "bullmq"
import { Redis } from "ioredis"
import { ROOT, startPlatform } from "../core/Kernel.ts"
import { platformYaml, startRedis, tempDir } from "../test/core/jobs/support.ts"

const N = Number(process.env.JOBS_BENCH_N ?? 3000)
const CONCURRENCY = Number(process.env.JOBS_BENCH_CONCURRENCY ?? 4)
const IN_FLIGHT = 32
const ROUNDS = Number(process.env.JOBS_BENCH_ROUNDS ?? 2)
/** `JOBS_BENCH_ONLY=redis` skips the embedded backend (quicker comparisons while tuning). */
const ONLY_REDIS = process.env.JOBS_BENCH_ONLY === "redis"
const WARMUP = 50

// The producer thread: plain JS (no TypeScript loader in threads), CommonJS `require` for bullmq.
const PRODUCER = `
const { workerData, parentPort } = require("node:worker_threads")
const { kind, url, n, width, expect } = workerData
let add
let close = async () => {}
if (kind === "http") {
  // node:http with keep-alive: undici's fetch costs several times more CPU per request.
  const http = require("node:http")
  const agent = new http.Agent({ keepAlive: true, maxSockets: width })
  add = () => new Promise((resolve, reject) => {
    const req = http.request(url, { agent, method: "POST", headers: { "content-type": "application/json", "content-length": 2 } }, (res) => {
      if (res.statusCode !== expect) reject(new Error("submit: HTTP " + res.statusCode))
      res.resume()
      res.on("end", resolve)
    })
    req.on("error", reject)
    req.end("{}")
  })
} else {
  const { Queue } = require(${JSON.stringify(require_resolve("bullmq"))})
  const q = new Queue("raw", { connection: { url }, prefix: "benchraw" })
  add = () => q.add("job", {}, { removeOnComplete: true })
  close = () => q.close()
}
const pool = async (count) => {
  let next = 0
  await Promise.all(Array.from({ length: width }, async () => { while (next++ < count) await add() }))
}
parentPort.on("message", async (m) => {
  await pool(m)
  parentPort.postMessage("done")
  if (m === n) { await close(); process.exit(0) }
})
`

function require_resolve(m: string): string {
  return (import.meta as unknown as { resolve: (s: string) => string }).resolve(m).replace(/^file:\/\//, "").replace(/\/esm\/.*$/, "/cjs/index.js")
}

/** CPU milliseconds used so far by this process (all threads) and by the redis-server. */
const cpuMs = async (redisUrl: string): Promise<number> => {
  const r = new Redis(redisUrl)
  const info = await r.info("cpu")
  r.disconnect()
  const f = (k: string) => Number(new RegExp(`${k}:([0-9.]+)`).exec(info)?.[1] ?? 0)
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000 + (f("used_cpu_user") + f("used_cpu_sys")) * 1000
}

/** A measurement: jobs per second and CPU milliseconds per job (this process + redis-server). */
interface Rate {
  readonly perS: number
  readonly cpuMs: number
}

/** A producer thread; `run(k)` submits k jobs and resolves when all were accepted. */
const producer = (kind: "http" | "bullmq", url: string, expect = 202) => {
  const t = new Thread(PRODUCER, { eval: true, workerData: { kind, url, n: N, width: IN_FLIGHT, expect } })
  return {
    run: (k: number) =>
      new Promise<void>((resolve, reject) => {
        t.once("message", () => resolve())
        t.once("error", reject)
        t.postMessage(k)
      }),
    stop: () => t.terminate()
  }
}

/**
 * The listener's own ceiling: POSTs to an unknown job type (404, nothing recorded or queued) through
 * the same kernel route, with the same producer. No backend can submit faster than this.
 */
const httpFloor = async (): Promise<number> => {
  const platform = await startPlatform({ cwd: ROOT, yaml: platformYaml({ backend: "embedded", dataDir: tempDir("jobs-bench-"), workers: false }) })
  const p = producer("http", `${platform.url("jobs")}/api/v1/jobs/no-such-type`, 404)
  try {
    await p.run(WARMUP)
    const t0 = performance.now()
    await p.run(N)
    return N / ((performance.now() - t0) / 1000)
  } finally {
    await p.stop()
    await platform.stop()
  }
}

/**
 * Starts `platform worker -c <yaml>` (the real CLI) and resolves once it consumes; `stop` ends it.
 * Its CPU is not in the process figures (CPU per job is reported for in-process runs only).
 */
const workerProcess = async (yaml: string): Promise<{ stop: () => Promise<void> }> => {
  const file = path.join(tempDir("jobs-bench-"), "platform.yaml")
  fs.writeFileSync(file, yaml)
  const child = spawn(process.execPath, [path.join(ROOT, "bin", "platform.js"), "worker", "--config", file], { stdio: ["ignore", "ignore", "pipe"] })
  await new Promise<void>((resolve, reject) => {
    let err = ""
    child.stderr!.on("data", (d) => {
      err += d
      if (err.includes("running job types")) resolve()
    })
    child.once("exit", (code) => reject(new Error(`platform worker exited ${code}: ${err}`)))
  })
  return {
    stop: () => new Promise<void>((resolve) => {
      child.once("exit", () => resolve())
      child.kill("SIGTERM")
    })
  }
}

/** Submits through the platform's Jobs API; `separateWorker`: workers in a `platform worker` process, none in the API process. */
const platformRun = async (backend: "embedded" | "redis", redisUrl: string, separateWorker = false): Promise<Rate> => {
  const yaml = (workers: boolean) => platformYaml({
    backend,
    dataDir: tempDir("jobs-bench-"),
    redisUrl,
    prefix,
    workers,
    limits: { worker_concurrency: CONCURRENCY, sweep_interval_s: 5 }
  })
  const prefix = `bench${backend}${Date.now()}`
  const platform = await startPlatform({ cwd: ROOT, yaml: yaml(!separateWorker) })
  const worker = separateWorker ? await workerProcess(yaml(true)) : undefined
  const base = platform.url("jobs")
  const p = producer("http", `${base}/api/v1/jobs/trivial`)
  try {
    // Completion is polled cheaply: the count of jobs not yet ended.
    const pending = async () => {
      const r = await fetch(`${base}/api/v1/jobs?status=PENDING,QUEUED,PROCESSING&limit=1`)
      return ((await r.json()) as { total: number }).total
    }
    const drain = async () => {
      while ((await pending()) > 0) await new Promise((r) => setTimeout(r, 50))
    }
    await p.run(WARMUP)
    await drain()
    const c0 = await cpuMs(redisUrl)
    const t0 = performance.now()
    await p.run(N)
    await drain()
    const rate = { perS: N / ((performance.now() - t0) / 1000), cpuMs: ((await cpuMs(redisUrl)) - c0) / N }
    const done = await fetch(`${base}/api/v1/jobs?status=COMPLETED&limit=1`)
    const total = ((await done.json()) as { total: number }).total
    if (total !== N + WARMUP) throw new Error(`${backend}: ${total} of ${N + WARMUP} jobs COMPLETED`)
    return rate
  } finally {
    await p.stop()
    await worker?.stop()
    await platform.stop()
  }
}

const rawBullmq = async (redisUrl: string): Promise<Rate> => {
  const wconn = new Redis(redisUrl, { maxRetriesPerRequest: null })
  let completed = 0
  let target = WARMUP
  let onTarget: () => void = () => {}
  const worker = new Worker("raw", async () => ({}), { connection: wconn, prefix: "benchraw", concurrency: CONCURRENCY, removeOnComplete: { count: 0 } })
  worker.on("completed", () => {
    if (++completed === target) onTarget()
  })
  const p = producer("bullmq", redisUrl)
  try {
    await worker.waitUntilReady()
    const reach = (t: number) => new Promise<void>((r) => {
      target = t
      onTarget = r
      if (completed >= t) r()
    })
    const warm = reach(WARMUP)
    await p.run(WARMUP)
    await warm
    const c0 = await cpuMs(redisUrl)
    const t0 = performance.now()
    const all = reach(WARMUP + N)
    await p.run(N)
    await all
    return { perS: N / ((performance.now() - t0) / 1000), cpuMs: ((await cpuMs(redisUrl)) - c0) / N }
  } finally {
    await p.stop()
    await worker.close()
    wconn.disconnect()
  }
}

/** Runs the three measurements; prints and returns the figures (jobs/s, rounded). */
export async function benchJobs(): Promise<Record<string, number>> {
  const redis = await startRedis()
  try {
    // Interleaved rounds, best of each: other load on the machine hits all three alike.
    const best = (a: Rate, b: Rate): Rate => (b.perS > a.perS ? b : a)
    let raw: Rate = { perS: 0, cpuMs: 0 }
    let embedded: Rate = { perS: 0, cpuMs: 0 }
    let viaRedis: Rate = { perS: 0, cpuMs: 0 }
    let separate: Rate = { perS: 0, cpuMs: 0 }
    let floor = 0
    for (let round = 0; round < ROUNDS; round++) {
      raw = best(raw, await rawBullmq(redis.url))
      floor = Math.max(floor, await httpFloor())
      if (!ONLY_REDIS) embedded = best(embedded, await platformRun("embedded", redis.url))
      viaRedis = best(viaRedis, await platformRun("redis", redis.url))
      if (!ONLY_REDIS) separate = best(separate, await platformRun("redis", redis.url, true))
    }
    const ms = (r: Rate) => Math.round(r.cpuMs * 1000) / 1000
    const figures = {
      jobs: N,
      worker_concurrency: CONCURRENCY,
      embedded_jobs_per_s: Math.round(embedded.perS),
      redis_jobs_per_s: Math.round(viaRedis.perS),
      redis_separate_worker_jobs_per_s: Math.round(separate.perS),
      raw_bullmq_jobs_per_s: Math.round(raw.perS),
      http_floor_req_per_s: Math.round(floor),
      redis_vs_raw_bullmq: Math.round((viaRedis.perS / raw.perS) * 100) / 100,
      redis_vs_http_floor: Math.round((viaRedis.perS / floor) * 100) / 100,
      redis_separate_worker_vs_raw_bullmq: Math.round((separate.perS / raw.perS) * 100) / 100,
      embedded_cpu_ms_per_job: ms(embedded),
      redis_cpu_ms_per_job: ms(viaRedis),
      raw_bullmq_cpu_ms_per_job: ms(raw)
    }
    console.log(figures)
    return figures
  } finally {
    await redis.stop()
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchJobs()
  process.exit(0)
}
