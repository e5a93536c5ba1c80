/**
 * Dispatch of runnable jobs to workers. A queue carries job ids only (plus a snapshot used as a
 * compare-and-set hint); the job store decides what a delivery means, so a stale or duplicate
 * delivery (a cancelled job, a job already claimed) is dropped at claim time.
 *
 * - `EmbeddedQueue` (here): in-process FIFO with timers for delayed entries and `concurrency`
 *   slots. It keeps nothing on disk: on start the runtime re-enqueues every QUEUED record from
 *   the store.
 * - `RedisQueue` (`RedisQueue.ts`): a BullMQ queue on ioredis.
 */
import type { Job } from "./Job.ts"

/**
 * Runs one delivered job; never rejects (failures are written to the store). `snapshot` is the
 * record as enqueued; `first` is true when the queue knows this is the entry's first delivery
 * (not a redelivery after a stalled worker, nor a hand-back), so `snapshot` is still the stored
 * record unless a cancel or timeout changed it since.
 */
export type Deliver = (id: string, snapshot: Job | undefined, first: boolean) => Promise<void>

/** A dispatch backend. */
export interface JobQueue {
  /**
   * True when the queue's commands travel on the store's connection, so each executes after every
   * record write issued before it: a delivery's completion after the worker's final write (which
   * then need not be awaited), an enqueue after the `create` issued just before it (which then
   * need not be awaited before enqueueing).
   */
  readonly completionOrdered: boolean
  /** Makes `job` (a QUEUED record) runnable after `delayMs` milliseconds. */
  readonly enqueue: (job: Job, delayMs: number) => Promise<void>
  /** Drops a pending delivery of `job`, best effort (a delivery that slips through is ignored at claim). */
  readonly remove: (job: Job) => Promise<void>
  /**
   * Re-enqueues those of `jobs` (QUEUED records) that have no pending delivery: the process that
   * wrote the record died before enqueueing it. Resolves how many were re-enqueued.
   */
  readonly ensure: (jobs: ReadonlyArray<Job>) => Promise<number>
  /** Starts delivering to `deliver`, at most `concurrency` jobs at once in this process. */
  readonly start: (deliver: Deliver, concurrency: number) => Promise<void>
  /** Stops delivering; resolves when running deliveries have returned. */
  readonly close: () => Promise<void>
}

/** In-process queue of the embedded backend. */
export class EmbeddedQueue implements JobQueue {
  readonly completionOrdered = false
  private readonly ready: Array<{ id: string; snapshot: Job }> = []
  private head = 0
  private readonly pending = new Set<string>()
  private readonly timers = new Map<string, NodeJS.Timeout>()
  private deliver: Deliver | undefined
  private slots = 0
  private running = 0
  private closed = false
  private readonly idle: Array<() => void> = []

  enqueue = async (job: Job, delayMs: number): Promise<void> => {
    const id = job.job_id
    if (this.closed || this.pending.has(id)) return
    this.pending.add(id)
    if (delayMs > 0) {
      this.timers.set(id, setTimeout(() => {
        this.timers.delete(id)
        this.ready.push({ id, snapshot: job })
        this.pump()
      }, delayMs))
    } else {
      this.ready.push({ id, snapshot: job })
      this.pump()
    }
  }

  remove = async (job: Job): Promise<void> => {
    const t = this.timers.get(job.job_id)
    if (t) {
      clearTimeout(t)
      this.timers.delete(job.job_id)
      this.pending.delete(job.job_id)
    }
    // An entry already in `ready` stays; the claim drops it because the record is no longer QUEUED.
  }

  // In-process entries cannot go missing while the process lives; startup recovery covers restarts.
  ensure = async (): Promise<number> => 0

  start = async (deliver: Deliver, concurrency: number): Promise<void> => {
    this.deliver = deliver
    this.slots = concurrency
    this.pump()
  }

  private pump(): void {
    while (this.deliver && !this.closed && this.running < this.slots && this.head < this.ready.length) {
      const { id, snapshot } = this.ready[this.head++]!
      if (this.head > 1024 && this.head * 2 > this.ready.length) {
        this.ready.splice(0, this.head)
        this.head = 0
      }
      this.pending.delete(id)
      this.running++
      this.deliver(id, snapshot, false).finally(() => {
        this.running--
        if (this.running === 0) for (const f of this.idle.splice(0)) f()
        this.pump()
      })
    }
  }

  close = async (): Promise<void> => {
    this.closed = true
    for (const t of this.timers.values()) clearTimeout(t)
    this.timers.clear()
    if (this.running > 0) await new Promise<void>((r) => this.idle.push(r))
  }
}
