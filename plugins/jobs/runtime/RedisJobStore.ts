/**
 * Job records in Redis, shared by the API process and worker processes on any machine.
 *
 * Layout (prefix `p`): `p:job:<id>` the record as JSON; sorted sets by created ms
 * `p:jobs:index` (all), `p:jobs:s:<STATUS>` (per status) and `p:jobs:t:<type>` (per job type)
 * for listing without reading records outside the page; `p:jobs:queued` (QUEUED records by
 * scheduled ms) and `p:jobs:ended` (terminal records by end ms) for sweeping; channels
 * `p:jobs:events` (ids of changed records) and `p:jobs:cancel` (cancelled ids).
 *
 * A change is a compare-and-set Lua script: it writes only when the SHA-1 of the stored JSON
 * equals that of what the writer read (40 bytes on the wire instead of the record), maintains the
 * sets and publishes, in one round trip; a lost race re-reads and re-applies the transition.
 * Writes issued in the same event-loop turn (a burst of submissions, a batch of completions) go
 * out as one script call at the end of the turn, each with its own compare-and-set; `flush` sends
 * them earlier, for a command that must execute after them on the shared connection.
 */
import { createHash } from "node:crypto"
import { Redis } from "ioredis"
import type { Job, JobStatus } from "./Job.ts"
import { applyListQuery, endedMs, type JobStore, type ListPage, type ListQuery, scheduledMs, type Transition, type Updated } from "./JobStore.ts"
import { TurnBatch } from "./TurnBatch.ts"

// Writes one or more records, each a compare-and-set; answers one 0/1 per record.
// KEYS, 7 per record: record, queued, ended, index, old status set, new status set, type set.
// ARGV, 10 per record: sha1 of expected JSON ('' = must not exist), new JSON, id, queued score,
//       ended score, created ms, events channel, 1 when the record is new, 1 when the stored
//       record is in the queued set, 1 when it is in the ended set (those two spare a ZREM of an
//       absent member: the stored record is the writer's `prev`, the script checks that first).
const CAS = `
local out = {}
for r = 0, #KEYS / 7 - 1 do
  local K = r * 7
  local A = r * 10
  local cur = redis.call('GET', KEYS[K + 1])
  local ok
  if ARGV[A + 1] == '' then ok = not cur else ok = cur and redis.sha1hex(cur) == ARGV[A + 1] end
  if ok then
    local id = ARGV[A + 3]
    redis.call('SET', KEYS[K + 1], ARGV[A + 2])
    if ARGV[A + 4] ~= '' then redis.call('ZADD', KEYS[K + 2], ARGV[A + 4], id) elseif ARGV[A + 9] == '1' then redis.call('ZREM', KEYS[K + 2], id) end
    if ARGV[A + 5] ~= '' then redis.call('ZADD', KEYS[K + 3], ARGV[A + 5], id) elseif ARGV[A + 10] == '1' then redis.call('ZREM', KEYS[K + 3], id) end
    if KEYS[K + 5] ~= KEYS[K + 6] then
      redis.call('ZREM', KEYS[K + 5], id)
      redis.call('ZADD', KEYS[K + 6], ARGV[A + 6], id)
    end
    if ARGV[A + 8] == '1' then
      redis.call('ZADD', KEYS[K + 4], ARGV[A + 6], id)
      redis.call('ZADD', KEYS[K + 6], ARGV[A + 6], id)
      redis.call('ZADD', KEYS[K + 7], ARGV[A + 6], id)
    end
    redis.call('PUBLISH', ARGV[A + 7], id)
    out[r + 1] = 1
  else
    out[r + 1] = 0
  end
end
return out
`

/** Most record writes sent in one script call. */
const CAS_BATCH_MAX = 64

type CasRedis = Redis & {
  /** `numkeys`, then the keys, then the arguments (see CAS). */
  jobCas: (numkeys: number, ...keysAndArgv: Array<string>) => Promise<Array<number>>
}

const sha1 = (s: string): string => createHash("sha1").update(s).digest("hex")

const STATUSES: ReadonlyArray<JobStatus> = ["PENDING", "QUEUED", "PROCESSING", "COMPLETED", "FAILED", "CANCELLED"]

/** Records in Redis; see the module comment for the key layout. */
export class RedisJobStore implements JobStore {
  private readonly redis: CasRedis
  private sub: Redis | undefined
  private readonly changeListeners = new Set<(job: Job) => void>()
  private readonly cancelListeners = new Set<(id: string) => void>()
  /** The JSON each record object was read from or written as: saves re-serialising it as a CAS "expected". */
  private readonly raw = new WeakMap<Job, string>()
  /** Record writes of this turn, `[keys, argv]` of each (see CAS), sent as one script call. */
  private readonly writes = new TurnBatch<readonly [Array<string>, Array<string>], number>(CAS_BATCH_MAX, (w) =>
    this.redis.jobCas(w.length * 7, ...w.flatMap(([keys]) => keys), ...w.flatMap(([, argv]) => argv))
  )
  private readonly k: { index: string; queued: string; ended: string; events: string; cancel: string }

