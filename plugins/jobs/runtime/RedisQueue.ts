/**
 * `RedisQueue`, the `JobQueue` of the redis backend (see `Queue.ts` for the contract): a BullMQ
 * queue on ioredis. A BullMQ job carries one of our jobs (id `<job_id>.<attempt>`) or a batch:
 * jobs made runnable in the same event-loop turn (up to `redis.batch_max`, a burst of
 * submissions) travel together, which divides BullMQ's per-job work (add, move to active, move
 * to finished) by the batch size. Retries are BullMQ jobs of their own with a delay, because the
 * retry policy (kinds, history, attempts) is ours, not BullMQ's. A worker process that dies
 * mid-job loses its BullMQ lock; BullMQ's stalled check puts the job back and another worker
 * claims it (delivery is at least once; the claim's compare-and-set drops what already ran).
 *
 * The BullMQ worker fetches deliveries ahead of the running ones (`fetchAhead`,
 * `PREFETCH_WAIT_MS`), so a finishing job's completion, BullMQ's finish of it and the next job's
 * claim leave in one write instead of waiting a round trip for BullMQ's next job. Jobs that find
 * no free slot within `PREFETCH_WAIT_MS` are handed back: the whole BullMQ job when none of its
 * jobs started, else the rest in a new BullMQ job, which the hash `<prefix>:jobs:batched` then
 * names for them, so a later delivery of the first one (after a stall) skips them.
 */
import { randomBytes } from "node:crypto"
import { DelayedError, Queue as BullQueue, Worker as BullWorker } from "bullmq"
import { Redis } from "ioredis"
import type { Job } from "./Job.ts"
import type { Deliver, JobQueue } from "./Queue.ts"
import type { RedisSettings } from "./Settings.ts"
import { TurnBatch } from "./TurnBatch.ts"

/**
 * How long a fetched-ahead delivery waits for a free slot before it is handed back to the queue
 * (ms): a process busy with long jobs must not sit on jobs another worker process could run.
 */
export const PREFETCH_WAIT_MS = 1_000

/**
 * How many deliveries a BullMQ worker of `concurrency` slots fetches ahead of its running jobs: at
 * least 16. Short jobs free their slot long before BullMQ's next fetch (one round trip per
 * finished delivery) comes back, so the fetched-ahead deliveries are what keeps the slots busy;
 * in the jobs bench (trivial jobs, 4 slots) 4 ahead completed 2,480 jobs/s and 20 ahead 2,910.
 * A process whose slots stay busy hands them back after `PREFETCH_WAIT_MS` and fetches no more
 * ahead until a slot frees.
 */
export const fetchAhead = (concurrency: number): number => Math.max(concurrency, 16)

/**
 * At most `size` holders at once; `acquire` waits in FIFO order up to a deadline. A release hands
 * the slot straight to the oldest waiter, in the releasing call's tick.
 */
class Slots {
  private held = 0
  private closed = false
  private readonly waiters: Array<{ grant: (ok: boolean) => void; timer: NodeJS.Timeout }> = []

  constructor(private readonly size: number) {}

  /** Resolves true with a slot held, false when none freed within `waitMs` or on `abort`. */
  acquire(waitMs: number): Promise<boolean> {
    if (this.closed) return Promise.resolve(false)
    if (this.held < this.size) {
      this.held++
      return Promise.resolve(true)
    }
    return new Promise((resolve) => {
      const w = {
        grant: (ok: boolean) => {
          clearTimeout(w.timer)
          resolve(ok)
        },
        timer: setTimeout(() => {
          this.waiters.splice(this.waiters.indexOf(w), 1)
          resolve(false)
        }, waitMs)
      }
      this.waiters.push(w)
    })
  }

  release(): void {
    const next = this.waiters.shift()
    if (next) next.grant(true)
    else this.held--
  }

  /** Turns every waiter, and every later `acquire`, away (false). */
  abort(): void {
    this.closed = true
    for (const w of this.waiters.splice(0)) w.grant(false)
  }
}

