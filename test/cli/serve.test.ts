import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { expect, it } from "vitest"
import { ROOT } from "../../core/Kernel.ts"

it("platform serve boots from a config file, serves, and stops gracefully on SIGTERM", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "platform-serve-"))
  const netlist = path.resolve(ROOT, "../shared/chip-sim/netlist")
  fs.writeFileSync(
    path.join(dir, "platform.yaml"),
    `data_dir: ./data\nlisteners:\n  - name: chip\n    port: 0\nplugins:\n  chip-sim:\n    netlist_dir: ${netlist}\n    workers: 1\n`
  )
  const child = spawn(process.execPath, [path.join(ROOT, "bin/platform.js"), "serve", "--config", path.join(dir, "platform.yaml")], {
    cwd: dir,
    env: { ...process.env, PLATFORM_LOG_LEVEL: "info", PLATFORM_LOG_FORMAT: "json" },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  child.stdout.on("data", (d) => (out += d))
  child.stderr.on("data", (d) => (out += d))
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setInterval(() => {
        const m = /listener chip serving on (http:\/\/[0-9.:]+)/.exec(out)
        if (m) {
          clearInterval(timer)
          resolve(m[1]!)
        }
      }, 50)
      exited.then(() => reject(new Error(`serve exited early:\n${out}`)))
    })
    const meta = await (await fetch(`${url}/api/v1/meta`)).json() as { transistors: number }
    expect(meta.transistors).toBe(3510)
    // One JSON log line per request: method, path, status, duration.
    await new Promise((r) => setTimeout(r, 100))
    const line = out.split("\n").find((l) => l.includes('"path":"/api/v1/meta"'))
    expect(JSON.parse(line!).annotations).toMatchObject({ method: "GET", path: "/api/v1/meta", status: 200 })
  } finally {
    child.kill("SIGTERM")
  }
  expect(await exited).toBe(0)
  expect(out).toContain("received SIGTERM, shutting down")
}, 60_000)
