/**
 * The `openwrt` driver: the cluster's routers through OpenWrt's JSON-RPC (luci-mod-rpc, under
 * `/cgi-bin/luci/rpc/`): `auth` `login(user, password)` → a session token, then `uci`
 * (`get`, `set`, `commit`) and `sys` (`exec`) with `?auth=<token>`; a refused token logs in again
 * once. A worker's VPN is OpenWrt's `openvpn` section `client` (`config` = the profile under
 * `/etc/openvpn/profiles/`, `enabled`); the master's HAProxy gets the generated configuration
 * of every active bank (`Haproxy.ts`, validated here with `haproxy -c -f` first when a local
 * `haproxy` runs) and is reloaded.
 *
 * The password is only sent in the login call: never logged, never in an error or a response.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { checkConfig, haproxyConfig } from "./Haproxy.ts"
import { connectMs } from "./LocalDriver.ts"
import { ClusterError, type Device, type Driver, type FrontendSpec, type MutableDevice } from "./Model.ts"

/** Options of the openwrt driver. */
export interface OpenWrtOptions {
  readonly master_url: string
  readonly master_ip: string
  readonly worker_url_template: string
  readonly username: string
  readonly password: string
  readonly haproxy_config_path: string
  readonly timeout_ms: number
  readonly workerProxyPort: number
  readonly checkIntervalMs: number
  /** A local haproxy binary to validate the generated text with (skipped when it does not run). */
  readonly haproxyCheck: string
}