/**
 * One job carried by a BullMQ job: its id and the record as enqueued, as the JSON the store wrote
 * (`raw`; BullMQ then carries one string, and the worker's compare-and-set needs no
 * re-serialising) or, in entries of earlier versions, as an object (`snapshot`).
 */
interface Carried {
  readonly id: string
  readonly raw?: string
  readonly snapshot?: Job
}

/** What the redis queue uses of the record store it shares a connection with. */
export interface StoreLink {
  readonly client: Redis
  /** Sends the record writes the store holds back until the end of the turn. */
  flush(): void
  /** The JSON a record was written as (serialised again only when unknown). */
  encoded(job: Job): string
  /** A record from the JSON it was stored as, remembered as such for compare-and-set. */
  decode(raw: string): Job
}

/**
 * The data of one of our BullMQ jobs: the jobs it carries (one, or a batch submitted in the same
 * turn). Entries written before batching carried `{ id, snapshot }`; both are read.
 */
interface EntryData {
  readonly jobs?: ReadonlyArray<Carried>
  /** True when the `batched` hash names this BullMQ job for its jobs (batches and hand-backs). */
  readonly mapped?: boolean
  readonly id?: string
  readonly snapshot?: Job
}

// A batch's BullMQ id is its first job's `<job_id>.<attempt>` plus this process's random tag and a
// counter, unique even when a job handed back is again the first of a batch, in any process.
const BATCH_TAG = randomBytes(6).toString("hex")
let batchCount = 0

/** BullMQ queue of the redis backend; see the module comment. */
export class RedisQueue implements JobQueue {
  private readonly connection: Redis
  /** True when `connection` is ours to close (not the store's). */
  private readonly ownConnection: boolean
  private readonly queue: BullQueue
  private worker: BullWorker | undefined
  private workerConnection: Redis | undefined
  private slots: Slots | undefined
  /** Jobs enqueued in this turn, added as one BullMQ job when it ends. */
  private readonly batch: TurnBatch<Job, void>
  /** Adds issued and not answered yet (`close` waits for them). */
  private readonly adding = new Set<Promise<void>>()
  /**
   * Hash `<prefix>:jobs:batched`: job id -> id of the BullMQ job carrying it, for jobs carried in
   * a batch (a job alone in its BullMQ job has the id `<job_id>.<attempt>` and no entry here).
   */
  private readonly batchedKey: string

  readonly completionOrdered: boolean

  /**
   * Connects to `settings.url`; the BullMQ queue is `jobs` under prefix `settings.prefix`.
   * `store`: the record store's connection, shared by the BullMQ queue and worker (see
   * `completionOrdered`), and its `flush`, which sends the record writes it holds back until the
   * end of the turn: called before every BullMQ command that must execute after them (a
   * submission's enqueue after its record, a delivery's completion after its outcome). Without it
   * both get their own connection.
   */
  constructor(private readonly settings: RedisSettings, private readonly store?: StoreLink) {
    this.completionOrdered = store !== undefined
    this.ownConnection = store === undefined
    this.connection = store?.client ?? new Redis(settings.url, { maxRetriesPerRequest: null })
    this.queue = new BullQueue("jobs", { connection: this.connection, prefix: settings.prefix })
    this.batchedKey = `${settings.prefix}:jobs:batched`
    this.batch = new TurnBatch(settings.batch_max, (jobs) => this.add(jobs, 0).then(() => []))
  }

  private static bullId(job: Job): string {
    return `${job.job_id}.${job.attempts}`
  }

  /**
   * Jobs runnable now are batched: those enqueued in the same event-loop turn (up to
   * `settings.batch_max`) travel as one BullMQ job, added when the turn ends. Delayed ones (retries)
   * get a BullMQ job each.
   */
  enqueue = (job: Job, delayMs: number): Promise<void> => {
    if (delayMs > 0 || this.settings.batch_max <= 1) return this.add([job], delayMs)
    return this.batch.push(job)
  }

