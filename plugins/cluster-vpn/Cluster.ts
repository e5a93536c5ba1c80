/**
 * The cluster: 18 devices (1 master, 1 gateway, 16 workers), VPN banks over the workers, and
 * their health (research-jobs spec: "VPN bank", "Device registry entry", VPN bank states).
 * State lives in `<data>/cluster.json` (devices and banks; written atomically on every change);
 * live processes belong to the driver, and banks left active by a previous run are brought up
 * again by `restore`.
 *
 * Every mutation runs under one lock and either completes or leaves nothing behind: a bank whose
 * workers or load balancer fail to come up is torn down again before the error is answered.
 * Errors are `ClusterError` (status and code for the API).
 */
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import type { GeoFilter } from "../jobs/Contract.ts"
import { type Inventory, type Profile, selectByString } from "./Inventory.ts"
import {
  type Bank,
  type BankCreate,
  type BankHealth,
  type BankUpdate,
  ClusterError,
  type Device,
  deviceOfWorker,
  DEVICES,
  type Driver,
  type FrontendSpec,
  type MutableDevice,
  type PingResult,
  type WorkerAssignment,
  WORKERS,
  type WorkerUp
} from "./Model.ts"

/** What the cluster needs besides its driver. */
export interface ClusterOptions {
  readonly file: string
  readonly inventory: Inventory
  readonly driver: Driver
  readonly ports: { readonly from: number; readonly to: number }
  /** Device addresses of the layout: lan IP of the master, gateway, and worker `n`. */
  readonly layout: { readonly master: string; readonly gateway: string; readonly worker: (n: number) => string }
  /** Logs one line (warnings of background work). */
  readonly log: (message: string) => void
}

type MutableAssignment = { -readonly [K in keyof WorkerAssignment]: WorkerAssignment[K] }
type MutableBank = { -readonly [K in keyof Bank]: K extends "worker_assignments" ? Array<MutableAssignment> : Bank[K] }

/** The bank tag of a display name: lower-cased, spaces removed (spec). */
export const tagOf = (name: string) => name.toLowerCase().replace(/\s+/g, "")

/** The spec's `filter` object of a parsed filter. */
const filterObject = (f: GeoFilter) => ({ country: f.country!, state: f.state, type: f.type })

/** A fresh WireGuard public key (X25519, base64 of the raw 32 bytes), as `wg pubkey` prints. */
const wgPublicKey = () => {
  const { publicKey } = crypto.generateKeyPairSync("x25519")
  return publicKey.export({ format: "der", type: "spki" }).subarray(-32).toString("base64")
}

/** The 18 devices of the layout, blank facts. */
const initialDevices = (layout: ClusterOptions["layout"]): Array<MutableDevice> =>
  Array.from({ length: DEVICES }, (_, i) => {
    const id = i + 1
    const worker = id > 2 ? id - 2 : null
    const nn = worker === null ? "" : String(worker).padStart(2, "0")
    return {
      id,
      role: id === 1 ? "master" : id === 2 ? "gateway" : "worker",
      worker_number: worker,
      hostname: id === 1 ? "master" : id === 2 ? "gateway" : `worker-${nn}`,
      lan_ip: id === 1 ? layout.master : id === 2 ? layout.gateway : layout.worker(worker!),
      wg_interface: worker === null ? "" : `wg${nn}`,
      wg_tunnel_ip: worker === null ? "" : `10.66.0.${worker + 1}`,
      wg_public_key: worker === null ? "" : wgPublicKey(),
      vpn_profile: "",
      vpn_country: "",
      vpn_region: "",
      vpn_provider: "",
      external_ip: "",
      status: "online",
      last_seen: null,
      uptime: 0,
      load_avg: 0,
      memory_free_mb: 0,
      ping_latency_ms: 0,
      download_speed_mbps: 0,
      upload_speed_mbps: 0,
      tags: worker === null ? [id === 1 ? "load-balancer" : "gateway"] : ["worker"],
      notes: ""
    } satisfies MutableDevice
  })

/** How many recent probes `success_rate` covers, per bank. */
const WINDOW = 50