/** The shell-safe single-quoted form of `s`. */
const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`

/** One router's JSON-RPC session. */
const rpcClient = (base: string, o: OpenWrtOptions) => {
  let token: string | undefined
  let id = 0
  const post = async (lib: string, method: string, params: ReadonlyArray<unknown>, auth: boolean): Promise<unknown> => {
    const url = `${base.replace(/\/$/, "")}/cgi-bin/luci/rpc/${lib}${auth ? `?auth=${encodeURIComponent(token ?? "")}` : ""}`
    let res: Response
    try {
      res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: ++id, method, params }), signal: AbortSignal.timeout(o.timeout_ms) })
    } catch (e) {
      throw new ClusterError({ status: 503, code: "device_unreachable", message: `router ${base} did not answer ${lib}.${method}: ${(e as Error).message}` })
    }
    if (res.status === 403 || res.status === 401) return Symbol.for("unauthorized")
    const text = await res.text()
    if (!res.ok) throw new ClusterError({ status: 503, code: "device_error", message: `router ${base} answered ${lib}.${method} with HTTP ${res.status}` })
    let body: { result?: unknown; error?: unknown }
    try {
      body = JSON.parse(text)
    } catch {
      throw new ClusterError({ status: 503, code: "device_error", message: `router ${base} answered ${lib}.${method} with something other than JSON-RPC` })
    }
    if (body.error !== null && body.error !== undefined) throw new ClusterError({ status: 503, code: "device_error", message: `router ${base}: ${lib}.${method} failed: ${JSON.stringify(body.error).slice(0, 200)}` })
    return body.result
  }
  const login = async () => {
    const t = await post("auth", "login", [o.username, o.password], false)
    if (typeof t !== "string" || t === "") throw new ClusterError({ status: 503, code: "device_login_refused", message: `router ${base} refused the login of user ${o.username}` })
    token = t
  }
  const call = async (lib: "uci" | "sys", method: string, params: ReadonlyArray<unknown>): Promise<unknown> => {
    if (token === undefined) await login()
    let r = await post(lib, method, params, true)
    if (r === Symbol.for("unauthorized")) {
      await login()
      r = await post(lib, method, params, true)
      if (r === Symbol.for("unauthorized")) throw new ClusterError({ status: 503, code: "device_login_refused", message: `router ${base} refused the session` })
    }
    return r
  }
  return {
    call,
    exec: async (command: string) => String((await call("sys", "exec", [command])) ?? "")
  }
}

/** The openwrt driver. */
export const openWrtDriver = (o: OpenWrtOptions): Driver => {
  const clients = new Map<string, ReturnType<typeof rpcClient>>()
  const client = (base: string) => clients.get(base) ?? clients.set(base, rpcClient(base, o)).get(base)!
  const workerUrl = (n: number) => o.worker_url_template.replace("{100+n}", String(100 + n)).replace("{n}", String(n))
  const workerIp = (n: number) => workerUrl(n).replace(/^https?:\/\//, "").replace(/[:/].*$/, "")
  const master = () => client(o.master_url)
  const urlOf = (d: Device) => (d.worker_number !== null ? workerUrl(d.worker_number) : d.role === "master" ? o.master_url : o.master_url.replace(o.master_ip, d.lan_ip))
  /** Runs `command` and reads its exit status from a marker line. */
  const execWithCode = async (base: string, command: string) => {
    const out = await client(base).exec(`${command}; echo "__rc=$?"`)
    const m = /__rc=(\d+)\s*$/.exec(out)
    return { code: m ? Number(m[1]) : 0, stdout: m ? out.slice(0, m.index) : out, stderr: "" }
  }

  return {
    kind: "openwrt",
    masterIp: o.master_ip,
    bindIp: "*",
    startVpn: async (n, profile) => {
      const w = client(workerUrl(n))
      await w.call("uci", "set", ["openvpn", "client", "config", `/etc/openvpn/profiles/${profile.file}`])
      await w.call("uci", "set", ["openvpn", "client", "enabled", "1"])
      await w.call("uci", "commit", ["openvpn"])
      await w.exec("/etc/init.d/openvpn restart")
      const exit = (await w.exec("wget -qO- -T 10 http://ipv4.icanhazip.com")).trim()
      return { ip: workerIp(n), port: o.workerProxyPort, exitIp: /^[0-9.]+$/.test(exit) ? exit : "" }
    },
    stopVpn: async (n) => {
      const w = client(workerUrl(n))
      await w.call("uci", "set", ["openvpn", "client", "enabled", "0"])
      await w.call("uci", "commit", ["openvpn"])
      await w.exec("/etc/init.d/openvpn stop")
    },
    applyFrontends: async (specs: ReadonlyArray<FrontendSpec>) => {
      const text = haproxyConfig(specs.map((f) => ({ ...f, bind: "*" })), { checkIntervalMs: o.checkIntervalMs })
      const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "cluster-haproxy-"))
      try {
        fs.writeFileSync(path.join(tmp, "haproxy.cfg"), text)
        const checked = await checkConfig(o.haproxyCheck, path.join(tmp, "haproxy.cfg"))
        // With no bank left the file has no listener: valid, though HAProxy calls it "will not start".
        const empty = specs.length === 0 && /no error but will not start \(no listener\)/.test(checked.output)
        if (!checked.ok && !empty && !/ENOENT/.test(checked.output)) throw new ClusterError({ status: 409, code: "load_balancer", message: `the load balancer cannot be configured: haproxy -c refused the generated configuration: ${checked.output.slice(-400)}` })
      } finally {
        fs.rmSync(tmp, { recursive: true, force: true })
      }
      const out = await execWithCode(o.master_url, `cat > ${sq(o.haproxy_config_path)} <<'HAPROXY_CFG'\n${text}HAPROXY_CFG\n/etc/init.d/haproxy reload`)
      if (out.code !== 0) throw new ClusterError({ status: 409, code: "load_balancer", message: `the load balancer cannot be configured: the master's haproxy reload exited ${out.code}: ${out.stdout.slice(-300)}` })
    },
    probe: async (_n, up) => (await connectMs(up.ip, up.port, 2000)) !== null,
    ping: async (d) => {
      const out = await master().exec(`ping -c 3 -W 1 ${sq(d.lan_ip)} 2>&1`)
      const received = Number(/(\d+) packets received/.exec(out)?.[1] ?? 0)
      const avg = /min\/avg\/max[^=]*= [\d.]+\/([\d.]+)\//.exec(out)
      return { success: received > 0, avgLatencyMs: avg ? Number(avg[1]) : null, sent: 3, received }
    },
    exec: (d, command) => execWithCode(urlOf(d), command),
    reboot: async (d) => {
      await client(urlOf(d)).exec("reboot")
    },
    refresh: async (d): Promise<Partial<MutableDevice>> => {
      const out = await client(urlOf(d)).exec("cat /proc/uptime /proc/loadavg; grep MemAvailable /proc/meminfo")
      const [uptime, load] = out.split(/\s+/).map(Number)
      const mem = /MemAvailable:\s+(\d+)/.exec(out)
      return { uptime: Math.round(uptime ?? 0), load_avg: load ?? 0, memory_free_mb: mem ? Math.round(Number(mem[1]) / 1024) : 0, last_seen: new Date().toISOString(), status: "online" }
    },
    speedTest: async (d) => {
      // busybox wget through the tunnel: seconds for 10 MB, timed by the router's own clock.
      const out = await client(urlOf(d)).exec("s=$(date +%s%N); wget -qO /dev/null http://speedtest.tele2.net/10MB.zip; e=$(date +%s%N); echo $(( (e-s)/1000000 ))")
      const ms = Number(out.trim().split(/\s+/).pop())
      if (!Number.isFinite(ms) || ms <= 0) throw new ClusterError({ status: 503, code: "device_error", message: `${d.hostname}: the speed test did not complete` })
      return { download_mbps: Math.round(((10 * 8 * 1e6) / 1e6 / (ms / 1000)) * 10) / 10, upload_mbps: 0 }
    },
    workerFacts: (n) => ({ rpc_url: workerUrl(n), proxy: `${workerIp(n)}:${o.workerProxyPort}` }),
    close: async () => {
      clients.clear()
    }
  }
}