  /**
   * Adds one BullMQ job carrying `jobs`: id `<job_id>.<attempt>` for one job; for several a fresh id.
   * The `batched` hash names it for each of its jobs (written first, on the same connection) when
   * there are several, or when `handBack` (the jobs leave another BullMQ job that still lists them).
   */
  private add(jobs: ReadonlyArray<Job>, delayMs: number, handBack = false): Promise<void> {
    this.store?.flush()
    const first = jobs[0]!
    const id = jobs.length === 1 ? RedisQueue.bullId(first) : `${RedisQueue.bullId(first)}.${BATCH_TAG}${(batchCount++).toString(36)}`
    const map = jobs.length > 1 || handBack
    const mapped = map ? this.connection.hset(this.batchedKey, ...jobs.flatMap((j) => [j.job_id, id])) : undefined
    const encode = (j: Job) => this.store?.encoded(j) ?? JSON.stringify(j)
    const data: EntryData = { jobs: jobs.map((j) => ({ id: j.job_id, raw: encode(j) })), ...(map ? { mapped: true } : {}) }
    const added = this.queue.add("job", data, {
      jobId: id,
      delay: delayMs > 0 ? Math.round(delayMs) : undefined,
      removeOnComplete: true,
      removeOnFail: true
    })
    const p = Promise.all([mapped, added]).then(() => undefined)
    this.adding.add(p)
    const done = () => {
      this.adding.delete(p)
    }
    p.then(done, done)
    return p
  }

  ensure = async (jobs: ReadonlyArray<Job>): Promise<number> => {
    if (jobs.length === 0) return 0
    const entry = (id: string) => `${this.settings.prefix}:jobs:${id}`
    // A job has a pending delivery when its own BullMQ job exists, or the batch the `batched` hash
    // names for it does.
    const p = this.connection.pipeline()
    for (const j of jobs) p.exists(entry(RedisQueue.bullId(j)))
    p.hmget(this.batchedKey, ...jobs.map((j) => j.job_id))
    const found = (await p.exec()) ?? []
    const batches = (found[jobs.length]?.[1] ?? []) as Array<string | null>
    const check = this.connection.pipeline()
    const checked: Array<number> = []
    for (let i = 0; i < jobs.length; i++) {
      if (found[i]?.[1] !== 0) continue
      const b = batches[i]
      if (b) {
        check.exists(entry(b))
        checked.push(i)
      }
    }
    const inBatch = checked.length > 0 ? ((await check.exec()) ?? []) : []
    const carried = new Set(checked.filter((_, k) => inBatch[k]?.[1] === 1))
    let added = 0
    for (let i = 0; i < jobs.length; i++) {
      if (found[i]?.[1] !== 0 || carried.has(i)) continue
      await this.add([jobs[i]!], 0)
      added++
    }
    return added
  }

  /**
   * Best effort, like BullMQ's own remove: a BullMQ job already active keeps its copy, and a
   * delivery that slips through is dropped at claim. A job carried in a batch is taken out of the
   * batch's data (the whole BullMQ job is removed when none is left); two removals from one batch
   * at the same moment may leave one of them in it, to be dropped at claim.
   */
  remove = async (job: Job): Promise<void> => {
    // Fails for an active job (locked); the claim check covers that case.
    await this.queue.remove(RedisQueue.bullId(job)).catch(() => 0)
    const batch = await this.connection.hget(this.batchedKey, job.job_id)
    if (!batch) return
    const bj = await this.queue.getJob(batch)
    const data = bj?.data as EntryData | undefined
    if (!bj || !data?.jobs) return
    const jobs = data.jobs.filter((c) => c.id !== job.job_id)
    if (jobs.length === data.jobs.length) return
    if (jobs.length === 0) await this.queue.remove(batch).catch(() => 0)
    else await bj.updateData({ ...data, jobs }).catch(() => {})
    await this.connection.hdel(this.batchedKey, job.job_id)
  }

