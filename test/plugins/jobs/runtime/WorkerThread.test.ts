/**
 * Workers of `platform serve` in a worker thread (redis backend, `worker_thread: true`, the
 * default): the real kernel, a private redis-server, the fixture job types.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Kernel from "../../../../core/Kernel.ts"
import { ROOT, startPlatform } from "../../../../core/Kernel.ts"
import * as Workers from "../../../../plugins/jobs/Workers.ts"
import { startWorkerThread } from "../../../../plugins/jobs/runtime/WorkerThread.ts"
import { jobsClient, platformYaml, startRedis, tempDir, type TestRedis } from "../support.ts"

let redis: TestRedis
beforeAll(async () => {
  redis = await startRedis()
})
afterAll(async () => {
  await redis?.stop()
})

/** Lines `<pid> <attempt> <thread id>` the echo job wrote to `marker`. */
const runs = (marker: string) => fs.readFileSync(marker, "utf8").trim().split("\n").map((l) => l.split(" ").map(Number))

/** Milliseconds one GET takes. */
const timed = async (url: string): Promise<number> => {
  const t0 = performance.now()
  await (await fetch(url)).text()
  return performance.now() - t0
}

const waitForFile = async (file: string, timeoutMs = 10_000) => {
  const deadline = Date.now() + timeoutMs
  while (!fs.existsSync(file)) {
    if (Date.now() > deadline) throw new Error(`${file} never appeared`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

describe("workers in a worker thread (redis)", () => {
  it("run in a thread of the serving process: a handler blocking its event loop for 2 s does not hold up the API", async () => {
    const platform = await startPlatform({ cwd: ROOT, yaml: platformYaml({ backend: "redis", dataDir: tempDir(), redisUrl: redis.url, prefix: "wt1" }) })
    const base = platform.url("jobs")
    const api = jobsClient(base)
    try {
      const marker = path.join(tempDir(), "marker")
      const r = await api.submit("echo", { value: "busy", busy_ms: 2_000, marker })
      expect(r.status).toBe(202)
      await waitForFile(marker)
      const [[pid, attempt, thread]] = runs(marker) as [[number, number, number]]
      expect(pid).toBe(process.pid)
      expect(attempt).toBe(1)
      // Not the main thread (with `worker_thread: false` the handler would spin this test's own
      // event loop, which serves the API too: nothing here would run until it ended).
      expect(thread).toBeGreaterThan(0)
      // The handler spins for 2 s; the API answers meanwhile.
      const slowest = Math.max(...(await Promise.all([1, 2, 3].map(() => timed(`${base}/api/v1/jobs/${r.body.job_id}`)))))
      expect(slowest).toBeLessThan(1_000)
      expect((await api.get(r.body.job_id)).status).toBe("PROCESSING")
      const j = await api.waitFor(r.body.job_id)
      expect(j).toMatchObject({ status: "COMPLETED", result: { value: "busy", attempt: 1 } })
      // Files written in the thread carry the API's address.
      const f = await api.waitFor((await api.submit("echo", { value: "f", file: true })).body.job_id)
      expect((f.result as { file_url: string }).file_url.startsWith(`${base}/files/`)).toBe(true)
    } finally {
      await platform.stop()
    }
  }, 30_000)

  it("stopping the platform hands a running job back (attempt counted); the next start completes it", async () => {
    const yaml = () => platformYaml({ backend: "redis", dataDir: tempDir(), redisUrl: redis.url, prefix: "wt3" })
    const first = await startPlatform({ cwd: ROOT, yaml: yaml() })
    const api = jobsClient(first.url("jobs"))
    const marker = path.join(tempDir(), "marker")
    const r = await api.submit("echo", { value: "survivor", sleep_ms: 4_000, marker })
    await waitForFile(marker)
    await first.stop()
    const second = await startPlatform({ cwd: ROOT, yaml: yaml() })
    try {
      const api2 = jobsClient(second.url("jobs"))
      // A redis worker thread takes 10-20 s to boot on a loaded 2-core machine (3 s when quiet).
      const j = await api2.waitFor(r.body.job_id, undefined, 40_000)
      expect(j).toMatchObject({ status: "COMPLETED", attempts: 2, result: { value: "survivor", attempt: 2 } })
      expect(j.history.some((h) => h.error === "worker shut down during the attempt")).toBe(true)
      expect(runs(marker).map((l) => l[1])).toEqual([1, 2])
    } finally {
      await second.stop()
    }
  }, 60_000)

  it("startWorkerThread rejects with the worker-role boot error of the config", async () => {
    const dir = tempDir()
    const text = `data_dir: ${dir}\nlog: { level: none }\nlisteners:\n  - { name: jobs, host: 127.0.0.1, port: 0 }\nplugins:\n  jobs:\n    backend: embedded\n`
    await expect(startWorkerThread({ file: path.join(dir, "platform.yaml"), text })).rejects.toThrow(/needs plugins.jobs.backend: redis/)
  }, 30_000)

  it("a workers-only process boots jobs and the plugins extending it, none other, and serves nothing", async () => {
    const F = path.join(ROOT, "test/fixtures/plugins")
    const yaml = platformYaml({ backend: "redis", dataDir: tempDir(), redisUrl: redis.url, prefix: "wt4", extra: `  route-a:\n    module: ${F}/route-a\n    listener: jobs\n` })
    const loaded = await Kernel.readConfig({ cwd: ROOT, yaml })
    const running = await Kernel.run(loaded, Workers.layer(loaded), (kernel) => ({ plugins: kernel.plugins.map((p) => p.name), listeners: kernel.listeners.size, jobTypes: Workers.jobTypesOf(kernel) }))
    try {
      expect(running.value).toEqual({ plugins: ["jobs", "test-jobs"], listeners: 0, jobTypes: ["echo", "fetch", "trivial", "bad-result"] })
    } finally {
      await running.stop()
    }
  }, 30_000)
})
