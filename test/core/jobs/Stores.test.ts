import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { LocalFileStore, safeName, validKey } from "../../../core/jobs/FileStore.ts"
import { type Job, nowIso } from "../../../core/jobs/Job.ts"
import { applyListQuery, FileJobStore } from "../../../core/jobs/JobStore.ts"
import { EmbeddedQueue, RedisQueue } from "../../../core/jobs/Queue.ts"
import { RedisJobStore } from "../../../core/jobs/RedisJobStore.ts"
import { signV4 } from "../../../core/jobs/S3.ts"
import { startRedis, tempDir } from "./support.ts"

const job = (id: string, status: Job["status"] = "QUEUED"): Job => ({
  job_id: id,
  status,
  job_type: "echo",
  created_at: nowIso(),
  progress: 0,
  attempts: 0,
  max_retries: 3,
  retry_policy: { max_retries: 3, retry_on: [], no_retry_on: [] },
  history: [{ status, timestamp: nowIso() }],
  payload: {}
})

describe("FileJobStore", () => {
  it("replays its log after a restart, ignoring a line torn by a kill, and compacts it", async () => {
    const dir = tempDir()
    const a = new FileJobStore(dir)
    await a.create(job("job_a"))
    await a.create(job("job_b"))
    await a.update("job_a", (j) => ({ ...j, status: "PROCESSING", attempts: 1 }))
    await a.delete(["job_b"])
    fs.appendFileSync(path.join(dir, "jobs.log"), '{"job_id":"job_c","sta')
    const b = new FileJobStore(dir)
    expect((await b.get("job_a"))?.status).toBe("PROCESSING")
    expect(await b.get("job_b")).toBeUndefined()
    expect(await b.get("job_c")).toBeUndefined()
    expect(fs.readFileSync(path.join(dir, "jobs.log"), "utf8").trim().split("\n")).toHaveLength(1)
    await a.close()
    await b.close()
  })
})

describe("EmbeddedQueue", () => {
  it("delivers FIFO within the concurrency, honours delays and drops removed delayed entries", async () => {
    const q = new EmbeddedQueue()
    const seen: Array<string> = []
    let running = 0
    let peak = 0
    await q.start(async (id) => {
      running++
      peak = Math.max(peak, running)
      seen.push(id)
      await new Promise((r) => setTimeout(r, 10))
      running--
    }, 2)
    await q.enqueue(job("late"), 80)
    await q.enqueue(job("gone"), 40)
    for (const id of ["a", "b", "c", "d"]) await q.enqueue(job(id), 0)
    await q.remove(job("gone"))
    await new Promise((r) => setTimeout(r, 150))
    expect(seen).toEqual(["a", "b", "c", "d", "late"])
    expect(peak).toBe(2)
    await q.close()
  })
})

describe("LocalFileStore", () => {
  it("stores under unguessable ids, serves only valid keys and never leaves its root", async () => {
    const root = tempDir()
    const fstore = new LocalFileStore(path.join(root, "files"), () => "http://h:1/files")
    fs.writeFileSync(path.join(root, "secret.txt"), "secret")
    const f = await fstore.put("../../secret.txt", "data")
    expect(f.name).toBe("_.._secret.txt")
    expect(f.url).toBe(`http://h:1/files/${f.id}/_.._secret.txt`)
    expect(f.id).toMatch(/^[A-Za-z0-9_-]{32}$/)
    const opened = await fstore.open(f.id, f.name)
    const chunks: Array<Buffer> = []
    for await (const c of opened!.body) chunks.push(Buffer.from(c))
    expect(Buffer.concat(chunks).toString()).toBe("data")
    expect(await fstore.open("..", "secret.txt")).toBeUndefined()
    expect(await fstore.open(f.id, "../../secret.txt")).toBeUndefined()
    expect(validKey(f.id, "..")).toBe(false)
    expect(safeName("a/b\\c\u0000.txt")).toBe("a_b_c_.txt")
    await fstore.delete([f.key])
    expect(await fstore.open(f.id, f.name)).toBeUndefined()
  })
})

