/**
 * Where job records live: the source of truth for a job's state on both backends. The queue only
 * dispatches ids; every transition is an atomic read-modify-write here, conditioned on the state
 * the writer expects, so a cancel racing a completion, or two sweepers, cannot both win.
 *
 * `FileJobStore` (embedded backend) keeps records in memory and appends every change to
 * `<dir>/jobs.log` with a synchronous write before the caller continues, so a killed process loses
 * nothing it acknowledged. `RedisJobStore` (in `RedisJobStore.ts`) shares records between the API
 * process and workers on other machines.
 */
import { EventEmitter } from "node:events"
import * as fs from "node:fs"
import * as path from "node:path"
import { isTerminal, type Job, type JobStatus } from "./Job.ts"

/** Filters and paging of `GET /api/v1/jobs`; times in epoch milliseconds. */
export interface ListQuery {
  readonly status?: ReadonlyArray<JobStatus>
  readonly job_type?: ReadonlyArray<string>
  /** Exclusive bounds on `created_at`. */
  readonly created_after?: number
  readonly created_before?: number
  readonly limit: number
  readonly offset: number
  /** Resume after this job (newest-first order): items strictly older than it. */
  readonly after?: { readonly ms: number; readonly id: string }
}

/** One page, newest first; `total` counts every match regardless of paging. */
export interface ListPage {
  readonly jobs: ReadonlyArray<Job>
  readonly total: number
}

/** The transition function of `update`: the new record, or `undefined` to leave it unchanged. */
export type Transition = (job: Job) => Job | undefined

/** Result of `update`: the record now stored and whether this call changed it. */
export interface Updated {
  readonly job: Job
  readonly changed: boolean
}

/** Storage of job records with change notification and a cancel signal to running workers. */
export interface JobStore {
  /** Stores a new record; fails if the id exists. */
  readonly create: (job: Job) => Promise<void>
  readonly get: (id: string) => Promise<Job | undefined>
  /**
   * Applies `fn` atomically to the current record. `known` is the caller's last copy: backends
   * that compare-and-set try it first to save a read. Resolves `undefined` when the id is unknown.
   */
  readonly update: (id: string, fn: Transition, known?: Job) => Promise<Updated | undefined>
  /**
   * Writes `next` only if the stored record is exactly `prev` (one compare-and-set, no re-read,
   * no retry); resolves whether it was written. Offered by stores whose writes are ordered with
   * the queue's (`JobQueue.completionOrdered`); the worker uses it to defer its claim.
   */
  readonly replace?: (prev: Job, next: Job) => Promise<boolean>
  readonly list: (q: ListQuery) => Promise<ListPage>
  /** QUEUED jobs whose `scheduled_at` is before `ms` and not before `fromMs` (default: any). */
  readonly queuedBefore: (ms: number, fromMs?: number) => Promise<ReadonlyArray<Job>>
  /** Terminal jobs that ended before `ms` (retention candidates). */
  readonly endedBefore: (ms: number) => Promise<ReadonlyArray<Job>>
  /** Every QUEUED or PROCESSING job (startup recovery of the embedded backend). */
  readonly active: () => Promise<ReadonlyArray<Job>>
  readonly delete: (ids: ReadonlyArray<string>) => Promise<void>
  /** Calls `listener` with every stored change (any process on a shared store). Returns unsubscribe. */
  readonly onChange: (listener: (job: Job) => void) => Promise<() => void>
  /** Tells every worker process that job `id` was cancelled. */
  readonly publishCancel: (id: string) => Promise<void>
  readonly onCancel: (listener: (id: string) => void) => Promise<() => void>
  readonly close: () => Promise<void>
}

/** The time a record ended (terminal timestamp) in ms, or undefined while active. */
export const endedMs = (job: Job): number | undefined => {
  if (!isTerminal(job.status)) return undefined
  const t = job.completed_at ?? job.failed_at ?? job.cancelled_at
  return t ? Date.parse(t) : undefined
}

/** When a QUEUED record becomes runnable, in ms (its `scheduled_at`, else its last history entry). */
export const scheduledMs = (job: Job): number | undefined =>
  job.status === "QUEUED"
    ? Date.parse(job.scheduled_at ?? job.history[job.history.length - 1]?.timestamp ?? job.created_at)
    : undefined

/** Newest-first comparison by `created_at`, then id (ids embed creation time too). */
const newestFirst = (a: Job, b: Job): number => {
  const d = Date.parse(b.created_at) - Date.parse(a.created_at)
  return d !== 0 ? d : a.job_id < b.job_id ? 1 : a.job_id > b.job_id ? -1 : 0
}

/** Filters, orders newest first and pages a set of records (shared by both stores). */
export const applyListQuery = (jobs: Iterable<Job>, q: ListQuery): ListPage => {
  const status = q.status && q.status.length > 0 ? new Set(q.status) : undefined
  const types = q.job_type && q.job_type.length > 0 ? new Set(q.job_type) : undefined
  const matches: Array<Job> = []
  for (const j of jobs) {
    if (status && !status.has(j.status)) continue
    if (types && !types.has(j.job_type)) continue
    const c = Date.parse(j.created_at)
    if (q.created_after !== undefined && !(c > q.created_after)) continue
    if (q.created_before !== undefined && !(c < q.created_before)) continue
    matches.push(j)
  }
  matches.sort(newestFirst)
  let start = 0
  if (q.after) {
    const { ms, id } = q.after
    start = matches.findIndex((j) => {
      const c = Date.parse(j.created_at)
      return c < ms || (c === ms && j.job_id < id)
    })
    if (start < 0) start = matches.length
  }
  start += q.offset
  return { jobs: matches.slice(start, start + q.limit), total: matches.length }
}

