import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { describe, expect, it } from "vitest"
import { ROOT } from "../../core/Paths.ts"
import { runCli } from "../support/cli.ts"

const run = runCli

const tmpConfig = (text: string) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "platform-cli-"))
  fs.writeFileSync(path.join(dir, "platform.yaml"), text)
  return path.join(dir, "platform.yaml")
}

/** Packages a plugin's implementation loads, none of which reading declarations may load. */
const IMPLEMENTATION_PACKAGES = ["playwright-core", "node-llama-cpp", "bullmq", "ioredis", "openai", "pg", "better-sqlite3", "@effect/platform-node", "undici", "piscina", "linkedom"]

describe("platform CLI", () => {
  it("config validate reports the located error and exits 1", async () => {
    const file = tmpConfig("listeners:\n  - name: chip\n    port: 99999\n")
    const r = await run(["config", "validate", "--config", file])
    expect(r.code).toBe(1)
    expect(r.stderr).toContain("platform.yaml:3:11 listeners[0].port: expected")
    const json = await run(["config", "validate", "--config", file, "--json"])
    expect(JSON.parse(json.stdout).error.message).toContain("platform.yaml:3:11 listeners[0].port")
  })

  it("config validate reads plugin declarations only: no implementation package is loaded", async () => {
    const trace = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "trace-")), "modules.txt")
    const r = await run(["config", "validate"], {
      MODULE_TRACE_FILE: trace,
      NODE_OPTIONS: `--import ${pathToFileURL(path.join(ROOT, "test/support/trace/register.mjs")).href}`
    })
    expect(r.code, r.stderr).toBe(0)
    const loaded = fs.readFileSync(trace, "utf8").trim().split("\n")
    // Every plugin of the default platform.yaml was read...
    for (const p of ["jobs", "gateway", "chip-sim", "job-browser", "cluster-vpn", "registry"]) expect(loaded.some((u) => u.endsWith(`/plugins/${p}/plugin.js`)), p).toBe(true)
    // ...and none of its implementation.
    const heavy = loaded.filter((u) => IMPLEMENTATION_PACKAGES.some((pkg) => u.includes(`/node_modules/${pkg}/`)) || /\/plugins\/[^/]+\/Setup\.js$/.test(u))
    expect(heavy).toEqual([])
  })

  it("config validate says what it checked and reports each plugin valid/invalid/disabled (never running), listener clashes too", async () => {
    const file = tmpConfig("listeners:\n  - { name: a, port: 9101 }\n  - { name: b, port: 9101 }\nplugins:\n  jobs:\n    listener: a\n    backend: embeded\n  job-vectl:\n    listener: a\n  chip-sim:\n    enabled: false\n")
    const r = await run(["config", "validate", "--config", file])
    expect(r.code).toBe(1)
    expect(r.stdout).toContain("the file against the platform schema")
    expect(r.stdout).toMatch(/^plugin +jobs +invalid/m)
    expect(r.stdout).toMatch(/^plugin +job-vectl +valid/m)
    expect(r.stdout).toMatch(/^plugin +chip-sim +disabled/m)
    expect(r.stdout).toMatch(/^listener +b +invalid +127\.0\.0\.1:9101/m)
    expect(r.stdout).not.toContain("running")
    expect(r.stderr).toMatch(/platform\.yaml:7:\d+ plugins\.jobs\.backend: /)
    expect(r.stdout).toMatch(/platform\.yaml: invalid \(2 errors\)/)
    const json = JSON.parse((await run(["config", "validate", "--config", file, "--json"])).stdout)
    expect(json.plugins.map((p: { name: string; status: string }) => `${p.name}:${p.status}`)).toEqual(["jobs:invalid", "job-vectl:valid", "chip-sim:disabled"])
  })

  it("config show --resolved marks values from environment variables and from defaults", async () => {
    const file = tmpConfig("listeners:\n  - name: main\n    port: ${P:-1234}\n    host: ${H:-127.0.0.1}\nplugins:\n  jobs:\n    listener: main\n")
    const r = await run(["config", "show", "--config", file, "--resolved"], { P: "4321" })
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/^ {4}port: 4321 # env P$/m)
    expect(r.stdout).toMatch(/^ {4}host: 127\.0\.0\.1 # default of \$\{H:-127\.0\.0\.1\}$/m)
    expect(r.stdout).toMatch(/^ {4}backend: embedded # default$/m)
    expect(r.stdout).toMatch(/^ {4}listener: main$/m)
    const json = JSON.parse((await run(["config", "show", "--config", file, "--resolved", "--json"], { P: "4321" })).stdout)
    expect(json.sources).toMatchObject({ "listeners.0.port": "env P", "plugins.jobs.backend": "default" })
    expect(json.sources["plugins.jobs.listener"]).toBeUndefined()
  })

  it("config show redacts secrets and interpolates the environment (--json)", async () => {
    const file = tmpConfig("listeners:\n  - name: main\n    port: ${P:-1234}\nplugins:\n  x:\n    enabled: false\n    api_key: ${KEY}\n")
    const r = await run(["config", "show", "--config", file, "--json"], { KEY: "s3cret" })
    expect(r.code).toBe(0)
    const shown = JSON.parse(r.stdout)
    expect(shown.listeners[0]).toMatchObject({ name: "main", host: "127.0.0.1", port: 1234 })
    expect(shown.plugins.x.api_key).toBe("***")
    expect(r.stdout).not.toContain("s3cret")
  })

  it("plugins list and routes describe the default platform.yaml (--json)", async () => {
    const list = await run(["plugins", "list", "--json"])
    expect(list.code).toBe(0)
    const plugins = JSON.parse(list.stdout) as Array<{ name: string; status: string; listener: string }>
    expect(plugins.find((p) => p.name === "chip-sim")).toMatchObject({ status: "running", listener: "chip" })
    const routes = await run(["routes", "--json"])
    const chip = (JSON.parse(routes.stdout) as Array<{ listener: string; routes: Array<{ method: string; path: string }> }>).find((l) => l.listener === "chip")!
    expect(chip.routes).toContainEqual(expect.objectContaining({ method: "POST", path: "/api/v1/step", plugin: "chip-sim" }))
  })

  it("the README's CLI table lists every command of the build's manifest, each with an example", () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, "oclif.manifest.json"), "utf8")) as { commands: Record<string, unknown> }
    const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8")
    const rows = new Map([...readme.matchAll(/^\| `platform ([a-z0-9 -]+)` \| [^|]+\| `([^`]+)` \|$/gm)].map((m) => [m[1]!, m[2]!]))
    for (const id of [...Object.keys(manifest.commands), "autocomplete"]) {
      expect(rows.get(id.replaceAll(":", " ")), `README CLI row of ${id}`).toMatch(/^(\S+=\S+ |echo .* \| )?platform /)
    }
  })

  it("--help lists the plugins' commands from the manifest; shell completion is set up by autocomplete", async () => {
    const help = await run(["--help"])
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/^ {2}jobs +Jobs over the Jobs API/m)
    const jobs = await run(["jobs", "--help"])
    for (const c of ["cancel", "files", "get", "list", "submit", "watch"]) expect(jobs.stdout).toMatch(new RegExp(`^ {2}jobs ${c} `, "m"))
    const completion = await run(["autocomplete", "bash"], { HOME: fs.mkdtempSync(path.join(os.tmpdir(), "home-")) })
    expect(completion.code).toBe(0)
    expect(completion.stdout).toContain("platform autocomplete")
  })
})
