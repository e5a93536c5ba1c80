/**
 * Process-level behaviour: a worker process killed mid-job (SIGKILL) loses nothing, its job runs
 * again (attempt counted) and completes; cancel reaches a worker in another process; graceful
 * shutdown hands running jobs back. Children are real `platform serve` / `platform worker`
 * processes (test/plugins/jobs/fixtures/serve.ts) on a private redis-server.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import type { Job } from "../../../plugins/jobs/runtime/Job.ts"
import { jobsClient, platformYaml, startRedis, tempDir, type TestRedis } from "./support.ts"

const SCRIPT = path.join(import.meta.dirname, "fixtures", "serve.ts")
const children: Array<ChildProcess> = []

/**
 * Spawns a child and resolves with what it printed after its ready line: `serve` runs the
 * fixture script (prints `READY <url>`), `worker` runs the real CLI, `platform worker -c FILE`
 * (prints `running job types ...`).
 */
const spawnChild = (yaml: string, role: "serve" | "worker" = "serve"): Promise<{ child: ChildProcess; ready: string }> =>
  new Promise((resolve, reject) => {
    let args = ["--import", "tsx", SCRIPT]
    if (role === "worker") {
      const file = path.join(tempDir(), "platform.yaml")
      fs.writeFileSync(file, yaml)
      args = [path.join(ROOT, "bin", "platform.js"), "worker", "--config", file]
    }
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { ...process.env, JOBS_TEST_YAML: yaml },
      stdio: ["ignore", "pipe", "pipe"]
    })
    children.push(child)
    let out = ""
    const onData = (d: Buffer) => {
      out += d
      const m = /(?:READY|running job types) (.*)\n/.exec(out)
      if (m) resolve({ child, ready: m[1]! })
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.once("exit", (code) => reject(new Error(`child exited ${code}: ${out}`)))
  })

const kill = (c: ChildProcess, signal: NodeJS.Signals = "SIGKILL") =>
  new Promise<void>((resolve) => {
    if (c.exitCode !== null || c.signalCode !== null) return resolve()
    c.once("exit", () => resolve())
    c.kill(signal)
  })


let redis: TestRedis
beforeAll(async () => {
  redis = await startRedis()
})
afterAll(async () => {
  await redis?.stop()
})

const runs = (marker: string) => fs.readFileSync(marker, "utf8").trim().split("\n")

describe("embedded restart", () => {
  it("embedded: a serving process killed mid-job; after restart the job runs again (attempt counted) and completes", async () => {
    const dataDir = tempDir()
    const marker = path.join(dataDir, "marker")
    const yaml = platformYaml({ backend: "embedded", dataDir })
    const first = await spawnChild(yaml)
    const api1 = jobsClient(first.ready)
    const queuedBehind = [] as Array<string>
    const r = await api1.submit("echo", { value: "survivor", sleep_ms: 1200, marker })
    for (let i = 0; i < 6; i++) queuedBehind.push((await api1.submit("echo", { value: `q${i}`, sleep_ms: 400 })).body.job_id)
    await api1.waitFor(r.body.job_id, (j) => j.status === "PROCESSING" && j.progress > 10)
    await kill(first.child)
    const second = await spawnChild(yaml)
    const api2 = jobsClient(second.ready)
    const j = await api2.waitFor(r.body.job_id)
    expect(j).toMatchObject({ status: "COMPLETED", attempts: 2, result: { value: "survivor", attempt: 2 } })
    expect(j.history.map((h) => h.status)).toEqual(["PENDING", "QUEUED", "PROCESSING", "FAILED", "QUEUED", "PROCESSING", "COMPLETED"])
    expect(j.history[3]!.error).toMatch(/lost during attempt 1/)
    expect(runs(marker)).toHaveLength(2)
    for (const id of queuedBehind) expect((await api2.waitFor(id)).status).toBe("COMPLETED")
    expect((await api2.list("job_type=echo")).body.total).toBe(7)
    await kill(second.child)
  })

})