/** The cluster service. */
export interface Cluster {
  readonly banks: () => ReadonlyArray<Bank>
  readonly bank: (tag: string) => Bank | undefined
  readonly create: (req: BankCreate) => Promise<Bank>
  readonly update: (tag: string, req: BankUpdate) => Promise<Bank>
  readonly remove: (tag: string) => Promise<Bank>
  readonly idle: (tag: string) => Promise<Bank>
  readonly resume: (tag: string) => Promise<Bank>
  /** Restarts the down workers of an active bank, then probes it again. */
  readonly recover: (tag: string) => Promise<Bank>
  /** Worker numbers in no active bank. */
  readonly freeWorkers: () => ReadonlyArray<number>
  readonly devices: () => ReadonlyArray<Device>
  readonly device: (id: number) => Device
  readonly workerFacts: (n: number) => Record<string, unknown>
  readonly ping: (id: number) => Promise<PingResult>
  readonly pingAll: () => Promise<ReadonlyArray<PingResult>>
  readonly refresh: (id: number) => Promise<Device>
  readonly reboot: (id: number) => Promise<Device>
  readonly exec: (id: number, command: string) => Promise<{ code: number; stdout: string; stderr: string }>
  readonly speedTest: (id: number) => Promise<Device>
  readonly externalIp: (id: number) => Promise<{ id: number; external_ip: string; country: string; region: string; provider: string; profile: string }>
  /** Worker `n`'s VPN: start with a profile, stop, restart (the bank's frontend follows). */
  readonly workerVpn: (n: number, action: "start" | "stop" | "restart", profile?: string) => Promise<Device>
  /** One health round over every active bank (the periodic check calls it). */
  readonly checkHealth: () => Promise<void>
  /** Brings up the banks that were active when the state was written. */
  readonly restore: () => Promise<void>
  /** Called after any bank changes (the router drops cached routes). */
  readonly onChange: (listener: (tag: string) => void) => void
}

