/**
 * The storage the jobs plugin shares (`Storage.ts`): locks that exclude across processes (two
 * Redis lock clients stand for two worker processes) and within one, and the local bucket's key
 * rules (nothing outside the store's folder, never a job file's `<id>/` folder).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Redis } from "ioredis"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { InvalidKey, LocalBucket } from "../../../../plugins/jobs/runtime/Bucket.ts"
import { inProcessLocks, redisLocks } from "../../../../plugins/jobs/runtime/Locks.ts"
import { startRedis, tempDir, type TestRedis } from "../support.ts"

let redis: TestRedis
beforeAll(async () => {
  redis = await startRedis()
})
afterAll(async () => {
  await redis?.stop()
})

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe("locks", () => {
  it("redis: read-modify-write from two clients (two processes) in 40 interleaved calls loses no update", async () => {
    const a = redisLocks(redis.url, "lk", 5_000)
    const b = redisLocks(redis.url, "lk", 5_000)
    const r = new Redis(redis.url)
    try {
      await r.set("counter", "0")
      let inside = 0
      let most = 0
      const bump = (locks: typeof a) =>
        locks.withLock("c", async () => {
          most = Math.max(most, ++inside)
          const v = Number(await r.get("counter"))
          await pause(2)
          await r.set("counter", String(v + 1))
          inside--
        })
      await Promise.all(Array.from({ length: 40 }, (_, i) => bump(i % 2 ? a : b)))
      expect(await r.get("counter")).toBe("40")
      expect(most).toBe(1)
      // A failing holder releases the lock.
      await expect(a.withLock("c", async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom")
      expect(await b.withLock("c", async () => "next")).toBe("next")
      expect(await r.exists("lk:lock:c")).toBe(0)
    } finally {
      r.disconnect()
      await a.close()
      await b.close()
    }
  })

  it("in-process: callers of one name run one at a time in call order; other names do not wait", async () => {
    const locks = inProcessLocks()
    const order: Array<string> = []
    const slow = locks.withLock("x", async () => (await pause(30), order.push("x1")))
    const other = locks.withLock("y", async () => order.push("y"))
    const next = locks.withLock("x", async () => order.push("x2"))
    await Promise.all([slow, other, next])
    expect(order).toEqual(["y", "x1", "x2"])
  })
})

describe("local bucket", () => {
  it("puts, lists by prefix, gets and deletes keyed objects; refuses keys that could escape or collide", async () => {
    const root = tempDir()
    const bucket = new LocalBucket(root)
    await bucket.put("workspaces/ws_1/manifest.json", "{}")
    await bucket.put("workspaces/ws_1/runs/r1/result.json", new Uint8Array([1, 2, 3]))
    await bucket.put("workspaces/ws_10/manifest.json", "{}")
    // A job file of the files store beside it is never listed.
    fs.mkdirSync(path.join(root, "A".repeat(32)))
    fs.writeFileSync(path.join(root, "A".repeat(32), "x.txt"), "job file")
    expect(await bucket.list("workspaces/ws_1/")).toEqual([{ key: "workspaces/ws_1/manifest.json", size: 2 }, { key: "workspaces/ws_1/runs/r1/result.json", size: 3 }])
    expect((await bucket.list("workspaces/ws_1")).map((o) => o.key)).toEqual(["workspaces/ws_1/manifest.json", "workspaces/ws_1/runs/r1/result.json", "workspaces/ws_10/manifest.json"])
    expect((await bucket.list("")).map((o) => o.key)).toHaveLength(3)
    expect(await bucket.get("workspaces/ws_1/runs/r1/result.json")).toEqual(new Uint8Array([1, 2, 3]))
    expect(await bucket.get("workspaces/ws_2/manifest.json")).toBeUndefined()
    await bucket.delete(["workspaces/ws_1/runs/r1/result.json", "workspaces/ws_1/manifest.json", "workspaces/nope"])
    expect(fs.existsSync(path.join(root, "workspaces", "ws_1"))).toBe(false)
    for (const bad of ["../x", "a/../../x", "/etc/passwd", "a//b", ".hidden", "a/.b", `${"A".repeat(32)}/x.txt`, "a\\b"]) {
      await expect(bucket.put(bad, "x"), bad).rejects.toBeInstanceOf(InvalidKey)
      await expect(bucket.get(bad), bad).rejects.toBeInstanceOf(InvalidKey)
    }
    await expect(bucket.list("../")).rejects.toBeInstanceOf(InvalidKey)
  })
})