/**
 * The embedded backend's store: an in-memory map persisted as an append-only JSON-lines log.
 * Each change is one line written with `fs.writeSync` before `update` returns, so it survives a
 * killed process (not a power cut: no fsync, by choice, for throughput). The log is compacted on
 * open and whenever it holds four times more lines than live records.
 */
export class FileJobStore implements JobStore {
  private readonly jobs = new Map<string, Job>()
  private readonly events = new EventEmitter()
  private readonly file: string
  private fd: number
  private lines = 0

  private readonly lock: string

  /**
   * Opens (creating) the store in `dir`; replays and compacts the log. Throws on I/O errors and
   * when another live process holds the store (`<dir>/jobs.lock` names its pid): two writers
   * would interleave their logs. A lock left by a dead process is taken over.
   */
  constructor(dir: string) {
    fs.mkdirSync(dir, { recursive: true })
    this.lock = path.join(dir, "jobs.lock")
    takeLock(this.lock)
    this.file = path.join(dir, "jobs.log")
    this.events.setMaxListeners(0)
    if (fs.existsSync(this.file)) {
      for (const line of fs.readFileSync(this.file, "utf8").split("\n")) {
        if (!line) continue
        let rec: unknown
        try {
          rec = JSON.parse(line)
        } catch {
          continue // a line cut short by a kill mid-write: the change before it stands
        }
        const del = (rec as { $del?: string }).$del
        if (typeof del === "string") this.jobs.delete(del)
        else this.jobs.set((rec as Job).job_id, rec as Job)
      }
    }
    this.fd = this.compact()
  }

  private compact(): number {
    const tmp = `${this.file}.tmp`
    const body = [...this.jobs.values()].map((j) => JSON.stringify(j) + "\n").join("")
    fs.writeFileSync(tmp, body)
    fs.renameSync(tmp, this.file)
    this.lines = this.jobs.size
    return fs.openSync(this.file, "a")
  }

  private append(line: string): void {
    fs.writeSync(this.fd, line + "\n")
    if (++this.lines > 4 * this.jobs.size + 1000) {
      fs.closeSync(this.fd)
      this.fd = this.compact()
    }
  }

  create = async (job: Job): Promise<void> => {
    if (this.jobs.has(job.job_id)) throw new Error(`job ${job.job_id} exists`)
    this.jobs.set(job.job_id, job)
    this.append(JSON.stringify(job))
    this.events.emit("change", job)
  }

  get = async (id: string): Promise<Job | undefined> => this.jobs.get(id)

  update = async (id: string, fn: Transition): Promise<Updated | undefined> => {
    const cur = this.jobs.get(id)
    if (!cur) return undefined
    const next = fn(cur)
    if (!next) return { job: cur, changed: false }
    this.jobs.set(id, next)
    this.append(JSON.stringify(next))
    this.events.emit("change", next)
    return { job: next, changed: true }
  }

  list = async (q: ListQuery): Promise<ListPage> => applyListQuery(this.jobs.values(), q)

  queuedBefore = async (ms: number, fromMs = -Infinity): Promise<ReadonlyArray<Job>> =>
    [...this.jobs.values()].filter((j) => {
      if (j.status !== "QUEUED") return false
      const t = scheduledMs(j)!
      return t < ms && t >= fromMs
    })

  endedBefore = async (ms: number): Promise<ReadonlyArray<Job>> =>
    [...this.jobs.values()].filter((j) => {
      const e = endedMs(j)
      return e !== undefined && e < ms
    })

  active = async (): Promise<ReadonlyArray<Job>> =>
    [...this.jobs.values()].filter((j) => j.status === "QUEUED" || j.status === "PROCESSING" || j.status === "PENDING")

  delete = async (ids: ReadonlyArray<string>): Promise<void> => {
    for (const id of ids) {
      if (this.jobs.delete(id)) this.append(JSON.stringify({ $del: id }))
    }
  }

  onChange = async (listener: (job: Job) => void): Promise<() => void> => {
    this.events.on("change", listener)
    return () => this.events.off("change", listener)
  }

  publishCancel = async (id: string): Promise<void> => {
    this.events.emit("cancel", id)
  }

  onCancel = async (listener: (id: string) => void): Promise<() => void> => {
    this.events.on("cancel", listener)
    return () => this.events.off("cancel", listener)
  }

  close = async (): Promise<void> => {
    try {
      fs.closeSync(this.fd)
    } catch {
      // already closed
    }
    try {
      if (fs.readFileSync(this.lock, "utf8").trim() === String(process.pid)) fs.rmSync(this.lock)
    } catch {
      // gone already
    }
    this.events.removeAllListeners()
  }
}

/** Creates `file` holding our pid; replaces it when its pid is not a live process. Throws when it is. */
const takeLock = (file: string): void => {
  for (let tries = 0; tries < 3; tries++) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: "wx" })
      return
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e
    }
    const pid = Number(fs.readFileSync(file, "utf8").trim())
    if (pid === process.pid) return
    let alive = false
    try {
      process.kill(pid, 0)
      alive = true
    } catch (e) {
      alive = (e as NodeJS.ErrnoException).code === "EPERM"
    }
    if (alive && pid > 0) throw new Error(`job store ${path.dirname(file)} is in use by process ${pid}`)
    fs.rmSync(file, { force: true })
  }
  throw new Error(`could not lock ${file}`)
}