  /**
   * Those of `carried` that BullMQ job `entryId` still carries on a later delivery: a job handed
   * back from it was re-added in another BullMQ job (the `batched` hash names that one).
   */
  private async stillCarried(entryId: string, carried: ReadonlyArray<Carried>): Promise<ReadonlyArray<Carried>> {
    const at = await this.connection.hmget(this.batchedKey, ...carried.map((c) => c.id))
    return carried.filter((_, i) => at[i] === null || at[i] === entryId)
  }

  start = async (deliver: Deliver, concurrency: number): Promise<void> => {
    const lockMs = Math.max(200, Math.round(this.settings.lock_s * 1000))
    // Ours to close only when not shared with the store.
    if (!this.store) this.workerConnection = new Redis(this.settings.url, { maxRetriesPerRequest: null })
    const slots = new Slots(concurrency)
    this.slots = slots
    const ahead = concurrency + fetchAhead(concurrency)
    this.worker = new BullWorker("jobs", async (bj, token) => {
      const data = bj.data as EntryData
      const decode = (raw: string): Job => (this.store ? this.store.decode(raw) : JSON.parse(raw) as Job)
      const all: ReadonlyArray<Carried> = (data.jobs ?? (data.id ? [{ id: data.id, snapshot: data.snapshot }] : []))
        .map((c) => (c.raw !== undefined ? { id: c.id, snapshot: decode(c.raw) } : c))
      // `attemptsStarted` counts BullMQ's moves to active: above 1 after a stall or a hand-back.
      const first = bj.attemptsStarted <= 1 && bj.stalledCounter === 0
      const carried = first || !data.mapped ? all : await this.stillCarried(bj.id!, all)
      const runs: Array<Promise<void>> = []
      const ran: Array<string> = []
      const left: Array<Carried> = []
      // Each carried job takes a slot as one frees, up to PREFETCH_WAIT_MS; those that get none go
      // back to the queue for any worker (their records are still QUEUED, no attempt counted).
      await Promise.all(carried.map((c) =>
        slots.acquire(PREFETCH_WAIT_MS).then((ok) => {
          if (!ok) {
            left.push(c)
            return
          }
          ran.push(c.id)
          runs.push(deliver(c.id, c.snapshot, first).finally(() => {
            slots.release()
            if (this.worker!.concurrency !== ahead) this.worker!.concurrency = ahead
          }))
        })
      ))
      if (left.length > 0) {
        // Fetching ahead stops until a slot frees, or this process would take them straight back.
        this.worker!.concurrency = concurrency
        if (runs.length === 0) {
          await bj.moveToDelayed(Date.now(), token)
          throw new DelayedError()
        }
        const back = left.flatMap((c) => (c.snapshot ? [c.snapshot] : []))
        if (back.length > 0) await this.add(back, 0, true)
      }
      await Promise.all(runs)
      // The outcomes written by the deliveries go out before BullMQ's completion of this job.
      this.store?.flush()
      if (data.mapped) await this.connection.hdel(this.batchedKey, ...ran)
    }, {
      connection: this.store?.client ?? this.workerConnection!,
      prefix: this.settings.prefix,
      // `concurrency` run at once (the slots); `fetchAhead` more are fetched, waiting for one.
      concurrency: ahead,
      lockDuration: lockMs,
      stalledInterval: Math.max(100, Math.round(lockMs / 2)),
      // A job whose worker died is always handed out again; our attempt count bounds re-runs.
      maxStalledCount: 1_000_000,
      removeOnComplete: { count: 0 },
      removeOnFail: { count: 0 }
    })
    this.worker.on("error", () => {
      // Connection hiccups are retried by ioredis; BullMQ reports them here and must not crash.
    })
    await this.worker.waitUntilReady()
  }

  close = async (): Promise<void> => {
    this.batch.flush()
    await Promise.allSettled([...this.adding])
    this.slots?.abort()
    await this.worker?.close()
    this.workerConnection?.disconnect()
    await this.queue.close()
    if (this.ownConnection) this.connection.disconnect()
  }
}
