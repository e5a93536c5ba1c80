/**
 * Jobs throughput: trivial jobs submitted over HTTP to the real platform (kernel + `jobs` plugin)
 * and run to COMPLETED, on the embedded and the redis backend, next to raw BullMQ (`queue.add`
 * + `Worker`, no HTTP, no job records) on the same private redis-server in the same run.
 *
 * Both sides are measured the same way: the producer (autocannon as HTTP client, or BullMQ
 * `queue.add` caller) runs in a worker thread with 32 requests in flight, the consumer (the platform, or the raw
 * BullMQ Worker) in the main thread with the same worker concurrency; the figure is jobs per
 * second from the first submit to the last completion, after a 50-job warm-up.
 *
 * Each figure is the best of `JOBS_BENCH_ROUNDS` (default 2) interleaved rounds.
 *
 * Figures: `embedded_jobs_per_s`, `redis_jobs_per_s` (the default `platform serve`: workers in a
 * worker thread of the API process), `redis_api_thread_jobs_per_s` (`worker_thread: false`:
 * workers on the API's event loop), `redis_separate_worker_jobs_per_s` (API process without
 * workers plus one `platform worker` process, the deployment `platform worker` is for),
 * `raw_bullmq_jobs_per_s`,
 * `redis_vs_raw_bullmq` (target >= 0.5), and `http_floor_req_per_s`: the same producer posting
 * to an unknown job type (404, nothing recorded), i.e. what the listener alone sustains, with
 * `redis_vs_http_floor`; `redis_submitted_per_s` (the submissions alone); and `*_cpu_ms_per_job`:
 * CPU time per job of this process (all threads, producer included), the `platform worker`
 * process where there is one, and the redis-server, which the machine's other load does not
 * inflate, with the redis-server's share as `*redis_server_cpu_ms_per_job`. `JOBS_BENCH_N` sets the job count (default 3000),
 * `JOBS_BENCH_CONCURRENCY` the worker concurrency (default 4, the spec's WORKER_CONCURRENCY).
 * `sends_per_1000_submits_*`: how many sends 1000 independent submissions in one turn cost through
 * our `TurnBatch` and through Effect's `RequestResolver` (see `coalescing`).
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { Worker as Thread } from "node:worker_threads"
import { Worker } from "bullmq"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Request from "effect/Request"
import * as RequestResolver from "effect/RequestResolver"
import { Redis } from "ioredis"
import { ROOT, startPlatform } from "../core/Kernel.ts"
import { TurnBatch } from "../plugins/jobs/runtime/TurnBatch.ts"
import { platformYaml, startRedis, tempDir } from "../test/plugins/jobs/support.ts"

const N = Number(process.env.JOBS_BENCH_N ?? 3000)
const CONCURRENCY = Number(process.env.JOBS_BENCH_CONCURRENCY ?? 4)
const IN_FLIGHT = 32
const ROUNDS = Number(process.env.JOBS_BENCH_ROUNDS ?? 2)
/** `JOBS_BENCH_ONLY=redis` skips the embedded backend (quicker comparisons while tuning). */
const ONLY_REDIS = process.env.JOBS_BENCH_ONLY === "redis"
const WARMUP = 50

// The BullMQ producer thread: plain JS (no TypeScript loader in threads), CommonJS `require`.
const BULLMQ_PRODUCER = `
const { workerData, parentPort } = require("node:worker_threads")
const { Queue } = require(${JSON.stringify(cjsPath("bullmq", "dist/cjs/index.js"))})
const { url, width } = workerData
const q = new Queue("raw", { connection: { url }, prefix: "benchraw" })
const add = () => q.add("job", {}, { removeOnComplete: true })
parentPort.on("message", async (count) => {
  let next = 0
  await Promise.all(Array.from({ length: width }, async () => { while (next++ < count) await add() }))
  parentPort.postMessage("")
})
`

/** The absolute path of `file` in package `pkg` (for `require` in eval'd worker threads). */
function cjsPath(pkg: string, file: string): string {
  return path.join(ROOT, "node_modules", pkg, file)
}

