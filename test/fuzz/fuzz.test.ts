/**
 * Property-based fuzzing of every route of every listener of the shipped platform.yaml (ports
 * and data directory made private), generated from the OpenAPI documents the listeners serve
 * (see `OpenApiFuzz`). The platform runs in its own process.
 *
 * Invariants: no 5xx except a 503 the operation documents; the process stays up; good work
 * done between the bad requests (jobs submitted, files uploaded) is all there at the end,
 * unchanged; RSS after 1,000 oversize and deeply nested requests within 50 MB of where it
 * started.
 *
 * Budget: `FUZZ_BUDGET_S` seconds of fuzzing in all (default 25, CI), seed `FUZZ_SEED` (fixed
 * default); `npm run fuzz` runs it for 10 minutes with a random seed. Prints the requests sent
 * per route.
 */
import fc from "fast-check"
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT } from "../../core/Kernel.ts"
import { upload } from "../support/http.ts"
import { FIXTURE_PLUGIN, jobsClient, tempDir } from "../plugins/jobs/support.ts"
import { type FuzzRequest, type Operation, operationsOf, requestsOf } from "./OpenApiFuzz.ts"

const BUDGET_MS = Number(process.env.FUZZ_BUDGET_S ?? 25) * 1000
const SEED = Number(process.env.FUZZ_SEED ?? 20261125)
const FILES_KEY = "fuzz-files-key-0123456789"
const GATEWAY_TOKEN = "fuzz-gateway-token-0123456789"

let child: ChildProcess
let urls: Record<string, string>
let exited: string | undefined

/** platform.yaml as shipped, with free ports, a private data directory and the test job types. */
const fuzzConfig = (dir: string): string => {
  const shipped = fs.readFileSync(path.join(ROOT, "platform.yaml"), "utf8")
  return shipped
    .replace(/port: \$\{[A-Z_]+:-\d+\}/g, "port: 0")
    .replace("data_dir: ${PLATFORM_DATA_DIR:-./data}", `data_dir: ${dir}`)
    // Chromium contributes no route; a random valid screenshot job would only make the run slow.
    .replace(/\n  job-browser:\n/, "\n  job-browser:\n    enabled: false\n")
    // A smaller profile inventory (the shipped 12,909 files take seconds to write) and bank
    // frontends on ports of the cluster-vpn tests' range rather than the production 8890-8899.
    .replace(/\n  cluster-vpn:\n/, "\n  cluster-vpn:\n    generate_profiles: 1500\n")
    .replace("from: ${CLUSTER_FRONTEND_FROM:-8890}", "from: 19293").replace("to: ${CLUSTER_FRONTEND_TO:-8899}", "to: 19299")
    .replace("worker_timeout_s: 3600", "worker_timeout_s: 60")
    .replace("worker_concurrency: 4 ", "worker_concurrency: 8 ")
    .replace("      backoff_base_s: 30 ", "      backoff_base_s: 1 ") +
    `  test-jobs:\n    module: ${FIXTURE_PLUGIN}\n`
}

const rssMb = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024

beforeAll(async () => {
  const dir = tempDir("fuzz-")
  const file = path.join(dir, "platform.yaml")
  fs.writeFileSync(file, fuzzConfig(dir))
  child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "test/fuzz/serve-child.ts"), file], {
    cwd: ROOT,
    env: { ...process.env, PLATFORM_LOG_LEVEL: "error", FILES_API_KEY: FILES_KEY, GATEWAY_TOKEN, CHIP_SIM_NETLIST: path.resolve(ROOT, "../shared/chip-sim/netlist") },
    stdio: ["ignore", "pipe", "inherit"]
  })
  child.once("exit", (code, signal) => (exited = `exited with ${code ?? signal}`))
  urls = await new Promise((resolve, reject) => {
    let out = ""
    const t = setTimeout(() => reject(new Error(`platform did not start: ${out}`)), 180_000)
    child.stdout!.on("data", (d) => {
      out += d
      const m = /READY (.+)\n/.exec(out)
      if (m) {
        clearTimeout(t)
        resolve(JSON.parse(m[1]!))
      }
    })
    child.once("exit", () => reject(new Error(`platform exited while starting: ${out}`)))
  })
}, 200_000)

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill("SIGTERM")
    await new Promise((r) => child.once("exit", r))
  }
})

/** Socket resets met on a reused keep-alive connection (the HTTP/1.1 race with the server's idle close), retried once. */
let resets = 0

const send = async (base: string, r: FuzzRequest, retried = false): Promise<number> => {
  try {
    const res = await fetch(base + r.path, { method: r.method, headers: r.headers, body: r.body, signal: AbortSignal.timeout(30_000) })
    await res.arrayBuffer()
    return res.status
  } catch (e) {
    const code = (e as { cause?: { code?: string } }).cause?.code
    if (retried || !(code === "ECONNRESET" || code === "UND_ERR_SOCKET" || code === "EPIPE")) throw e
    resets++
    return send(base, r, true)
  }
}

