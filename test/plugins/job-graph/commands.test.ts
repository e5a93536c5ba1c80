/**
 * `platform graph validate|ops|templates`, run as a user would (bin/platform.js), against a
 * platform.yaml with the jobs, job-graph and job-archive plugins.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { runCli } from "../../support/cli.ts"
import { tempDir } from "../jobs/support.ts"

let dir: string
let config: string

beforeAll(() => {
  dir = tempDir()
  config = path.join(dir, "platform.yaml")
  fs.writeFileSync(config, `data_dir: ./data
listeners:
  - { name: jobs, host: 127.0.0.1, port: 0 }
plugins:
  jobs: {}
  job-graph: {}
  job-archive: {}
`)
  fs.writeFileSync(path.join(dir, "bad.yaml"), `name: bad
inputs:
  - { name: site, type: string, required: true }
stages:
  - name: history
    sequential:
      - { op: fetch_archive, input: site, params: { limit: 3, source: waybak }, output: snaps }
      - { op: merge, input: [snaps, missing], output: all }
outputs: [all, report]
`)
})

describe("platform graph", () => {
  it("validate prints every problem with FILE:LINE:COLUMN PATH and exits 1; --json gives the report", async () => {
    const file = path.join(dir, "bad.yaml")
    const r = await runCli(["graph", "validate", file, "--config", config])
    expect(r.code).toBe(1)
    expect(r.stdout.trim().split("\n")).toEqual([
      `${file}:7:71 stages[0].sequential[0].params.source: param source: Expected "wayback" | "commoncrawl", actual "waybak"`,
      `${file}:8:37 stages[0].sequential[1].input[1]: state "missing" is read before any stage writes it`,
      `${file}:9:16 outputs[1]: output "report" is not written by any stage`
    ])
    const j = await runCli(["graph", "validate", "--template", "temporal_analysis", "--params", `{"url": "example.com"}`, "--config", config, "--json"])
    expect(j.code, j.stderr).toBe(1)
    // temporal_analysis needs text, LLM and report operations this configuration does not load.
    const report = JSON.parse(j.stdout) as { valid: boolean; problems: Array<{ path: string; message: string }> }
    expect(report.valid).toBe(false)
    expect(report.problems.map((p) => p.message)).toContain(`unknown operation "to_text_batch"`)
  }, 60_000)

  it("ops lists each operation with its types and plugin; templates lists the ten built-ins", async () => {
    const r = await runCli(["graph", "ops", "--config", config, "--json"])
    expect(r.code, r.stderr).toBe(0)
    const ops = JSON.parse(r.stdout) as Array<{ name: string; plugin: string; input_types: string[]; output_type: string }>
    expect(ops.find((o) => o.name === "fetch_archive")).toMatchObject({ plugin: "job-archive", input_types: ["string", "string[]"], output_type: "snapshot[]" })
    expect(ops.map((o) => o.name)).toEqual(["archive_discover", "fetch_archive", "keyword_alerts", "merge", "set"])
    const t = await runCli(["graph", "templates", "--config", config])
    expect(t.code, t.stderr).toBe(0)
    expect(t.stdout).toMatch(/basic_research\s+built-in\s+1\.0\s+query: string, max_urls\?: int = 30\s+urls, synthesis/)
    expect(t.stdout.match(/built-in/g)).toHaveLength(10)
  }, 60_000)
})
