/**
 * Job records in Redis, shared by the API process and worker processes on any machine.
 *
 * Layout (prefix `p`): `p:job:<id>` the record as JSON; sorted sets `p:jobs:index` (by created
 * ms), `p:jobs:queued` (QUEUED records by scheduled ms) and `p:jobs:ended` (terminal records by
 * end ms) for listing and sweeping; channels `p:jobs:events` (every stored record) and
 * `p:jobs:cancel` (cancelled ids). A change is a compare-and-set Lua script: it writes only when
 * the stored JSON equals what the writer read, maintains the sets and publishes, in one round
 * trip; a lost race re-reads and re-applies the transition.
 */
import { Redis } from "ioredis"
import type { Job } from "./Job.ts"
import { applyListQuery, endedMs, type JobStore, type ListPage, type ListQuery, scheduledMs, type Transition, type Updated } from "./JobStore.ts"

const CAS = `
local cur = redis.call('GET', KEYS[1])
if ARGV[1] == '' then
  if cur then return 0 end
elseif cur ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2])
if ARGV[4] ~= '' then redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3]) else redis.call('ZREM', KEYS[2], ARGV[3]) end
if ARGV[5] ~= '' then redis.call('ZADD', KEYS[3], ARGV[5], ARGV[3]) else redis.call('ZREM', KEYS[3], ARGV[3]) end
if ARGV[6] ~= '' then redis.call('ZADD', KEYS[4], ARGV[6], ARGV[3]) end
redis.call('PUBLISH', ARGV[7], ARGV[2])
return 1
`

type CasRedis = Redis & {
  jobCas: (k1: string, k2: string, k3: string, k4: string, ...argv: Array<string>) => Promise<number>
}

/** Records in Redis; see the module comment for the key layout. */
export class RedisJobStore implements JobStore {
  private readonly redis: CasRedis
  private sub: Redis | undefined
  private readonly changeListeners = new Set<(job: Job) => void>()
  private readonly cancelListeners = new Set<(id: string) => void>()
  private readonly k: { index: string; queued: string; ended: string; events: string; cancel: string }

  /** Connects to `url` (ioredis URL syntax) under key prefix `prefix`. */
  constructor(private readonly url: string, readonly prefix: string) {
    this.redis = new Redis(url, { maxRetriesPerRequest: null, lazyConnect: false }) as CasRedis
    this.redis.defineCommand("jobCas", { numberOfKeys: 4, lua: CAS })
    this.k = {
      index: `${prefix}:jobs:index`,
      queued: `${prefix}:jobs:queued`,
      ended: `${prefix}:jobs:ended`,
      events: `${prefix}:jobs:events`,
      cancel: `${prefix}:jobs:cancel`
    }
  }