  /** Connects to `url` (ioredis URL syntax) under key prefix `prefix`. */
  constructor(private readonly url: string, readonly prefix: string) {
    // Auto-pipelining sends the commands issued in one tick as one write: with many jobs in flight
    // this saves a syscall per command.
    this.redis = new Redis(url, { maxRetriesPerRequest: null, enableAutoPipelining: true }) as CasRedis
    this.redis.defineCommand("jobCas", { lua: CAS })
    this.k = {
      index: `${prefix}:jobs:index`,
      queued: `${prefix}:jobs:queued`,
      ended: `${prefix}:jobs:ended`,
      events: `${prefix}:jobs:events`,
      cancel: `${prefix}:jobs:cancel`
    }
  }

  /**
   * The connection every record write goes through. The redis queue runs its BullMQ worker on it
   * too, so a record write issued before a delivery returns reaches Redis before BullMQ's
   * completion of that delivery (one connection executes in order).
   */
  get client(): Redis {
    return this.redis
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

  private statusKey(s: JobStatus): string {
    return `${this.prefix}:jobs:s:${s}`
  }

  private typeKey(t: string): string {
    return `${this.prefix}:jobs:t:${t}`
  }

  /**
   * Writes `next` if the stored record is still `prev` (undefined: if none is stored); resolves 1
   * when written, 0 when not. Writes issued in one event-loop turn go out as one script call at its
   * end (or at `flush`); each keeps its own compare-and-set.
   */
  private cas(prev: Job | undefined, next: Job): Promise<number> {
    const id = next.job_id
    const q = scheduledMs(next)
    const e = endedMs(next)
    const nextRaw = JSON.stringify(next)
    this.raw.set(next, nextRaw)
    const keys = [
      this.key(id),
      this.k.queued,
      this.k.ended,
      this.k.index,
      this.statusKey(prev?.status ?? next.status),
      this.statusKey(next.status),
      this.typeKey(next.job_type)
    ]
    const argv = [
      prev ? sha1(this.raw.get(prev) ?? JSON.stringify(prev)) : "",
      nextRaw,
      id,
      q === undefined ? "" : String(q),
      e === undefined ? "" : String(e),
      String(Date.parse(next.created_at)),
      this.k.events,
      prev ? "0" : "1",
      prev && scheduledMs(prev) !== undefined ? "1" : "0",
      prev && endedMs(prev) !== undefined ? "1" : "0"
    ]
    return this.writes.push([keys, argv])
  }

  /**
   * Sends the record writes issued so far in this turn now. The redis queue calls it before a
   * BullMQ command that must execute after them (on the shared connection, in order).
   */
  flush(): void {
    this.writes.flush()
  }

  create = async (job: Job): Promise<void> => {
    // A new record: its status set is filled by the "new record" branch (old = new status key).
    const ok = await this.cas(undefined, job)
    if (ok !== 1) throw new Error(`job ${job.job_id} exists`)
  }

  get = async (id: string): Promise<Job | undefined> => {
    const raw = await this.redis.get(this.key(id))
    return raw ? this.parse(raw) : undefined
  }

  private parse(raw: string): Job {
    const job = JSON.parse(raw) as Job
    this.raw.set(job, raw)
    return job
  }

  /** A record from the JSON it was stored as; a later compare-and-set over it hashes `raw` as is. */
  decode(raw: string): Job {
    return this.parse(raw)
  }

  /** The JSON `job` was read from or written as (serialised now when it is neither). */
  encoded(job: Job): string {
    return this.raw.get(job) ?? JSON.stringify(job)
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
      if ((await this.cas(cur, next)) === 1) return { job: next, changed: true }
      cur = undefined
    }
    throw new Error(`job ${id}: too much contention`)
  }

  replace = async (prev: Job, next: Job): Promise<boolean> => (await this.cas(prev, next)) === 1

  private async fetch(ids: ReadonlyArray<string>): Promise<Array<Job>> {
    const out: Array<Job> = []
    for (let i = 0; i < ids.length; i += 500) {
      const raws = await this.redis.mget(ids.slice(i, i + 500).map((id) => this.key(id)))
      for (const r of raws) if (r) out.push(this.parse(r))
    }
    return out
  }

  /** `[id, created ms]` pairs of one sorted set within the query's creation-time bounds. */
  private async range(key: string, q: ListQuery): Promise<Array<[string, number]>> {
    const max = q.created_before !== undefined ? `(${q.created_before}` : "+inf"
    const min = q.created_after !== undefined ? `(${q.created_after}` : "-inf"
    const flat = await this.redis.zrevrangebyscore(key, max, min, "WITHSCORES")
    const out: Array<[string, number]> = []
    for (let i = 0; i < flat.length; i += 2) out.push([flat[i]!, Number(flat[i + 1])])
    return out
  }