/**
 * CPU milliseconds used so far by this process (all threads, plus process `workerPid` when given)
 * and by the redis-server.
 */
const cpuMs = async (redisUrl: string, workerPid?: number): Promise<{ node: number; redis: number }> => {
  const r = new Redis(redisUrl)
  const info = await r.info("cpu")
  r.disconnect()
  const f = (k: string) => Number(new RegExp(`${k}:([0-9.]+)`).exec(info)?.[1] ?? 0)
  const u = process.cpuUsage()
  return { node: (u.user + u.system) / 1000 + (workerPid ? procCpuMs(workerPid) : 0), redis: (f("used_cpu_user") + f("used_cpu_sys")) * 1000 }
}

/** CPU milliseconds of process `pid` so far (Linux /proc, clock ticks of 10 ms). */
const procCpuMs = (pid: number): number => {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/** CPU per job between two `cpuMs` readings. */
const perJob = (a: { node: number; redis: number }, b: { node: number; redis: number }) => ({
  cpuMs: (b.node - a.node + b.redis - a.redis) / N,
  redisCpuMs: (b.redis - a.redis) / N
})

/** A measurement: jobs per second and CPU milliseconds per job (this process + redis-server). */
interface Rate {
  readonly perS: number
  readonly cpuMs: number
  /** The redis-server's share of `cpuMs`. */
  readonly redisCpuMs: number
  /** Submissions per second (all accepted; the rest of the run is the backlog draining). */
  readonly submitPerS?: number
}

/** A producer: `run(k)` submits k jobs and resolves when all were accepted; `stop` releases it. */
interface Producer {
  readonly run: (k: number) => Promise<void>
  readonly stop: () => Promise<void>
}

// The HTTP producer thread: autocannon, loaded once, run once per batch.
const HTTP_PRODUCER = `
const { workerData, parentPort } = require("node:worker_threads")
const autocannon = require(${JSON.stringify(cjsPath("autocannon", "autocannon.js"))})
const { url, width, expect } = workerData
parentPort.on("message", (amount) => {
  // Done when the last answer arrives: autocannon's own "done" waits for its next 1-s sample tick.
  // One answer per batch: "" or the first error.
  let answered = 0
  let bad = 0
  let over = false
  const finish = (m) => {
    if (over) return
    over = true
    instance.stop()
    parentPort.postMessage(m)
  }
  const instance = autocannon({ url, method: "POST", headers: { "content-type": "application/json" }, body: "{}", connections: width, amount })
  instance.on("response", (client, status) => {
    if (status !== expect) bad++
    if (++answered === amount) finish(bad === 0 ? "" : bad + " of " + amount + " not answered " + expect)
  })
  instance.on("reqError", (e) => finish("request error: " + e.message))
})
`

/**
 * POSTs `{}` to `url` from autocannon in a worker thread (`IN_FLIGHT` keep-alive connections, one
 * request in flight on each); rejects unless every answer has status `expect`. autocannon, not
 * node:http's client: on this 2-core machine the load generator shares the CPU with the platform,
 * and node:http's client cost several times the server's CPU per request (floor 6,400-7,900
 * req/s with it; 14,500-17,000 with autocannon).
 */
const httpProducer = (url: string, expect = 202): Producer => thread(HTTP_PRODUCER, { url, width: IN_FLIGHT, expect })

/** A producer thread running `source`: each batch size posted to it is answered with "" or an error. */
const thread = (source: string, workerData: unknown): Producer => {
  const t = new Thread(source, { eval: true, workerData })
  return {
    run: (k) =>
      new Promise<void>((resolve, reject) => {
        t.once("message", (m: string) => (m === "" ? resolve() : reject(new Error(`submit: ${m}`))))
        t.once("error", reject)
        t.postMessage(k)
      }),
    stop: async () => {
      await t.terminate()
    }
  }
}

/** `queue.add` of BullMQ itself, `IN_FLIGHT` at once, in a worker thread. */
const bullmqProducer = (url: string): Producer => thread(BULLMQ_PRODUCER, { url, width: IN_FLIGHT })

/**
 * The listener's own ceiling: POSTs to an unknown job type (404, nothing recorded or queued) through
 * the same kernel route, with the same producer. No backend can submit faster than this.
 */
const httpFloor = async (): Promise<number> => {
  const platform = await startPlatform({ cwd: ROOT, yaml: platformYaml({ backend: "embedded", dataDir: tempDir("jobs-bench-"), workers: false }) })
  const p = httpProducer(`${platform.url("jobs")}/api/v1/jobs/no-such-type`, 404)
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
 * `pid` lets the CPU figures include its CPU time.
 */
const workerProcess = async (yaml: string): Promise<{ pid: number; stop: () => Promise<void> }> => {
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
    pid: child.pid!,
    stop: () => new Promise<void>((resolve) => {
      child.once("exit", () => resolve())
      child.kill("SIGTERM")
    })
  }
}

/**
 * Submits through the platform's Jobs API. `separateWorker`: workers in a `platform worker`
 * process, none in the API process; `workerThread: false`: workers on the API's event loop.
 */
const platformRun = async (backend: "embedded" | "redis", redisUrl: string, separateWorker = false, workerThread = true): Promise<Rate> => {
  const yaml = (workers: boolean) => platformYaml({
    backend,
    dataDir: tempDir("jobs-bench-"),
    redisUrl,
    prefix,
    workers,
    workerThread,
    limits: { worker_concurrency: CONCURRENCY, sweep_interval_s: 5 }
  })
  const prefix = `bench${backend}${Date.now()}`
  const platform = await startPlatform({ cwd: ROOT, yaml: yaml(!separateWorker) })
  const worker = separateWorker ? await workerProcess(yaml(true)) : undefined
  const base = platform.url("jobs")
  const p = httpProducer(`${base}/api/v1/jobs/trivial`)
  try {
    // Completion is polled cheaply: the count of jobs not yet ended.
    const pending = async () => {
      const r = await fetch(`${base}/api/v1/jobs?status=PENDING,QUEUED,PROCESSING&limit=1`)
      return ((await r.json()) as { total: number }).total
    }
    const drain = async () => {
      while ((await pending()) > 0) await new Promise((r) => setTimeout(r, 5))
    }
    await p.run(WARMUP)
    await drain()
    const c0 = await cpuMs(redisUrl, worker?.pid)
    const t0 = performance.now()
    await p.run(N)
    const submitS = (performance.now() - t0) / 1000
    await drain()
    const rate = { perS: N / ((performance.now() - t0) / 1000), submitPerS: N / submitS, ...perJob(c0, await cpuMs(redisUrl, worker?.pid)) }
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
  const p = bullmqProducer(redisUrl)
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
    return { perS: N / ((performance.now() - t0) / 1000), ...perJob(c0, await cpuMs(redisUrl)) }
  } finally {
    await p.stop()
    await worker.close()
    wconn.disconnect()
  }
}

/**
 * Why the redis backend batches with its own `TurnBatch` rather than Effect's `RequestResolver`:
 * `SUBMITS` submissions arriving as independent requests (each its own fiber or `runPromise`, as
 * HTTP handlers are) in one turn of the event loop, counted as the sends each batcher makes.
 * `RequestResolver.makeBatched` batches only the requests of one fiber's `Effect.all`/`forEach`
 * with batching, so independent handlers each make their own send; `TurnBatch` coalesces the turn.
 */
export const coalescing = async (): Promise<{ turnBatch: number; requestResolver: number; requestResolverForked: number }> => {
  const SUBMITS = 1000
  let sends = 0
  const Submit = Request.tagged<Request.Request<number> & { readonly _tag: "Submit"; readonly n: number }>("Submit")
  const resolver = RequestResolver.makeBatched((reqs: ReadonlyArray<ReturnType<typeof Submit>>) => {
    sends++
    return Effect.forEach(reqs, (r) => Request.succeed(r, r.n), { discard: true })
  })
  await Promise.all(Array.from({ length: SUBMITS }, (_, n) => Effect.runPromise(Effect.request(Submit({ n }), resolver))))
  const requestResolver = sends
  sends = 0
  await Effect.runPromise(Effect.forEach(Array.from({ length: SUBMITS }, (_, n) => n), (n) => Effect.fork(Effect.request(Submit({ n }), resolver))).pipe(
    Effect.flatMap(Fiber.joinAll)
  ))
  const requestResolverForked = sends
  sends = 0
  const batch = new TurnBatch<number, number>(SUBMITS, async (items) => {
    sends++
    return items
  })
  await Promise.all(Array.from({ length: SUBMITS }, (_, n) => batch.push(n)))
  return { turnBatch: sends, requestResolver, requestResolverForked }
}

/** Runs the three measurements; prints and returns the figures (jobs/s, rounded). */
export async function benchJobs(): Promise<Record<string, number>> {
  const redis = await startRedis()
  try {
    // Interleaved rounds, best of each: other load on the machine hits all three alike.
    const best = (a: Rate, b: Rate): Rate => (b.perS > a.perS ? b : a)
    let raw: Rate = { perS: 0, cpuMs: 0, redisCpuMs: 0 }
    let embedded: Rate = { perS: 0, cpuMs: 0, redisCpuMs: 0 }
    let viaRedis: Rate = { perS: 0, cpuMs: 0, redisCpuMs: 0 }
    let separate: Rate = { perS: 0, cpuMs: 0, redisCpuMs: 0 }
    let apiThread: Rate = { perS: 0, cpuMs: 0, redisCpuMs: 0 }
    let floor = 0
    for (let round = 0; round < ROUNDS; round++) {
      raw = best(raw, await rawBullmq(redis.url))
      floor = Math.max(floor, await httpFloor())
      if (!ONLY_REDIS) embedded = best(embedded, await platformRun("embedded", redis.url))
      viaRedis = best(viaRedis, await platformRun("redis", redis.url))
      if (!ONLY_REDIS) separate = best(separate, await platformRun("redis", redis.url, true))
      if (!ONLY_REDIS) apiThread = best(apiThread, await platformRun("redis", redis.url, false, false))
    }
    const ms = (x: number) => Math.round(x * 1000) / 1000
    const coalesced = await coalescing()
    const figures = {
      jobs: N,
      worker_concurrency: CONCURRENCY,
      embedded_jobs_per_s: Math.round(embedded.perS),
      redis_jobs_per_s: Math.round(viaRedis.perS),
      redis_api_thread_jobs_per_s: Math.round(apiThread.perS),
      redis_separate_worker_jobs_per_s: Math.round(separate.perS),
      redis_submitted_per_s: Math.round(viaRedis.submitPerS ?? 0),
      raw_bullmq_jobs_per_s: Math.round(raw.perS),
      http_floor_req_per_s: Math.round(floor),
      redis_vs_raw_bullmq: Math.round((viaRedis.perS / raw.perS) * 100) / 100,
      redis_vs_http_floor: Math.round((viaRedis.perS / floor) * 100) / 100,
      redis_api_thread_vs_raw_bullmq: Math.round((apiThread.perS / raw.perS) * 100) / 100,
      redis_separate_worker_vs_raw_bullmq: Math.round((separate.perS / raw.perS) * 100) / 100,
      embedded_cpu_ms_per_job: ms(embedded.cpuMs),
      redis_cpu_ms_per_job: ms(viaRedis.cpuMs),
      raw_bullmq_cpu_ms_per_job: ms(raw.cpuMs),
      redis_separate_worker_cpu_ms_per_job: ms(separate.cpuMs),
      redis_server_cpu_ms_per_job: ms(viaRedis.redisCpuMs),
      raw_bullmq_redis_server_cpu_ms_per_job: ms(raw.redisCpuMs),
      sends_per_1000_submits_turn_batch: coalesced.turnBatch,
      sends_per_1000_submits_request_resolver: coalesced.requestResolver,
      sends_per_1000_submits_request_resolver_forked: coalesced.requestResolverForked
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