/** Opens the cluster state of `o.file` (creating the 18 devices on first use). */
export const makeCluster = (o: ClusterOptions): Cluster => {
  const saved = fs.existsSync(o.file) ? (JSON.parse(fs.readFileSync(o.file, "utf8")) as { devices: Array<MutableDevice>; banks: Array<MutableBank> }) : undefined
  const devices: Array<MutableDevice> = saved?.devices?.length === DEVICES ? saved.devices : initialDevices(o.layout)
  const banks = new Map<string, MutableBank>((saved?.banks ?? []).map((b) => [b.tag, b]))
  const ups = new Map<number, WorkerUp>()
  const probes = new Map<string, Array<boolean>>()
  const listeners: Array<(tag: string) => void> = []
  const changed = (tag: string) => listeners.forEach((l) => l(tag))

  const persist = () => {
    const tmp = `${o.file}.tmp`
    fs.mkdirSync(path.dirname(o.file), { recursive: true })
    fs.writeFileSync(tmp, JSON.stringify({ devices, banks: [...banks.values()] }, null, 2))
    fs.renameSync(tmp, o.file)
  }
  if (!saved) persist()

  let chain: Promise<unknown> = Promise.resolve()
  /** Runs `f` after every mutation queued before it. */
  const locked = <T>(f: () => Promise<T>): Promise<T> => {
    const run = chain.then(f, f)
    chain = run.catch(() => undefined)
    return run
  }

  const now = () => new Date().toISOString()
  const copy = (b: MutableBank): Bank => structuredClone(b) as Bank
  const need = (tag: string) => {
    const b = banks.get(tag)
    if (!b) throw new ClusterError({ status: 404, code: "bank_not_found", message: `no bank with tag "${tag}" (GET /api/v1/banks/ lists them)` })
    return b
  }
  const device = (id: number) => {
    const d = devices[id - 1]
    if (!Number.isInteger(id) || !d) throw new ClusterError({ status: 404, code: "device_not_found", message: `no device ${id}: device ids are 1 to ${DEVICES}` })
    return d
  }
  const activeFrontends = (extra?: FrontendSpec, without?: string): Array<FrontendSpec> => [
    ...[...banks.values()]
      .filter((b) => b.status === "active" && b.tag !== without && b.tag !== extra?.tag)
      .map((b) => ({ tag: b.tag, port: b.port, workers: b.worker_assignments.map((a) => ({ number: a.worker_number, ip: a.worker_ip, port: a.proxy_port })) })),
    ...(extra ? [extra] : [])
  ]
  /** Worker → tag of the active bank holding it. */
  const holders = (exceptTag?: string) => {
    const m = new Map<number, string>()
    for (const b of banks.values()) if (b.status === "active" && b.tag !== exceptTag) for (const w of b.workers) m.set(w, b.tag)
    return m
  }

  const selectProfiles = (filter: string): { f: GeoFilter; profiles: ReadonlyArray<Profile> } => {
    const sel = selectByString(o.inventory, filter)
    if (sel === null) throw new ClusterError({ status: 422, code: "invalid_filter", message: `invalid filter "${filter}": expected {country}[:{state}][:tor], e.g. us, us:ca, us:tx:tor` })
    if (sel.profiles.length === 0) {
      throw new ClusterError({ status: 422, code: "no_matching_profile", message: `no VPN profile matches filter "${filter}" (${o.inventory.size} profiles in ${o.inventory.dir})`, details: { filter } })
    }
    return { f: sel.filter, profiles: sel.profiles }
  }
  /** `k` distinct profiles spread over the selection (repeating only when it has fewer than `k`). */
  const spread = (profiles: ReadonlyArray<Profile>, k: number, seed: number): Array<Profile> => {
    const step = Math.max(1, Math.floor(profiles.length / k))
    return Array.from({ length: k }, (_, i) => profiles[(seed + i * step) % profiles.length]!)
  }
  const checkWorkers = (workers: ReadonlyArray<number>, exceptTag?: string) => {
    if (new Set(workers).size !== workers.length) throw new ClusterError({ status: 422, code: "invalid_workers", message: `workers must be distinct: ${workers.join(", ")}` })
    const held = holders(exceptTag)
    const busy = workers.filter((w) => held.has(w))
    if (busy.length) {
      throw new ClusterError({
        status: 409,
        code: "workers_busy",
        message: `worker${busy.length > 1 ? "s" : ""} ${busy.map((w) => `${w} (bank ${held.get(w)})`).join(", ")} already in a bank; a worker belongs to at most one bank`,
        details: { workers: busy }
      })
    }
  }
  const setDeviceVpn = (n: number, p: Profile | null, exitIp = "") => {
    const d = devices[deviceOfWorker(n) - 1]!
    d.vpn_profile = p?.file ?? ""
    d.vpn_country = p?.country ?? ""
    d.vpn_region = p?.state ?? ""
    d.vpn_provider = p?.provider ?? ""
    d.external_ip = exitIp
  }

  /** Starts `workers` with `profiles`; on a failure stops the ones started and rethrows. */
  const startWorkers = async (workers: ReadonlyArray<number>, profiles: ReadonlyArray<Profile>): Promise<Array<WorkerAssignment>> => {
    const started: Array<number> = []
    try {
      const out: Array<WorkerAssignment> = []
      for (const [i, n] of workers.entries()) {
        const up = await o.driver.startVpn(n, profiles[i]!)
        started.push(n)
        ups.set(n, up)
        setDeviceVpn(n, profiles[i]!, up.exitIp)
        out.push({ worker_number: n, worker_ip: up.ip, proxy_port: up.port, vpn_profile: profiles[i]!.file, vpn_status: "up", exit_ip: up.exitIp })
      }
      return out
    } catch (e) {
      await stopWorkers(started)
      throw e
    }
  }
  const stopWorkers = async (workers: ReadonlyArray<number>) => {
    for (const n of workers) {
      await o.driver.stopVpn(n).catch((e) => o.log(`stopping worker ${n}: ${(e as Error).message}`))
      ups.delete(n)
      setDeviceVpn(n, null)
    }
  }
  /** Starts workers and the frontend of a bank-to-be; undoes both on failure. */
  const bringUp = async (tag: string, port: number, workers: ReadonlyArray<number>, profiles: ReadonlyArray<Profile>) => {
    const assignments = await startWorkers(workers, profiles)
    const spec: FrontendSpec = { tag, port, workers: assignments.map((a) => ({ number: a.worker_number, ip: a.worker_ip, port: a.proxy_port })) }
    try {
      await o.driver.applyFrontends(activeFrontends(spec))
    } catch (e) {
      await stopWorkers(workers)
      await o.driver.applyFrontends(activeFrontends(undefined, tag)).catch((err) => o.log(`restoring the load balancer: ${(err as Error).message}`))
      throw e instanceof ClusterError ? e : new ClusterError({ status: 409, code: "load_balancer", message: `the load balancer cannot be configured: ${(e as Error).message}` })
    }
    return assignments
  }
  const health = (b: MutableBank, results?: ReadonlyArray<boolean>): BankHealth => {
    const total = b.worker_assignments.length
    const up = b.status === "active" ? b.worker_assignments.filter((a) => a.vpn_status === "up").length : 0
    const window = probes.get(b.tag) ?? []
    if (results) {
      window.push(...results)
      window.splice(0, Math.max(0, window.length - WINDOW))
      probes.set(b.tag, window)
    }
    const rate = window.length ? window.filter(Boolean).length / window.length : b.status === "active" ? up / Math.max(1, total) : 0
    return { workers_total: total, workers_up: up, workers_down: total - up, success_rate: Math.round(rate * 1000) / 1000, checked_at: results ? now() : b.health.checked_at }
  }
  const probeBank = async (b: MutableBank) => {
    if (b.status !== "active") return
    const results = await Promise.all(
      b.worker_assignments.map(async (a) => {
        const up = ups.get(a.worker_number)
        return up !== undefined && (await o.driver.probe(a.worker_number, up))
      })
    )
    let flipped = false
    b.worker_assignments.forEach((a, i) => {
      const status = results[i] ? "up" : "down"
      if (a.vpn_status !== status) flipped = true
      a.vpn_status = status
    })
    b.health = health(b, results)
    if (flipped) changed(b.tag)
  }
  const freePort = () => {
    const used = new Set([...banks.values()].map((b) => b.port))
    for (let p = o.ports.from; p <= o.ports.to; p++) if (!used.has(p)) return p
    throw new ClusterError({ status: 409, code: "load_balancer", message: `the load balancer cannot be configured: every frontend port ${o.ports.from}-${o.ports.to} is taken by a bank` })
  }

  const create = (req: BankCreate) =>
    locked(async () => {
      const tag = tagOf(req.name)
      if (banks.has(tag)) throw new ClusterError({ status: 409, code: "bank_exists", message: `a bank with tag "${tag}" exists already` })
      const { f, profiles } = selectProfiles(req.filter)
      checkWorkers(req.workers)
      const port = freePort()
      const assignments = await bringUp(tag, port, req.workers, spread(profiles, req.workers.length, banks.size))
      const t = now()
      const b: MutableBank = {
        name: req.name,
        tag,
        workers: [...req.workers],
        worker_assignments: assignments,
        filter: filterObject(f),
        geo: f.raw,
        port,
        status: "active",
        endpoint: `http://${o.driver.masterIp}:${port}`,
        health: { workers_total: 0, workers_up: 0, workers_down: 0, success_rate: 0, checked_at: null },
        created_at: t,
        updated_at: t
      }
      banks.set(tag, b)
      await probeBank(b)
      persist()
      changed(tag)
      return copy(b)
    })

  const update = (tag: string, req: BankUpdate) =>
    locked(async () => {
      const b = need(tag)
      const filter = req.filter ?? b.geo
      const workers = req.workers ?? b.workers
      const { f, profiles } = selectProfiles(filter)
      checkWorkers(workers, tag)
      const sameSet = filter === b.geo && workers.length === b.workers.length && workers.every((w, i) => w === b.workers[i])
      if (!sameSet && b.status === "active") {
        const old = b.worker_assignments
        await stopWorkers(b.workers)
        try {
          b.worker_assignments = await bringUp(tag, b.port, workers, spread(profiles, workers.length, 0))
        } catch (e) {
          // Put the bank back as it was, then answer the error.
          const back = old.map((a) => o.inventory.get(a.vpn_profile) ?? profiles[0]!)
          b.worker_assignments = await bringUp(tag, b.port, b.workers, back).catch(() => b.worker_assignments.map((a) => ({ ...a, vpn_status: "down" })))
          throw e
        }
      } else if (!sameSet) {
        b.worker_assignments = workers.map((n, i) => ({ worker_number: n, worker_ip: "", proxy_port: 0, vpn_profile: spread(profiles, workers.length, 0)[i]!.file, vpn_status: "stopped", exit_ip: "" }))
      }
      if (req.name !== undefined) b.name = req.name
      b.workers = [...workers]
      b.filter = filterObject(f)
      b.geo = f.raw
      b.updated_at = now()
      await probeBank(b)
      b.health = health(b)
      persist()
      changed(tag)
      return copy(b)
    })

  const remove = (tag: string) =>
    locked(async () => {
      const b = need(tag)
      if (b.status === "active") {
        await stopWorkers(b.workers)
        await o.driver.applyFrontends(activeFrontends(undefined, tag))
      }
      banks.delete(tag)
      probes.delete(tag)
      persist()
      changed(tag)
      return copy({ ...b, status: "idle", health: { ...b.health, workers_up: 0, workers_down: b.workers.length } })
    })

  const idle = (tag: string) =>
    locked(async () => {
      const b = need(tag)
      if (b.status === "idle") return copy(b)
      await stopWorkers(b.workers)
      await o.driver.applyFrontends(activeFrontends(undefined, tag))
      b.status = "idle"
      b.worker_assignments = b.worker_assignments.map((a) => ({ ...a, vpn_status: "stopped" }))
      b.health = health(b)
      b.updated_at = now()
      probes.delete(tag)
      persist()
      changed(tag)
      return copy(b)
    })

  const resume = (tag: string) =>
    locked(async () => {
      const b = need(tag)
      if (b.status === "active") return copy(b)
      checkWorkers(b.workers, tag)
      const { profiles } = selectProfiles(b.geo)
      const chosen = b.worker_assignments.map((a, i) => o.inventory.get(a.vpn_profile) ?? profiles[i % profiles.length]!)
      b.worker_assignments = await bringUp(tag, b.port, b.workers, chosen)
      b.status = "active"
      b.updated_at = now()
      await probeBank(b)
      persist()
      changed(tag)
      return copy(b)
    })

  const recover = (tag: string) =>
    locked(async () => {
      const b = need(tag)
      if (b.status !== "active") throw new ClusterError({ status: 409, code: "bank_idle", message: `bank ${tag} is idle: resume it first` })
      for (const a of b.worker_assignments) {
        if (a.vpn_status === "up") continue
        const profile = o.inventory.get(a.vpn_profile)
        if (!profile) continue
        try {
          const up = await o.driver.startVpn(a.worker_number, profile)
          ups.set(a.worker_number, up)
          if (up.port !== a.proxy_port || up.ip !== a.worker_ip) {
            a.proxy_port = up.port
            a.worker_ip = up.ip
          }
        } catch (e) {
          o.log(`recovering worker ${a.worker_number} of bank ${tag}: ${(e as Error).message}`)
        }
      }
      await o.driver.applyFrontends(activeFrontends()).catch((e) => o.log(`recovering bank ${tag}: ${(e as Error).message}`))
      await probeBank(b)
      persist()
      return copy(b)
    })

  const pingOne = async (id: number): Promise<PingResult> => {
    const d = device(id)
    const r = await o.driver.ping(d)
    d.status = r.success ? "online" : "offline"
    if (r.success) {
      d.last_seen = now()
      d.ping_latency_ms = r.avgLatencyMs ?? 0
    }
    return { id, hostname: d.hostname, success: r.success, avg_latency_ms: r.avgLatencyMs, sent: r.sent, received: r.received }
  }
  const worker = (id: number) => {
    const d = device(id)
    if (d.worker_number === null) throw new ClusterError({ status: 422, code: "not_a_worker", message: `device ${id} (${d.hostname}) is not a worker: workers are devices 3 to ${DEVICES}` })
    return d.worker_number
  }

  return {
    banks: () => [...banks.values()].map(copy),
    bank: (tag) => {
      const b = banks.get(tag)
      return b && copy(b)
    },
    create,
    update,
    remove,
    idle,
    resume,
    recover,
    freeWorkers: () => {
      const held = holders()
      return Array.from({ length: WORKERS }, (_, i) => i + 1).filter((n) => !held.has(n))
    },
    devices: () => devices.map((d) => ({ ...d })),
    device: (id) => ({ ...device(id) }),
    workerFacts: (n) => o.driver.workerFacts(n),
    ping: (id) => pingOne(id),
    pingAll: async () => {
      const out = await Promise.all(devices.map((d) => pingOne(d.id)))
      persist()
      return out
    },
    refresh: async (id) => {
      const d = device(id)
      Object.assign(d, await o.driver.refresh(d))
      persist()
      return { ...d }
    },
    reboot: async (id) => {
      const d = device(id)
      await o.driver.reboot(d)
      d.last_seen = now()
      return { ...d }
    },
    exec: (id, command) => o.driver.exec(device(id), command),
    speedTest: async (id) => {
      const d = device(id)
      const r = await o.driver.speedTest(d, d.worker_number === null ? undefined : ups.get(d.worker_number))
      d.download_speed_mbps = r.download_mbps
      d.upload_speed_mbps = r.upload_mbps
      persist()
      return { ...d }
    },
    externalIp: async (id) => {
      const d = device(id)
      return { id, external_ip: d.external_ip, country: d.vpn_country, region: d.vpn_region, provider: d.vpn_provider, profile: d.vpn_profile }
    },
    workerVpn: (id, action, profileName) =>
      locked(async () => {
        const n = worker(id)
        const bank = [...banks.values()].find((b) => b.status === "active" && b.workers.includes(n))
        const a = bank?.worker_assignments.find((x) => x.worker_number === n)
        if (action === "stop") {
          await stopWorkers([n])
          if (a) a.vpn_status = "down"
        } else {
          const file = profileName ?? a?.vpn_profile ?? devices[id - 1]!.vpn_profile
          const p = file ? o.inventory.get(file) : undefined
          if (!p) throw new ClusterError({ status: 422, code: "unknown_profile", message: file ? `no profile "${file}" in the inventory` : `worker ${n} has no profile: give one` })
          const up = await o.driver.startVpn(n, p)
          ups.set(n, up)
          setDeviceVpn(n, p, up.exitIp)
          if (a && bank) {
            Object.assign(a, { vpn_profile: p.file, vpn_status: "up", worker_ip: up.ip, proxy_port: up.port, exit_ip: up.exitIp })
            await o.driver.applyFrontends(activeFrontends())
          }
        }
        if (bank) {
          bank.health = health(bank)
          changed(bank.tag)
        }
        persist()
        return { ...devices[id - 1]! }
      }),
    // Under the lock: a probe must not see a bank halfway through a change (workers stopped).
    checkHealth: () =>
      locked(async () => {
        for (const b of banks.values()) await probeBank(b)
      }),
    restore: () =>
      locked(async () => {
        const active = [...banks.values()].filter((b) => b.status === "active")
        for (const b of active) {
          try {
            const chosen = b.worker_assignments.map((a) => o.inventory.get(a.vpn_profile)).filter((p): p is Profile => p !== undefined)
            if (chosen.length !== b.workers.length) throw new Error("its profiles are no longer in the inventory")
            b.worker_assignments = await startWorkers(b.workers, chosen)
          } catch (e) {
            o.log(`bank ${b.tag} could not be restored: ${(e as Error).message}`)
            b.worker_assignments = b.worker_assignments.map((a) => ({ ...a, vpn_status: "down" }))
          }
        }
        await o.driver.applyFrontends(activeFrontends()).catch((e) => o.log(`restoring the load balancer: ${(e as Error).message}`))
        for (const b of active) await probeBank(b)
        persist()
      }),
    onChange: (l) => void listeners.push(l)
  }
}
