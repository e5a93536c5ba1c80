/**
 * The `local` driver: the cluster on one machine's loopback, from real components. Worker `n` is
 * Debian's `tinyproxy` (a forward HTTP proxy, CONNECT included) on a free loopback port, started
 * when its "VPN" comes up with a profile; every request it forwards carries
 * `X-Cluster-Worker: <n>` and `X-Cluster-Exit: <profile>`, and its log
 * (`<data>/local/worker-NN.log`) names every request, CONNECT included, so a test or an admin
 * sees which worker carried what. Each bank's frontend is Debian's `haproxy` running the bank's
 * sections of the shared generated configuration (`Haproxy.ts`).
 *
 * There is no VPN tunnel on loopback: the profile only labels the exit. Commands as root are
 * refused (409 `not_supported`): on one machine that would be a shell on the host.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { ProxyAgent } from "undici"
import { freePort } from "../../core/Listener.ts"
import { checkConfig, haproxyConfig } from "./Haproxy.ts"
import type { Profile } from "./Inventory.ts"
import { ClusterError, type Device, type Driver, type FrontendSpec, type MutableDevice, type WorkerUp } from "./Model.ts"

/** Options of the local driver. */
export interface LocalOptions {
  readonly dir: string
  readonly tinyproxy: string
  readonly haproxy: string
  readonly checkIntervalMs: number
  /** The cluster API's own port, the "host" master and gateway pings reach. */
  readonly hostPort: () => number | undefined
}

/** Resolves the milliseconds a TCP connect to `port` took, or null when refused / over `timeoutMs`. */
export const connectMs = (host: string, port: number, timeoutMs = 1000): Promise<number | null> =>
  new Promise((resolve) => {
    const t0 = performance.now()
    const s = net.connect({ host, port })
    const done = (v: number | null) => {
      s.destroy()
      clearTimeout(timer)
      resolve(v)
    }
    const timer = setTimeout(() => done(null), timeoutMs)
    s.once("connect", () => done(performance.now() - t0))
    s.once("error", () => done(null))
  })

