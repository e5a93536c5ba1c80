/**
 * Named mutual-exclusion locks spanning every process that runs jobs of one platform, for
 * read-modify-write of shared objects (a workspace manifest several runs update at once).
 *
 * `embedded` backend: the queue and all workers live in the serving process, so an in-process
 * lock (a promise chain per name) excludes everyone. `redis` backend: workers run in any number
 * of processes and threads, so the lock is a Redis key (`SET key token NX PX ttl`, renewed while
 * held, released by a compare-and-delete script so an expired holder never frees another's lock),
 * with the in-process chain in front to keep one process's callers from polling Redis.
 */
import { randomBytes } from "node:crypto"
import { Redis } from "ioredis"

/** Runs `fn` holding the lock `name`; resolves or rejects as `fn` does. */
export interface Locks {
  readonly withLock: <A>(name: string, fn: () => Promise<A>) => Promise<A>
  readonly close: () => Promise<void>
}

/** Locks inside this process: callers of one name run one after another, in call order. */
export const inProcessLocks = (): Locks => {
  const tails = new Map<string, Promise<unknown>>()
  return {
    withLock: <A>(name: string, fn: () => Promise<A>): Promise<A> => {
      const before = tails.get(name) ?? Promise.resolve()
      const run = before.then(fn, fn)
      const tail = run.then(() => {}, () => {})
      tails.set(name, tail)
      void tail.then(() => {
        if (tails.get(name) === tail) tails.delete(name)
      })
      return run
    },
    close: async () => {}
  }
}

const RELEASE = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`
const RENEW = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`

/**
 * Locks in Redis at `url` under `<prefix>:lock:<name>`. `ttlMs` bounds how long a crashed
 * holder blocks others (renewed every third of it while `fn` runs); waiting polls every 5 to
 * 50 ms and gives up after `waitMs` with an Error naming the lock.
 */
export const redisLocks = (url: string, prefix: string, ttlMs = 30_000, waitMs = 120_000): Locks => {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 3 })
  redis.on("error", () => {}) // reported by the failing command
  const local = inProcessLocks()
  const acquire = async (key: string, token: string) => {
    const deadline = Date.now() + waitMs
    for (let delay = 5; ; delay = Math.min(50, delay * 2)) {
      if ((await redis.set(key, token, "PX", ttlMs, "NX")) === "OK") return
      if (Date.now() > deadline) throw new Error(`lock ${key}: still held by another process after ${waitMs} ms`)
      await new Promise((r) => setTimeout(r, delay * (0.5 + Math.random())))
    }
  }
  return {
    withLock: <A>(name: string, fn: () => Promise<A>) =>
      local.withLock(name, async () => {
        if (redis.status === "wait") await redis.connect()
        const key = `${prefix}:lock:${name}`
        const token = randomBytes(12).toString("hex")
        await acquire(key, token)
        const renew = setInterval(() => void redis.eval(RENEW, 1, key, token, String(ttlMs)).catch(() => {}), Math.max(100, Math.floor(ttlMs / 3)))
        try {
          return await fn()
        } finally {
          clearInterval(renew)
          await redis.eval(RELEASE, 1, key, token).catch(() => {})
        }
      }),
    close: async () => {
      redis.disconnect()
    }
  }
}