  /** Resolves once Redis answers; rejects after `timeoutMs` (unreachable or refusing). */
  async ready(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    try {
      await Promise.race([
        this.redis.ping(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`Redis at ${this.url} did not answer within ${timeoutMs} ms`)), timeoutMs)
        })
      ])
    } finally {
      clearTimeout(timer)
    }
  }

  private key(id: string): string {
    return `${this.prefix}:job:${id}`
  }

  private cas(id: string, expected: string, next: Job, createdMs?: number): Promise<number> {
    const q = scheduledMs(next)
    const e = endedMs(next)
    return this.redis.jobCas(
      this.key(id),
      this.k.queued,
      this.k.ended,
      this.k.index,
      expected,
      JSON.stringify(next),
      id,
      q === undefined ? "" : String(q),
      e === undefined ? "" : String(e),
      createdMs === undefined ? "" : String(createdMs),
      this.k.events
    )
  }

  create = async (job: Job): Promise<void> => {
    const ok = await this.cas(job.job_id, "", job, Date.parse(job.created_at))
    if (ok !== 1) throw new Error(`job ${job.job_id} exists`)
  }

  get = async (id: string): Promise<Job | undefined> => {
    const raw = await this.redis.get(this.key(id))
    return raw ? (JSON.parse(raw) as Job) : undefined
  }

  update = async (id: string, fn: Transition, known?: Job): Promise<Updated | undefined> => {
    let cur = known
    for (let tries = 0; tries < 100; tries++) {
      if (!cur) {
        cur = await this.get(id)
        if (!cur) return undefined
      }
      const next = fn(cur)
      if (!next) {
        // A stale `known` must not decide "no change": confirm against the stored record.
        if (known && tries === 0) {
          cur = undefined
          continue
        }
        return { job: cur, changed: false }
      }
      if ((await this.cas(id, JSON.stringify(cur), next)) === 1) return { job: next, changed: true }
      cur = undefined
    }
    throw new Error(`job ${id}: too much contention`)
  }

  private async fetch(ids: ReadonlyArray<string>): Promise<Array<Job>> {
    const out: Array<Job> = []
    for (let i = 0; i < ids.length; i += 500) {
      const raws = await this.redis.mget(ids.slice(i, i + 500).map((id) => this.key(id)))
      for (const r of raws) if (r) out.push(JSON.parse(r) as Job)
    }
    return out
  }

  list = async (q: ListQuery): Promise<ListPage> => {
    // The index narrows by creation time in Redis; status/type filters run here (records are small
    // and retention bounds their number).
    const max = q.created_before !== undefined ? `(${q.created_before}` : "+inf"
    const min = q.created_after !== undefined ? `(${q.created_after}` : "-inf"
    const ids = await this.redis.zrevrangebyscore(this.k.index, max, min)
    return applyListQuery(await this.fetch(ids), q)
  }

  queuedBefore = async (ms: number): Promise<ReadonlyArray<Job>> =>
    (await this.fetch(await this.redis.zrangebyscore(this.k.queued, "-inf", `(${ms}`))).filter((j) => j.status === "QUEUED")

  endedBefore = async (ms: number): Promise<ReadonlyArray<Job>> =>
    this.fetch(await this.redis.zrangebyscore(this.k.ended, "-inf", `(${ms}`))

  active = async (): Promise<ReadonlyArray<Job>> =>
    (await this.fetch(await this.redis.zrange(this.k.index, 0, -1))).filter((j) =>
      j.status === "QUEUED" || j.status === "PROCESSING" || j.status === "PENDING"
    )

  delete = async (ids: ReadonlyArray<string>): Promise<void> => {
    if (ids.length === 0) return
    const m = this.redis.multi()
    for (const id of ids) {
      m.del(this.key(id))
      m.zrem(this.k.index, id)
      m.zrem(this.k.queued, id)
      m.zrem(this.k.ended, id)
    }
    await m.exec()
  }

  private async subscriber(): Promise<Redis> {
    if (this.sub) return this.sub
    const sub = this.redis.duplicate()
    this.sub = sub
    sub.on("message", (channel: string, message: string) => {
      if (channel === this.k.events) {
        if (this.changeListeners.size === 0) return
        const job = JSON.parse(message) as Job
        for (const l of this.changeListeners) l(job)
      } else if (channel === this.k.cancel) {
        for (const l of this.cancelListeners) l(message)
      }
    })
    return sub
  }

  onChange = async (listener: (job: Job) => void): Promise<() => void> => {
    const sub = await this.subscriber()
    if (this.changeListeners.size === 0) await sub.subscribe(this.k.events)
    this.changeListeners.add(listener)
    return () => {
      this.changeListeners.delete(listener)
      // Unsubscribing when idle keeps worker processes from decoding every record change.
      if (this.changeListeners.size === 0) sub.unsubscribe(this.k.events).catch(() => {})
    }
  }

  publishCancel = async (id: string): Promise<void> => {
    await this.redis.publish(this.k.cancel, id)
  }

  onCancel = async (listener: (id: string) => void): Promise<() => void> => {
    const sub = await this.subscriber()
    if (this.cancelListeners.size === 0) await sub.subscribe(this.k.cancel)
    this.cancelListeners.add(listener)
    return () => {
      this.cancelListeners.delete(listener)
    }
  }

  close = async (): Promise<void> => {
    this.changeListeners.clear()
    this.cancelListeners.clear()
    this.sub?.disconnect()
    await this.redis.quit().catch(() => this.redis.disconnect())
  }
}