describe("S3 SigV4", () => {
  it("reproduces AWS's documented GET Object signature", () => {
    const h = signV4({
      method: "GET",
      url: new URL("https://examplebucket.s3.amazonaws.com/test.txt"),
      headers: { range: "bytes=0-9" },
      payloadHash: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      region: "us-east-1",
      accessKeyId: "AKIAIOSFODNN7EXAMPLE",
      secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
      date: new Date("2013-05-24T00:00:00Z")
    })
    expect(h.authorization).toBe(
      "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    )
  })
})

describe("FileJobStore lock", () => {
  it("refuses a second live store on the same directory, takes over a dead process's lock", async () => {
    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "jobs.lock"), "999999999") // no such process
    const a = new FileJobStore(dir)
    expect(fs.readFileSync(path.join(dir, "jobs.lock"), "utf8")).toBe(String(process.pid))
    fs.writeFileSync(path.join(dir, "jobs.lock"), "1") // pid 1 is alive
    expect(() => new FileJobStore(dir)).toThrow(/in use by process 1/)
    fs.writeFileSync(path.join(dir, "jobs.lock"), String(process.pid))
    await a.close()
    expect(fs.existsSync(path.join(dir, "jobs.lock"))).toBe(false)
  })
})

describe("RedisJobStore list", () => {
  it("status-only pages (counts plus page heads) match the generic filter, ties on created ms included", async () => {
    const redis = await startRedis()
    const store = new RedisJobStore(redis.url, "lt")
    try {
      const statuses: ReadonlyArray<Job["status"]> = ["QUEUED", "COMPLETED", "FAILED"]
      const all: Array<Job> = []
      for (let i = 0; i < 30; i++) {
        // Three jobs per millisecond: equal created_at across status sets, ordered by id.
        const j = { ...job(`job_${String(i).padStart(3, "0")}`, statuses[i % 3]), created_at: nowIso(1_700_000_000_000 + Math.floor(i / 3)) }
        await store.create(j)
        all.push(j)
      }
      const queries = [
        { limit: 4, offset: 0 },
        { limit: 5, offset: 7, status: ["COMPLETED", "FAILED"] as const },
        { limit: 50, offset: 0, status: ["QUEUED"] as const },
        { limit: 3, offset: 2, status: ["FAILED", "QUEUED"] as const, created_after: 1_700_000_000_002, created_before: 1_700_000_000_008 }
      ]
      for (const q of queries) {
        const got = await store.list({ ...q, status: q.status ? [...q.status] : undefined })
        const want = applyListQuery(all, { ...q, status: q.status ? [...q.status] : undefined })
        expect(got.total).toBe(want.total)
        expect(got.jobs.map((j) => j.job_id)).toEqual(want.jobs.map((j) => j.job_id))
      }
    } finally {
      await store.close()
      await redis.stop()
    }
  })
})

describe("RedisQueue", () => {
  it("a delivery fetched ahead behind a long job goes back to the queue and another process runs it", async () => {
    const redis = await startRedis()
    const settings = { url: redis.url, prefix: "pf", lock_s: 5 }
    const busy = new RedisQueue(settings)
    const idle = new RedisQueue(settings)
    let release: () => void = () => {}
    const long = new Promise<void>((r) => {
      release = r
    })
    const ranBy = new Map<string, string>()
    try {
      await busy.start(async (id) => {
        ranBy.set(id, "busy")
        if (id === "job_long") await long
      }, 1)
      await busy.enqueue(job("job_long"), 0)
      await new Promise((r) => setTimeout(r, 100))
      await busy.enqueue(job("job_next"), 0)
      await new Promise((r) => setTimeout(r, 100))
      expect(ranBy.has("job_next")).toBe(false) // fetched ahead, waiting for the busy slot
      await idle.start(async (id) => {
        ranBy.set(id, "idle")
      }, 1)
      const deadline = Date.now() + 6_000
      while (!ranBy.has("job_next") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
      expect(ranBy.get("job_next")).toBe("idle")
    } finally {
      release()
      await busy.close()
      await idle.close()
      await redis.stop()
    }
  }, 15_000)
})
