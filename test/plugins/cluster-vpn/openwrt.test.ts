/**
 * The `openwrt` driver against a loopback fixture speaking LuCI's JSON-RPC: the exact calls the
 * cluster makes for create, idle, resume and delete (login once per router, uci set/commit of
 * the worker's openvpn section, the init script, the exit-IP probe, the master's HAProxy config
 * written and reloaded), the generated HAProxy text validated by `haproxy -c -f`, pings parsed
 * from busybox output, and the router password only ever in the login call.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Cluster, makeCluster } from "../../../plugins/cluster-vpn/Cluster.ts"
import { generatedNames, indexProfiles, parseProfileName, type Profile } from "../../../plugins/cluster-vpn/Inventory.ts"
import { openWrtDriver } from "../../../plugins/cluster-vpn/OpenWrtDriver.ts"
import { type OpenWrtFixture, openWrtFixture } from "../../fixtures/openwrt-rpc.ts"
import { tempDir } from "../jobs/support.ts"

const PASSWORD = "s3cret-router-pass"
let fx: OpenWrtFixture
let cluster: Cluster
let dir: string
const logged: Array<string> = []

beforeAll(async () => {
  fx = await openWrtFixture("root", PASSWORD)
  dir = tempDir("cluster-openwrt-")
  const inventory = indexProfiles("/etc/openvpn/profiles", generatedNames(1500).map((n) => parseProfileName(n) as Profile))
  const driver = openWrtDriver({
    master_url: `${fx.url}/master`,
    master_ip: "192.168.1.1",
    worker_url_template: `${fx.url}/w{n}`,
    username: "root",
    password: PASSWORD,
    haproxy_config_path: "/etc/haproxy.cfg",
    timeout_ms: 5000,
    workerProxyPort: 3128,
    checkIntervalMs: 5000,
    haproxyCheck: "haproxy"
  })
  cluster = makeCluster({
    file: path.join(dir, "cluster.json"),
    inventory,
    driver,
    ports: { from: 8890, to: 8899 },
    layout: { master: "192.168.1.1", gateway: "192.168.1.2", worker: (n) => `192.168.1.${100 + n}` },
    log: (m) => logged.push(m)
  })
})
afterAll(async () => {
  await fx?.close()
})

/** The calls since `from`, one line each; the master's config heredoc abbreviated. */
const callsSince = (from: number) =>
  fx.calls.slice(from).map((c) => {
    const p = c.params.map(String)
    const shown = c.lib === "sys" && p[0]!.startsWith("cat > '/etc/haproxy.cfg' <<'HAPROXY_CFG'") ? ["<write /etc/haproxy.cfg>; /etc/init.d/haproxy reload"] : c.lib === "auth" ? [p[0], "<password>"] : p
    return `${c.router} ${c.lib}.${c.method}(${shown.join(", ")})`
  })
const up = (w: string, profile: string) => [
  `${w} uci.set(openvpn, client, config, /etc/openvpn/profiles/${profile})`,
  `${w} uci.set(openvpn, client, enabled, 1)`,
  `${w} uci.commit(openvpn)`,
  `${w} sys.exec(/etc/init.d/openvpn restart)`,
  `${w} sys.exec(wget -qO- -T 10 http://ipv4.icanhazip.com)`
]
const down = (w: string) => [`${w} uci.set(openvpn, client, enabled, 0)`, `${w} uci.commit(openvpn)`, `${w} sys.exec(/etc/init.d/openvpn stop)`]
const masterWrite = `master sys.exec(<write /etc/haproxy.cfg>; /etc/init.d/haproxy reload)`
let profiles: Array<string> = []

describe("openwrt driver over LuCI JSON-RPC", () => {
  it("create: logs in to each router once, brings each worker's VPN up, writes and reloads the master's HAProxy", async () => {
    const bank = await cluster.create({ name: "West Coast", workers: [1, 2], filter: "us:ca" })
    profiles = bank.worker_assignments.map((a) => a.vpn_profile)
    expect(bank).toMatchObject({ tag: "westcoast", endpoint: "http://192.168.1.1:8890", port: 8890, worker_assignments: [{ worker_ip: "127.0.0.1", proxy_port: 3128, exit_ip: "203.0.113.1" }, { exit_ip: "203.0.113.2" }] })
    expect(callsSince(0)).toEqual([
      "w1 auth.login(root, <password>)",
      ...up("w1", profiles[0]!),
      "w2 auth.login(root, <password>)",
      ...up("w2", profiles[1]!),
      "master auth.login(root, <password>)",
      masterWrite
    ])
    expect(fx.uci.get("w1")!.get("openvpn.client.enabled")).toBe("1")
  })

  it("the master's HAProxy config: round robin over the workers' port 3128, checks every 5000 ms, valid for haproxy -c", () => {
    const text = fx.files.get("master:/etc/haproxy.cfg")!
    expect(text).toContain("frontend bank_westcoast\n  bind *:8890\n  default_backend bank_westcoast_workers")
    expect(text).toContain("  balance roundrobin\n  server worker01 127.0.0.1:3128 check inter 5000 fall 2 rise 2\n  server worker02 127.0.0.1:3128 check inter 5000 fall 2 rise 2")
    const file = path.join(dir, "haproxy.cfg")
    fs.writeFileSync(file, text)
    expect(execFileSync("haproxy", ["-c", "-f", file], { encoding: "utf8" })).toMatch(/Configuration file is valid/)
  })

  it("idle: stops each tunnel and drops the bank from the master's config", async () => {
    const from = fx.calls.length
    expect((await cluster.idle("westcoast")).status).toBe("idle")
    expect(callsSince(from)).toEqual([...down("w1"), ...down("w2"), masterWrite])
    expect(fx.files.get("master:/etc/haproxy.cfg")).not.toContain("bank_westcoast")
  })

  it("resume: the same profiles again, then the master's config", async () => {
    const from = fx.calls.length
    expect((await cluster.resume("westcoast")).status).toBe("active")
    expect(callsSince(from)).toEqual([...up("w1", profiles[0]!), ...up("w2", profiles[1]!), masterWrite])
  })

  it("ping goes through the master's busybox ping: average latency, or failure", async () => {
    const from = fx.calls.length
    expect(await cluster.ping(3)).toEqual({ id: 3, hostname: "worker-01", success: true, avg_latency_ms: 0.4, sent: 3, received: 3 })
    expect(callsSince(from)).toEqual(["master sys.exec(ping -c 3 -W 1 '192.168.1.101' 2>&1)"])
    expect(await cluster.ping(18)).toMatchObject({ success: false, avg_latency_ms: null, received: 0 })
    expect(await cluster.exec(3, "uptime")).toEqual({ code: 0, stdout: "", stderr: "" })
  })

  it("delete: tunnels stopped, master config rewritten; the password appears in login calls only", async () => {
    const from = fx.calls.length
    await cluster.remove("westcoast")
    expect(callsSince(from)).toEqual([...down("w1"), ...down("w2"), masterWrite])
    const withPassword = fx.calls.filter((c) => JSON.stringify(c.params).includes(PASSWORD))
    expect(withPassword.every((c) => c.lib === "auth" && c.method === "login")).toBe(true)
    expect(fs.readFileSync(path.join(dir, "cluster.json"), "utf8")).not.toContain(PASSWORD)
    expect(logged.join("\n")).not.toContain(PASSWORD)
  })
})