  /**
   * The page of `q` when it filters by status or nothing else (no job type, no cursor): the
   * status sets are disjoint, so the total is a sum of ZCOUNTs and the page the newest
   * `offset + limit` of each set merged; nothing is read in proportion to the number of matches,
   * which keeps polling cheap with a large backlog. Same order as `list`: created ms, then id,
   * both descending (ZREVRANGEBYSCORE orders equal scores by member, descending).
   */
  private async listByStatus(q: ListQuery, keys: ReadonlyArray<string>): Promise<ListPage> {
    const max = q.created_before !== undefined ? `(${q.created_before}` : "+inf"
    const min = q.created_after !== undefined ? `(${q.created_after}` : "-inf"
    const want = q.offset + q.limit
    const [counts, heads] = await Promise.all([
      Promise.all(keys.map((k) => this.redis.zcount(k, min, max))),
      Promise.all(keys.map((k) => this.redis.zrevrangebyscore(k, max, min, "WITHSCORES", "LIMIT", 0, want)))
    ])
    const ids: Array<[string, number]> = []
    for (const flat of heads) for (let i = 0; i < flat.length; i += 2) ids.push([flat[i]!, Number(flat[i + 1])])
    ids.sort((a, b) => (b[1] - a[1]) || (a[0] < b[0] ? 1 : a[0] > b[0] ? -1 : 0))
    const page = await this.fetch(ids.slice(q.offset, want).map(([id]) => id))
    return { jobs: applyListQuery(page, { ...q, offset: 0 }).jobs, total: counts.reduce((a, b) => a + b, 0) }
  }

  list = async (q: ListQuery): Promise<ListPage> => {
    const statuses = q.status && q.status.length > 0 ? q.status : undefined
    if ((!q.job_type || q.job_type.length === 0) && !q.after) {
      return this.listByStatus(q, statuses ? [...new Set(statuses.filter((s) => STATUSES.includes(s)))].map((s) => this.statusKey(s)) : [this.k.index])
    }
    // Ids come from the per-status / per-type sets (ids and scores only); records are read for
    // the page alone, so polling for a handful of active jobs stays cheap with many finished ones.
    let ids: Array<[string, number]>
    if (statuses) {
      ids = (await Promise.all(statuses.filter((s) => STATUSES.includes(s)).map((s) => this.range(this.statusKey(s), q)))).flat()
      if (q.job_type && q.job_type.length > 0) {
        const typed = new Set((await Promise.all(q.job_type.map((t) => this.range(this.typeKey(t), q)))).flat().map(([id]) => id))
        ids = ids.filter(([id]) => typed.has(id))
      }
    } else if (q.job_type && q.job_type.length > 0) {
      ids = (await Promise.all(q.job_type.map((t) => this.range(this.typeKey(t), q)))).flat()
    } else {
      ids = await this.range(this.k.index, q)
    }
    ids.sort((a, b) => (b[1] - a[1]) || (a[0] < b[0] ? 1 : a[0] > b[0] ? -1 : 0))
    let start = 0
    if (q.after) {
      const { ms, id } = q.after
      start = ids.findIndex(([i, s]) => s < ms || (s === ms && i < id))
      if (start < 0) start = ids.length
    }
    start += q.offset
    const page = await this.fetch(ids.slice(start, start + q.limit).map(([id]) => id))
    // Records changed between the two reads are filtered again, so a page never shows a job
    // outside the asked statuses (it may then be one short).
    return { jobs: applyListQuery(page, { ...q, after: undefined, offset: 0, limit: q.limit }).jobs, total: ids.length }
  }

  queuedBefore = async (ms: number, fromMs?: number): Promise<ReadonlyArray<Job>> =>
    (await this.fetch(await this.redis.zrangebyscore(this.k.queued, fromMs === undefined ? "-inf" : String(fromMs), `(${ms}`)))
      .filter((j) => j.status === "QUEUED")

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
      const rec = await this.get(id)
      m.del(this.key(id))
      m.zrem(this.k.index, id)
      m.zrem(this.k.queued, id)
      m.zrem(this.k.ended, id)
      for (const s of STATUSES) m.zrem(this.statusKey(s), id)
      if (rec) m.zrem(this.typeKey(rec.job_type), id)
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
        // Notices carry the id only; the record is read once per notice for all listeners.
        this.get(message).then((job) => {
          if (job) for (const l of this.changeListeners) l(job)
        }, () => {})
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
    this.flush()
    this.changeListeners.clear()
    this.cancelListeners.clear()
    this.sub?.disconnect()
    await this.redis.quit().catch(() => this.redis.disconnect())
  }
}