/** Waits until `port` accepts or `child` exits; rejects with the child's output otherwise. */
const waitListening = async (child: ChildProcess, port: number, output: () => string, what: string, deadlineMs = 10_000) => {
  const end = Date.now() + deadlineMs
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${what} exited (${child.exitCode ?? child.signalCode}): ${output().trim().slice(-400)}`)
    if ((await connectMs("127.0.0.1", port, 500)) !== null) return
    if (Date.now() > end) throw new Error(`${what} did not listen on 127.0.0.1:${port} within ${deadlineMs} ms`)
    await new Promise((r) => setTimeout(r, 15))
  }
}

/** Stops a child: SIGTERM, SIGKILL after 2 s; resolves once it exited. */
const stopChild = (child: ChildProcess | undefined): Promise<void> =>
  new Promise((resolve) => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return resolve()
    const kill = setTimeout(() => child.kill("SIGKILL"), 2000)
    child.once("exit", () => {
      clearTimeout(kill)
      resolve()
    })
    child.kill("SIGTERM")
  })

interface Running {
  readonly child: ChildProcess
  readonly port: number
  readonly profile: string
}

/** The local driver over `o.dir` (created). */
export const localDriver = (o: LocalOptions): Driver => {
  fs.mkdirSync(o.dir, { recursive: true })
  const workers = new Map<number, Running>()
  const ports = new Map<number, number>()
  const frontends = new Map<string, { child: ChildProcess; text: string }>()
  const nn = (n: number) => String(n).padStart(2, "0")
  const logFile = (n: number) => path.join(o.dir, `worker-${nn(n)}.log`)

  const startProxy = async (n: number, profile: string): Promise<WorkerUp> => {
    await stopChild(workers.get(n)?.child)
    workers.delete(n)
    // A worker keeps its port across restarts, so the frontends pointing at it stay valid.
    const port = ports.get(n) ?? (await freePort())
    ports.set(n, port)
    const conf = path.join(o.dir, `worker-${nn(n)}.conf`)
    fs.writeFileSync(
      conf,
      [
        `# worker ${n} of the local cluster (platform cluster-vpn): exit ${profile}`,
        `Port ${port}`,
        "Listen 127.0.0.1",
        "Allow 127.0.0.1",
        "Timeout 60",
        "MaxClients 200",
        "LogLevel Connect",
        `LogFile "${logFile(n)}"`,
        `AddHeader "X-Cluster-Worker" "${n}"`,
        `AddHeader "X-Cluster-Exit" "${profile}"`,
        `ViaProxyName "cluster-worker-${nn(n)}"`,
        ""
      ].join("\n")
    )
    let out = ""
    const child = spawn(o.tinyproxy, ["-d", "-c", conf], { stdio: ["ignore", "pipe", "pipe"] })
    child.stdout!.on("data", (d) => (out = (out + d).slice(-2000)))
    child.stderr!.on("data", (d) => (out = (out + d).slice(-2000)))
    child.once("error", (e) => (out += String(e)))
    try {
      await waitListening(child, port, () => out, `tinyproxy of worker ${n}`)
    } catch (e) {
      await stopChild(child)
      throw new ClusterError({ status: 503, code: "worker_unavailable", message: `worker ${n}: ${(e as Error).message}` })
    }
    workers.set(n, { child, port, profile })
    return { ip: "127.0.0.1", port, exitIp: "127.0.0.1" }
  }

  const stopVpn = async (n: number) => {
    await stopChild(workers.get(n)?.child)
    workers.delete(n)
  }

  const startFrontend = async (f: FrontendSpec, text: string) => {
    // HAProxy binds with SO_REUSEPORT and another process's listener would answer the readiness
    // probe: a port taken by anyone else is refused here, before HAProxy starts.
    const taken = await new Promise<string | null>((resolve) => {
      const s = net.createServer()
      s.once("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message))
      s.listen(f.port, "127.0.0.1", () => s.close(() => resolve(null)))
    })
    if (taken !== null) throw new ClusterError({ status: 409, code: "load_balancer", message: `the load balancer cannot be configured for bank ${f.tag}: port ${f.port} is not free (${taken})` })
    const file = path.join(o.dir, `bank-${f.tag.replace(/[^a-z0-9_-]/gi, "_")}.cfg`)
    fs.writeFileSync(file, text)
    const checked = await checkConfig(o.haproxy, file)
    if (!checked.ok) throw new ClusterError({ status: 409, code: "load_balancer", message: `the load balancer cannot be configured for bank ${f.tag}: ${checked.output.slice(-400)}` })
    let out = ""
    const child = spawn(o.haproxy, ["-db", "-f", file], { stdio: ["ignore", "pipe", "pipe"] })
    child.stdout!.on("data", (d) => (out = (out + d).slice(-2000)))
    child.stderr!.on("data", (d) => (out = (out + d).slice(-2000)))
    child.once("error", (e) => (out += String(e)))
    try {
      await waitListening(child, f.port, () => out, "haproxy")
    } catch (e) {
      await stopChild(child)
      throw new ClusterError({ status: 409, code: "load_balancer", message: `the load balancer cannot be configured for bank ${f.tag} on port ${f.port}: ${(e as Error).message}` })
    }
    frontends.set(f.tag, { child, text })
  }

  const applyFrontends = async (specs: ReadonlyArray<FrontendSpec>) => {
    const wanted = new Map(specs.map((f) => [f.tag, f]))
    for (const [tag, running] of [...frontends]) {
      const f = wanted.get(tag)
      const text = f && haproxyConfig([{ ...f, bind: "127.0.0.1" }], { checkIntervalMs: o.checkIntervalMs })
      if (text !== running.text || running.child.exitCode !== null) {
        await stopChild(running.child)
        frontends.delete(tag)
      }
    }
    for (const f of specs) {
      if (frontends.has(f.tag)) continue
      await startFrontend(f, haproxyConfig([{ ...f, bind: "127.0.0.1" }], { checkIntervalMs: o.checkIntervalMs }))
    }
  }

  const hostFacts = (): Partial<MutableDevice> => ({
    uptime: Math.round(os.uptime()),
    load_avg: Math.round(os.loadavg()[0]! * 100) / 100,
    memory_free_mb: Math.round(os.freemem() / 1048576),
    last_seen: new Date().toISOString(),
    status: "online"
  })

  return {
    kind: "local",
    masterIp: "127.0.0.1",
    bindIp: "127.0.0.1",
    startVpn: (n: number, profile: Profile) => startProxy(n, profile.file),
    stopVpn,
    applyFrontends,
    probe: async (n, up) => workers.has(n) && (await connectMs(up.ip, up.port, 1000)) !== null,
    ping: async (d) => {
      // Every device of the local cluster is this host: workers answer on their proxy port, the
      // master and the gateway on the cluster API's port.
      const w = d.worker_number === null ? undefined : workers.get(d.worker_number)
      const port = d.worker_number === null ? o.hostPort() : w?.port
      const times: Array<number> = []
      for (let i = 0; i < 3 && port !== undefined; i++) {
        const ms = await connectMs("127.0.0.1", port, 1000)
        if (ms !== null) times.push(ms)
      }
      const avg = times.length ? Math.round((times.reduce((a, b) => a + b, 0) / times.length) * 1000) / 1000 : null
      return { success: times.length > 0, avgLatencyMs: avg, sent: port === undefined ? 0 : 3, received: times.length }
    },
    exec: async () => {
      throw new ClusterError({ status: 409, code: "not_supported", message: "the local driver runs no device shell: commands as root would run on this host (use the openwrt driver)" })
    },
    reboot: async (d) => {
      // A local worker "reboots" by restarting its proxy with the same exit.
      const w = d.worker_number === null ? undefined : workers.get(d.worker_number)
      if (d.worker_number === null) throw new ClusterError({ status: 409, code: "not_supported", message: `the local driver cannot reboot ${d.hostname}: it is this host` })
      if (!w) return
      await startProxy(d.worker_number, w.profile)
    },
    refresh: async () => hostFacts(),
    speedTest: async (d, up) => {
      if (!up || d.worker_number === null || !workers.has(d.worker_number)) throw new ClusterError({ status: 409, code: "vpn_down", message: `${d.hostname} has no tunnel up to test` })
      // 8 MiB from a loopback sink through the worker's proxy, each way.
      const size = 8 * 1048576
      const chunk = Buffer.alloc(65536, 120)
      const server = http.createServer((req, res) => {
        if (req.method === "POST") {
          req.resume()
          req.on("end", () => res.end("ok"))
          return
        }
        res.writeHead(200, { "content-length": String(size) })
        let sent = 0
        const pump = () => {
          while (sent < size) {
            sent += chunk.length
            if (!res.write(chunk)) return void res.once("drain", pump)
          }
          res.end()
        }
        pump()
      })
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()))
      const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/`
      const agent = new ProxyAgent({ uri: `http://${up.ip}:${up.port}`, proxyTunnel: false })
      try {
        let t0 = performance.now()
        const res = await fetch(url, { dispatcher: agent } as unknown as RequestInit)
        await res.arrayBuffer()
        const down = (size * 8) / 1e6 / ((performance.now() - t0) / 1000)
        t0 = performance.now()
        await (await fetch(url, { method: "POST", body: Buffer.alloc(size), dispatcher: agent } as unknown as RequestInit)).text()
        const upMbps = (size * 8) / 1e6 / ((performance.now() - t0) / 1000)
        return { download_mbps: Math.round(down * 10) / 10, upload_mbps: Math.round(upMbps * 10) / 10 }
      } finally {
        await agent.close()
        server.close()
      }
    },
    workerFacts: (n) => {
      const w = workers.get(n)
      return { proxy_pid: w?.child.pid ?? null, proxy_port: w?.port ?? null, log_file: logFile(n) }
    },
    close: async () => {
      await Promise.all([...frontends.values()].map((f) => stopChild(f.child)))
      await Promise.all([...workers.values()].map((w) => stopChild(w.child)))
      frontends.clear()
      workers.clear()
    }
  }
}