/** Payload shapes of the job types, for `POST /api/v1/jobs/{type}` (the route takes any JSON). */
const JOB_BODIES: ReadonlyArray<unknown> = [
  { value: "x", sleep_ms: 10 },
  { operation: "embed", texts: ["a b c"], store: "fuzz" },
  { operation: "search", query: "a", store: "fuzz", top_k: 3 },
  { domain: "example.com" },
  { urls: ["http://127.0.0.1:1/"] },
  { template: "basic_research", params: { query: "q" } },
  { graph: { name: "g", stages: [{ name: "s", sequential: [{ op: "merge", inputs: {}, output: "o" }] }] } },
  { query: "q", max_urls: 2 },
  { video_urls: ["https://www.youtube.com/watch?v=abcdefghijk"] }
]

describe("fuzz over every route of every listener", () => {
  it("never a 5xx beyond a documented 503; the process stays up; good work between bad requests is kept", async () => {
    const ops: Array<Operation & { components: Record<string, unknown> }> = []
    for (const [listener, base] of Object.entries(urls)) {
      const doc = (await (await fetch(`${base}/openapi.json`)).json()) as Record<string, any>
      for (const op of operationsOf(listener, doc)) ops.push({ ...op, components: doc.components?.schemas ?? {} })
    }
    expect(new Set(ops.map((o) => o.listener))).toEqual(new Set(["gateway", "jobs", "chip", "cluster"]))
    const jobs = jobsClient(urls.jobs!)
    const good: { jobs: Array<{ id: string; value: string }>; files: Array<{ url: string; bytes: Buffer }> } = { jobs: [], files: [] }
    let sent = 0
    const doGood = async () => {
      const n = good.jobs.length + good.files.length
      if (n % 2 === 0) {
        const value = `good-${n}-${randomBytes(4).toString("hex")}`
        const r = await jobs.submit("echo", { value })
        expect(r.status).toBe(202)
        good.jobs.push({ id: r.body.job_id, value })
      } else {
        const bytes = randomBytes(1000 + n * 37)
        const r = await fetch(`${urls.jobs}/files/good-${n}.bin`, { method: "PUT", headers: { authorization: `Bearer ${FILES_KEY}`, "content-type": "application/octet-stream" }, body: bytes })
        expect(r.status).toBe(201)
        good.files.push({ url: ((await r.json()) as { url: string }).url, bytes })
      }
    }
    const table: Array<{ route: string; requests: number; statuses: string }> = []
    const perOp = Math.max(500, Math.floor(BUDGET_MS / ops.length))
    for (const [i, op] of ops.entries()) {
      const base = urls[op.listener]!
      const extra = op.listener === "jobs" && op.path === "/api/v1/jobs/{type}" ? JOB_BODIES : []
      const statuses = new Map<number, number>()
      let count = 0
      // Rounds of 20 runs (each its own seed) until the operation's share of the budget is spent:
      // every route gets at least one round however slow the machine is.
      const property = fc.asyncProperty(requestsOf(op, op.components, extra, [GATEWAY_TOKEN, FILES_KEY]), async (req) => {
          if (exited) throw new Error(`the platform ${exited}`)
          const status = await send(base, req)
          count++
          statuses.set(status, (statuses.get(status) ?? 0) + 1)
          if (++sent % 25 === 0) await doGood()
          const fine = status < 500 || (status === 503 && op.statuses.has(503))
          if (!fine) throw new Error(`${req.method} ${req.path} answered ${status}`)
        })
      const until = Date.now() + perOp
      for (let round = 0; round === 0 || Date.now() < until; round++) {
        await fc.assert(property, { seed: SEED + i * 1000 + round, numRuns: 20, endOnFailure: true })
      }
      table.push({ route: `${op.listener} ${op.method} ${op.path}`, requests: count, statuses: [...statuses].sort().map(([s, n]) => `${s}×${n}`).join(" ") })
    }
    console.log(`fuzz: seed ${SEED}, ${sent} requests over ${ops.length} routes, ${good.jobs.length} good jobs and ${good.files.length} files between them, ${resets} keep-alive resets retried`)
    console.table(table)
    expect(exited).toBeUndefined()
    expect(table.every((t) => t.requests > 0)).toBe(true)
    // Every good job completed with its own value; every good file reads back byte for byte.
    for (const g of good.jobs) {
      const j = await jobs.waitFor(g.id, undefined, 60_000)
      expect([j.status, (j.result as { value: string }).value]).toEqual(["COMPLETED", g.value])
    }
    for (const f of good.files) expect(Buffer.from(await (await fetch(f.url)).arrayBuffer()).equals(f.bytes)).toBe(true)
  }, BUDGET_MS + 240_000)

  it("RSS after 1,000 oversize and deeply nested requests stays within 50 MB of where it started", async () => {
    const base = urls.jobs!
    const round = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const oversize = await upload(`${base}/api/v1/jobs/vectl`, 16 * 1024 * 1024)
        expect(oversize.status).toBe(413)
        const deep = await upload(`${base}/api/v1/jobs/vectl`, 60_000, { fill: "[" })
        expect(deep.status).toBe(400)
      }
    }
    await round(50) // warm: buffers, JIT
    const before = rssMb(child.pid!)
    await round(500)
    const after = rssMb(child.pid!)
    console.log(`fuzz: RSS ${before.toFixed(1)} MB before, ${after.toFixed(1)} MB after 1,000 oversize and deeply nested requests`)
    expect(after - before).toBeLessThan(50)
    expect(exited).toBeUndefined()
  }, 240_000)
})
