import * as fs from "node:fs"
import * as path from "node:path"
import { Redis } from "ioredis"
import { describe, expect, it } from "vitest"
import { LocalFileStore, safeName, validKey } from "../../../../plugins/jobs/runtime/FileStore.ts"
import { type Job, nowIso } from "../../../../plugins/jobs/runtime/Job.ts"
import { applyListQuery, FileJobStore } from "../../../../plugins/jobs/runtime/JobStore.ts"
import { EmbeddedQueue } from "../../../../plugins/jobs/runtime/Queue.ts"
import { RedisQueue } from "../../../../plugins/jobs/runtime/RedisQueue.ts"
import { RedisJobStore } from "../../../../plugins/jobs/runtime/RedisJobStore.ts"
import { S3Client } from "../../../../plugins/jobs/runtime/S3.ts"
import { startS3 } from "../../../fixtures/s3-server.ts"
import { startRedis, tempDir } from "../support.ts"

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

describe("S3Client against an S3-compatible server (s3rver, SigV4 checked)", () => {
  it("puts, gets, lists page by page, deletes; a wrong secret is refused", async () => {
    const s3 = await startS3()
    try {
      const settings = { endpoint: s3.endpoint, bucket: s3.bucket, region: "us-east-1", access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey }
      const client = new S3Client(settings)
      const keys = ["p/a.txt", "p/b c.txt", "p/d/e+f.json", "p/ü.txt", "p/x(1).txt", "q/other.txt", "p/z.bin"]
      for (const k of keys) await client.put(k, new TextEncoder().encode(`body of ${k}`), "text/plain")
      expect(s3.objects.get("p/b c.txt")!.body.toString()).toBe("body of p/b c.txt")
      const got = await client.get("p/ü.txt")
      expect(await got!.text()).toBe("body of p/ü.txt")
      expect(await client.get("p/missing")).toBeUndefined()
      // Pages of 2: ListObjectsV2 continuation tokens followed to the end.
      const listed = await client.list("p/", 2)
      expect(listed.map((o) => o.key).sort()).toEqual(keys.filter((k) => k.startsWith("p/")).sort())
      expect(listed.find((o) => o.key === "p/z.bin")!.size).toBe("body of p/z.bin".length)
      await client.delete("p/a.txt")
      await client.delete("p/never-there")
      expect((await client.list("p/")).map((o) => o.key)).not.toContain("p/a.txt")
      const wrong = new S3Client({ ...settings, secret_access_key: "not-the-secret" })
      await expect(wrong.put("p/w.txt", new Uint8Array([1]), "text/plain")).rejects.toThrow(/HTTP 403.*SignatureDoesNotMatch/s)
      expect(s3.objects.has("p/w.txt")).toBe(false)
    } finally {
      await s3.close()
    }
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
    const settings = { url: redis.url, prefix: "pf", lock_s: 5, batch_max: 8 }
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

describe("RedisQueue batches", () => {
  const settings = (url: string, batch_max = 8) => ({ url, prefix: "pb", lock_s: 5, batch_max })
  /** Ids of our BullMQ jobs waiting or delayed, and the `batched` hash. */
  const peek = async (url: string) => {
    const r = new Redis(url)
    try {
      const waiting = await r.lrange("pb:jobs:wait", 0, -1)
      const delayed = await r.zrange("pb:jobs:delayed", 0, -1)
      return { entries: [...waiting, ...delayed], batched: await r.hgetall("pb:jobs:batched") }
    } finally {
      r.disconnect()
    }
  }

  /** Polls until `done()` (at most 5 s), then lets stragglers land for `settleMs`. */
  const settle = async (done: () => boolean, settleMs = 200) => {
    const deadline = Date.now() + 5_000
    while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    await new Promise((r) => setTimeout(r, settleMs))
  }
  /** A redis-server, two queue processes on it, and a gate that holds long jobs until `stop`. */
  const twoProcesses = async () => {
    const redis = await startRedis()
    let release: () => void = () => {}
    const gate = new Promise<void>((r) => {
      release = r
    })
    const busy = new RedisQueue(settings(redis.url))
    const other = new RedisQueue(settings(redis.url))
    return {
      redis,
      busy,
      other,
      gate,
      stop: async () => {
        release()
        await busy.close()
        await other.close()
        await redis.stop()
      }
    }
  }

  it("jobs enqueued in one turn travel as one BullMQ job (up to batch_max); each is delivered once; a delayed one alone", async () => {
    const redis = await startRedis()
    const q = new RedisQueue(settings(redis.url, 3))
    try {
      const ids = ["b1", "b2", "b3", "b4", "b5"]
      await Promise.all([...ids.map((id) => q.enqueue(job(id), 0)), q.enqueue(job("later"), 150)])
      const { entries, batched } = await peek(redis.url)
      // 3 + 2 in two batches, the delayed one by itself under its own id.
      expect(entries).toHaveLength(3)
      expect(entries).toContain("later.0")
      expect(Object.keys(batched).sort()).toEqual(ids)
      expect(new Set(Object.values(batched)).size).toBe(2)
      const seen: Array<string> = []
      await q.start(async (id) => {
        seen.push(id)
      }, 4)
      await settle(() => seen.length >= 6)
      expect(seen.sort()).toEqual([...ids, "later"].sort())
      // Finished batches leave nothing in the hash.
      expect((await peek(redis.url)).batched).toEqual({})
    } finally {
      await q.close()
      await redis.stop()
    }
  }, 15_000)

  it("a batch larger than the free slots runs what fits and hands the rest back; another process runs those, each once", async () => {
    const { busy, other, gate, stop } = await twoProcesses()
    const runs: Array<[string, string]> = []
    try {
      await busy.start(async (id) => {
        runs.push([id, "busy"])
        await gate
      }, 2)
      await busy.enqueue(job("long"), 0)
      await new Promise((r) => setTimeout(r, 100))
      // One slot free for a batch of three (all long here): one runs, two go back after PREFETCH_WAIT_MS.
      await Promise.all(["c1", "c2", "c3"].map((id) => busy.enqueue(job(id), 0)))
      await new Promise((r) => setTimeout(r, 1_300))
      expect(runs.filter(([id]) => id !== "long")).toHaveLength(1)
      await other.start(async (id) => {
        runs.push([id, "other"])
      }, 2)
      await settle(() => runs.length >= 4)
      const ran = runs.filter(([id]) => id !== "long")
      expect(ran.map(([id]) => id).sort()).toEqual(["c1", "c2", "c3"])
      expect(ran.filter(([, by]) => by === "other")).toHaveLength(2)
    } finally {
      await stop()
    }
  }, 15_000)

  it("a batch delivered again skips the jobs handed back into another BullMQ job", async () => {
    const { redis, busy, other, gate, stop } = await twoProcesses()
    const seen: Array<string> = []
    try {
      await busy.start(async (id) => {
        if (id === "long") await gate
      }, 1)
      await busy.enqueue(job("long"), 0)
      await new Promise((r) => setTimeout(r, 100))
      // No slot at all: the whole batch goes back to the queue (a later delivery of the same job).
      await Promise.all(["d1", "d2"].map((id) => busy.enqueue(job(id), 0)))
      await new Promise((r) => setTimeout(r, 1_300))
      // As if d2 had been handed back into another BullMQ job meanwhile.
      const r = new Redis(redis.url)
      await r.hset("pb:jobs:batched", "d2", "elsewhere")
      r.disconnect()
      await other.start(async (id) => {
        seen.push(id)
      }, 2)
      await settle(() => seen.length >= 1, 300)
      expect(seen).toEqual(["d1"])
    } finally {
      await stop()
    }
  }, 15_000)

  it("a job removed from a waiting batch is not delivered; the others are", async () => {
    const redis = await startRedis()
    const q = new RedisQueue(settings(redis.url))
    try {
      const jobs = ["r1", "r2", "r3"].map((id) => job(id))
      await Promise.all(jobs.map((j) => q.enqueue(j, 0)))
      await q.remove(jobs[1]!)
      expect(Object.keys((await peek(redis.url)).batched).sort()).toEqual(["r1", "r3"])
      const seen: Array<string> = []
      await q.start(async (id) => {
        seen.push(id)
      }, 4)
      await settle(() => seen.length >= 2)
      expect(seen.sort()).toEqual(["r1", "r3"])
      // Removing every job of a batch removes the BullMQ job (no worker here to take it first).
      await q.close()
      const idle = new RedisQueue(settings(redis.url))
      const more = ["s1", "s2"].map((id) => job(id))
      await Promise.all(more.map((j) => idle.enqueue(j, 0)))
      expect((await peek(redis.url)).entries).toHaveLength(1)
      for (const j of more) await idle.remove(j)
      expect(await peek(redis.url)).toEqual({ entries: [], batched: {} })
      await idle.close()
    } finally {
      await q.close()
      await redis.stop()
    }
  }, 15_000)

  it("ensure re-enqueues a batched job only when its batch is gone", async () => {
    const redis = await startRedis()
    const q = new RedisQueue(settings(redis.url))
    try {
      const jobs = [job("e1"), job("e2")]
      await Promise.all(jobs.map((j) => q.enqueue(j, 0)))
      expect(await q.ensure(jobs)).toBe(0)
      const { entries } = await peek(redis.url)
      expect(entries).toHaveLength(1)
      const r = new Redis(redis.url)
      await r.del(`pb:jobs:${entries[0]}`)
      await r.del("pb:jobs:wait")
      r.disconnect()
      expect(await q.ensure(jobs)).toBe(2)
      expect((await peek(redis.url)).entries.sort()).toEqual(["e1.0", "e2.0"])
    } finally {
      await q.close()
      await redis.stop()
    }
  }, 15_000)
})

describe("RedisJobStore write batching", () => {
  it("writes issued in one turn go out together and each keeps its own compare-and-set", async () => {
    const redis = await startRedis()
    const store = new RedisJobStore(redis.url, "wb")
    try {
      await Promise.all(["w1", "w2", "w3"].map((id) => store.create(job(id))))
      // Twenty increments of one record in the same turn: they race on one CAS each, losers re-read.
      await Promise.all(Array.from({ length: 20 }, () => store.update("w1", (j) => ({ ...j, progress: j.progress + 1 }))))
      expect((await store.get("w1"))?.progress).toBe(20)
      // A create of an existing id fails alone; the others in its batch are written.
      const results = await Promise.allSettled([store.create(job("w2")), store.create(job("w4"))])
      expect(results.map((r) => r.status)).toEqual(["rejected", "fulfilled"])
      expect((await store.list({ limit: 10, offset: 0 })).total).toBe(4)
    } finally {
      await store.close()
      await redis.stop()
    }
  })
})