// One API process (no workers) and a chain of `platform worker` processes sharing a Redis:
// each test leaves the next worker running, so the chain costs three CLI starts, not five.
describe("platform worker processes (redis)", () => {
  const prefix = "rw"
  let platform: Awaited<ReturnType<typeof startPlatform>>
  let api: ReturnType<typeof jobsClient>
  let workerYaml: string
  let current: { child: ChildProcess; ready: string }

  beforeAll(async () => {
    platform = await startPlatform({ cwd: ROOT, yaml: platformYaml({ backend: "redis", dataDir: tempDir(), redisUrl: redis.url, prefix, workers: false, lockS: 1 }) })
    api = jobsClient(platform.url("jobs"))
    workerYaml = platformYaml({ backend: "redis", dataDir: tempDir(), redisUrl: redis.url, prefix, lockS: 1 })
    current = await spawnChild(workerYaml, "worker")
    expect(current.ready).toMatch(/echo/)
  })
  afterAll(async () => {
    for (const c of children.splice(0)) await kill(c)
    await platform?.stop()
  })

  it("DELETE in the API process aborts the handler's fetch in the worker process within a second", async () => {
    const closed: Array<number> = []
    let opened = 0
    const server = http.createServer((req) => {
      opened++
      req.socket.on("close", () => closed.push(Date.now()))
    })
    await new Promise<void>((res) => server.listen(0, "127.0.0.1", res))
    try {
      const r = await api.submit("fetch", { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hang` })
      const running = await api.waitFor(r.body.job_id, (j) => j.status === "PROCESSING")
      expect(running.worker).toMatch(new RegExp(`:${current.child.pid}$`))
      while (opened === 0) await new Promise((res) => setTimeout(res, 10))
      const t0 = Date.now()
      expect((await api.cancel(r.body.job_id)).body.status).toBe("CANCELLED")
      while (closed.length === 0 && Date.now() - t0 < 3000) await new Promise((res) => setTimeout(res, 10))
      expect(closed[0]! - t0).toBeLessThan(1000)
      await new Promise((res) => setTimeout(res, 200))
      expect((await api.get(r.body.job_id)).status).toBe("CANCELLED")
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })

  it("a worker stopped gracefully (SIGTERM) hands its running job back; the next worker completes it", async () => {
    const r = await api.submit("echo", { value: "handed back", sleep_ms: 2000 })
    await api.waitFor(r.body.job_id, (j) => j.status === "PROCESSING")
    await kill(current.child, "SIGTERM")
    const back = await api.get(r.body.job_id)
    expect(back.status).toBe("QUEUED")
    expect(back.history.at(-1)).toMatchObject({ status: "QUEUED", error: "worker shut down during the attempt" })
    current = await spawnChild(workerYaml, "worker")
    const j: Job = await api.waitFor(r.body.job_id)
    expect(j).toMatchObject({ status: "COMPLETED", attempts: 2 })
  })

  it("a worker killed mid-job (SIGKILL): another worker picks the job up and completes it, attempt counted", async () => {
    const marker = path.join(tempDir(), "marker")
    const r = await api.submit("echo", { value: "survivor", sleep_ms: 1200, marker })
    const running = await api.waitFor(r.body.job_id, (j) => j.status === "PROCESSING" && j.progress > 10)
    expect(running.worker).toMatch(new RegExp(`:${current.child.pid}$`))
    await kill(current.child)
    current = await spawnChild(workerYaml, "worker")
    const j = await api.waitFor(r.body.job_id, undefined, 20_000)
    expect(j).toMatchObject({ status: "COMPLETED", attempts: 2, result: { attempt: 2 } })
    expect(j.history.map((h) => h.status)).toEqual(["PENDING", "QUEUED", "PROCESSING", "FAILED", "QUEUED", "PROCESSING", "COMPLETED"])
    expect(j.history[3]!.error).toMatch(/lost during attempt 1/)
    expect(j.history.filter((h) => h.status === "PROCESSING").map((h) => h.worker)).toEqual([running.worker, expect.stringMatching(new RegExp(`:${current.child.pid}$`))])
    expect(runs(marker)).toHaveLength(2)
  })
})
