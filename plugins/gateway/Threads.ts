/**
 * The thread policy of the llama-cpp engines: how many CPU threads each one generates with, from
 * the cores this process may really run on.
 *
 * llama.cpp's CPU threads meet at a barrier after every operation of every token and spin while
 * they wait. With more runnable threads than free cores one of them is always descheduled and
 * the others spin through their time slices: on the 2-core reference machine with another
 * process busy on one core, 4 threads (node-llama-cpp's default there: max(cores, 4)) took
 * 75-104 s for a 200-token reply that 1 thread writes in 0.07 s. So the default leaves room:
 *
 *   cores    = physical cores among the CPUs this process may use (its affinity mask), capped by
 *              the cgroup CPU quota (v2 `cpu.max`, v1 `cpu.cfs_quota_us`), else
 *              `os.availableParallelism()`;
 *   reserved = `reserved_cores`, default max(1, floor(physical cores / 4)): the event loop
 *              serving HTTP, and the platform's other CPU users (chip-sim and jobs workers), which
 *              the kernel does not expose to plugins, so this is a share of the machine;
 *   threads  = max(1, floor((cores - reserved) / CPU llama-cpp engines)), per engine.
 */
import * as fs from "node:fs"
import * as os from "node:os"

/** What the machine offers this process, as read from Linux (`source` says from where). */
export interface CpuFacts {
  /** CPUs this process may run on (the affinity mask; `os.availableParallelism()`). */
  readonly logical: number
  /** Distinct physical cores among them. */
  readonly physical: number
  /** The cgroup CPU quota in cores (`cpu.max` quota / period), when one is set. */
  readonly quota: number | undefined
  /** `sysfs` when the topology was read, `availableParallelism` when it was not. */
  readonly source: "sysfs" | "availableParallelism"
}

/** One engine's thread counts and how they were chosen. */
export interface ThreadPolicy {
  readonly threads: number
  readonly threadsBatch: number
  /** `config` when set in platform.yaml, else `default`. */
  readonly from: "config" | "default"
  /** The cores the default was computed from (after the quota) and the reserve taken off. */
  readonly cores: number
  readonly reserved: number
}

/** Parses a Linux CPU list (`0-3,8,10-11`) into CPU numbers. */
export const parseCpuList = (list: string): number[] =>
  list.trim().split(",").filter(Boolean).flatMap((part) => {
    const [a, b] = part.split("-").map(Number)
    if (!Number.isInteger(a)) return []
    return b === undefined ? [a!] : Array.from({ length: b - a! + 1 }, (_, i) => a! + i)
  })

const read = (file: string): string | undefined => {
  try {
    return fs.readFileSync(file, "utf8")
  } catch {
    return undefined
  }
}

/**
 * The tightest CPU quota, in cores, of this process's cgroup and its ancestors: cgroup v2's
 * `cpu.max` (quota period, or `max`) along the `0::` path of `/proc/self/cgroup`, and cgroup v1's
 * `cpu.cfs_quota_us` / `cpu.cfs_period_us` (-1: none) along the `cpu` controller's path.
 * Undefined when none is set or nothing can be read.
 */
export const cgroupQuota = (): number | undefined => {
  const quotas: number[] = []
  const ancestors = (p: string) => p.split("/").filter(Boolean).reduce<string[]>((acc, part) => [...acc, `${acc.at(-1) ?? ""}/${part}`], [""])
  for (const line of (read("/proc/self/cgroup") ?? "").split("\n")) {
    const [, controllers, cgPath] = /^\d+:([^:]*):(.*)$/.exec(line.trim()) ?? []
    if (cgPath === undefined) continue
    if (controllers === "") {
      for (const dir of ancestors(cgPath)) {
        const [q, period] = read(`/sys/fs/cgroup${dir}/cpu.max`)?.trim().split(/\s+/) ?? []
        if (q !== undefined && q !== "max" && Number(period) > 0) quotas.push(Number(q) / Number(period))
      }
    } else if (controllers!.split(",").includes("cpu")) {
      for (const dir of ancestors(cgPath)) {
        for (const mount of ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"]) {
          const q = Number(read(`${mount}${dir}/cpu.cfs_quota_us`))
          const period = Number(read(`${mount}${dir}/cpu.cfs_period_us`))
          if (q > 0 && period > 0) quotas.push(q / period)
        }
      }
    }
  }
  return quotas.length > 0 ? Math.min(...quotas) : undefined
}

/**
 * The CPUs this process may use and their physical cores: `/proc/self/status` (Cpus_allowed_list),
 * `/sys/devices/system/cpu/cpuN/topology/{physical_package_id,core_id}`, and the cgroup CPU quota
 * (`cgroupQuota`). Anything unreadable (not Linux) falls back to
 * `os.availableParallelism()` for both counts.
 */
export const cpuFacts = (): CpuFacts => {
  const logical = os.availableParallelism?.() ?? os.cpus().length
  const quota = cgroupQuota()
  const allowed = /^Cpus_allowed_list:\s*(.+)$/m.exec(read("/proc/self/status") ?? "")?.[1]
  const cpus = allowed ? parseCpuList(allowed) : []
  const cores = new Set<string>()
  for (const cpu of cpus) {
    const dir = `/sys/devices/system/cpu/cpu${cpu}/topology`
    const pkg = read(`${dir}/physical_package_id`)?.trim()
    const core = read(`${dir}/core_id`)?.trim()
    if (pkg === undefined || core === undefined) return { logical, physical: logical, quota, source: "availableParallelism" }
    cores.add(`${pkg}:${core}`)
  }
  return cores.size > 0
    ? { logical, physical: Math.min(cores.size, logical), quota, source: "sysfs" }
    : { logical, physical: logical, quota, source: "availableParallelism" }
}

/** The default reserve: max(1, floor(physical / 4)) cores for everything but the engines. */
export const defaultReserve = (facts: CpuFacts): number => Math.max(1, Math.floor(facts.physical / 4))

/**
 * The thread counts of one engine: `threads` / `threads_batch` from its config when set (> 0),
 * else the policy's default: the physical cores (capped by the quota) less `reserved`, shared
 * among `cpuEngines` CPU engines, at least 1. `threads_batch` defaults to `threads`.
 */
export const threadPolicy = (
  facts: CpuFacts,
  engine: { readonly threads?: number | undefined; readonly threads_batch?: number | undefined },
  opts: { readonly reserved?: number | undefined; readonly cpuEngines: number }
): ThreadPolicy => {
  const cores = Math.max(1, Math.min(facts.physical, facts.quota !== undefined ? Math.ceil(facts.quota) : Infinity))
  const reserved = opts.reserved ?? defaultReserve(facts)
  const fallback = Math.max(1, Math.floor((cores - reserved) / Math.max(1, opts.cpuEngines)))
  const threads = engine.threads && engine.threads > 0 ? engine.threads : fallback
  const threadsBatch = engine.threads_batch && engine.threads_batch > 0 ? engine.threads_batch : threads
  return { threads, threadsBatch, from: engine.threads && engine.threads > 0 ? "config" : "default", cores, reserved }
}
