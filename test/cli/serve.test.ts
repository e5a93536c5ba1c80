import * as path from "node:path"
import { expect, it } from "vitest"
import { ROOT } from "../../core/Kernel.ts"
import { serve } from "../support/cli.ts"

it("platform serve boots from a config file, serves, and stops gracefully on SIGTERM", async () => {
  const netlist = path.resolve(ROOT, "../shared/chip-sim/netlist")
  const platform = await serve(`data_dir: ./data\nlisteners:\n  - name: chip\n    port: 0\nplugins:\n  chip-sim:\n    netlist_dir: ${netlist}\n    workers: 1\n`, ["chip"])
  let stopped = false
  try {
    const meta = await (await fetch(`${platform.url("chip")}/api/v1/meta`)).json() as { transistors: number }
    expect(meta.transistors).toBe(3510)
    // One JSON log line per request: method, path, status, duration.
    await new Promise((r) => setTimeout(r, 100))
    const line = platform.output().split("\n").find((l) => l.includes('"path":"/api/v1/meta"'))
    expect(JSON.parse(line!).annotations).toMatchObject({ method: "GET", path: "/api/v1/meta", status: 200 })
    stopped = true
    expect(await platform.stop()).toBe(0)
  } finally {
    if (!stopped) await platform.stop()
  }
  expect(platform.output()).toContain("received SIGTERM, shutting down")
}, 60_000)
