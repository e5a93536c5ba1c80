/**
 * Concurrent runs on the redis jobs backend: 10 graph jobs submitted at once into one workspace,
 * run by two `platform worker` processes (the API process runs none), every run recorded and
 * the counts true: the manifest's recount under the jobs plugin's Redis lock is what makes it
 * hold across processes. The same on the embedded backend (in-process lock, one process).
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import { jobsClient, startRedis, tempDir, type TestRedis } from "../jobs/support.ts"
import { hashTree, workspaceGraph, workspaceYaml } from "./support.ts"

let redis: TestRedis
const children: Array<ChildProcess> = []

/** A `platform worker` process on `file`; resolves once it runs job types. */
const startWorker = (file: string): Promise<ChildProcess> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, "bin", "platform.js"), "worker", "--config", file], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] })
    children.push(child)
    let out = ""
    const onData = (d: Buffer) => {
      out += d
      if (/running job types .*graph/.test(out)) resolve(child)
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.once("exit", (code) => reject(new Error(`worker exited ${code}: ${out}`)))
  })

let platform: Awaited<ReturnType<typeof startPlatform>>
let dataDir: string

// Booting two worker processes takes tens of seconds on a loaded 2-core machine: not the test's time.
beforeAll(async () => {
  redis = await startRedis()
  dataDir = tempDir("ws-redis-")
  const yaml = workspaceYaml({ dataDir, backend: "redis", redisUrl: redis.url, prefix: "wsc", workers: false, concurrency: 5 })
  const file = path.join(dataDir, "platform.yaml")
  fs.writeFileSync(file, yaml.replace("workers: false", "workers: true"))
  platform = await startPlatform({ cwd: ROOT, yaml })
  await Promise.all([startWorker(file), startWorker(file)])
}, 300_000)
afterAll(async () => {
  await platform?.stop()
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) {
      const gone = new Promise((r) => c.once("exit", r))
      c.kill("SIGTERM")
      await gone
    }
  }
  await redis?.stop()
})

describe("concurrent runs on the redis backend", () => {
  it("10 runs landing at once in one workspace from two worker processes: all recorded, counts true", async () => {
    const api = jobsClient(platform.url("jobs"))
    const ws = (await api.call("POST", "/api/v1/workspaces", { name: "Busy", config: { index_enabled: true } })).body
    const submitted = await Promise.all(Array.from({ length: 10 }, (_, i) =>
      api.submit("graph", { graph: workspaceGraph({ name: `run_${i}`, pdfText: `brief ${i}`, synthesis: `synthesis number ${i}`, delayMs: 150 }), workspace_id: ws.workspace_id })))
    const jobs = await Promise.all(submitted.map((r) => api.waitFor(r.body.job_id, undefined, 150_000)))
    expect(jobs.map((j) => [j.status, j.error ?? null])).toEqual(Array(10).fill(["COMPLETED", null]))
    // Both worker processes took part.
    const workers = new Set(jobs.map((j) => j.history.find((h) => h.status === "PROCESSING")?.worker))
    expect(workers.size).toBeGreaterThanOrEqual(2)

    const m = (await api.call("GET", `/api/v1/workspaces/${ws.workspace_id}`)).body
    const runs = (await api.call("GET", `/api/v1/workspaces/${ws.workspace_id}/runs`)).body
    expect(runs.map((r: { run_id: string }) => r.run_id).sort()).toEqual(jobs.map((j) => j.job_id).sort())
    const dir = path.join(dataDir, "jobs", "files", "workspaces", ws.workspace_id)
    const tree = Object.keys(hashTree(dir))
    // Per run: manifest, result, report, 1 screenshot, 3 data files; plus outputs/summary.md.
    expect(tree.filter((k) => /^runs\/[^/]+\/manifest\.json$/.test(k))).toHaveLength(10)
    expect(m).toMatchObject({ status: "active", runs_count: 10, artifact_count: 10 * 6 + 1 })
    expect(m.total_size_bytes).toBe(tree.filter((k) => k !== "manifest.json").reduce((n, k) => n + fs.statSync(path.join(dir, k)).size, 0))
    const summary = fs.readFileSync(path.join(dir, "outputs", "summary.md"), "utf8")
    for (const j of jobs) expect(summary).toContain(j.job_id)
    // Every run's index entries landed too.
    const hit = (await api.call("POST", `/api/v1/workspaces/${ws.workspace_id}/search`, { query: "synthesis number 7", top_k: 1 })).body
    expect(hit.matches[0]).toMatchObject({ run_id: jobs[7]!.job_id })
  }, 180_000)
})

describe("concurrent runs on the embedded backend", () => {
  it("10 runs landing at once in one workspace: all recorded, counts true", async () => {
    const dir = tempDir("ws-embedded-")
    const embedded = await startPlatform({ cwd: ROOT, yaml: workspaceYaml({ dataDir: dir, concurrency: 10 }) })
    try {
      const api = jobsClient(embedded.url("jobs"))
      const ws = (await api.call("POST", "/api/v1/workspaces", { name: "Busy here" })).body
      const submitted = await Promise.all(Array.from({ length: 10 }, (_, i) =>
        api.submit("graph", { graph: workspaceGraph({ name: `run_${i}`, pdfText: `brief ${i}`, synthesis: `synthesis ${i}`, delayMs: 100 }), workspace_id: ws.workspace_id })))
      const jobs = await Promise.all(submitted.map((r) => api.waitFor(r.body.job_id, undefined, 60_000)))
      expect(jobs.map((j) => j.status)).toEqual(Array(10).fill("COMPLETED"))
      const m = (await api.call("GET", `/api/v1/workspaces/${ws.workspace_id}`)).body
      const wsDir = path.join(dir, "jobs", "files", "workspaces", ws.workspace_id)
      const tree = Object.keys(hashTree(wsDir))
      expect(m).toMatchObject({ runs_count: 10, artifact_count: 61 })
      expect(m.total_size_bytes).toBe(tree.filter((k) => k !== "manifest.json").reduce((n, k) => n + fs.statSync(path.join(wsDir, k)).size, 0))
      expect((await api.call("GET", `/api/v1/workspaces/${ws.workspace_id}/runs`)).body).toHaveLength(10)
    } finally {
      await embedded.stop()
    }
  }, 120_000)
})
