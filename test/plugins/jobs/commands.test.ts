/**
 * `platform jobs ...` and `platform gateway status` as an admin runs them: the compiled binary
 * against a real `platform serve` (embedded jobs backend, the test-jobs fixture job types, a
 * gateway whose model file is missing) on loopback ports. The progress bar is read from a
 * pseudo-terminal (`script`).
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BIN, runCli, serve, type Served } from "../../support/cli.ts"
import { freePort, jobsClient, platformYaml, tempDir } from "./support.ts"

let platform: Served
let api: string
const cli = (args: Array<string>, input?: string) => runCli([...args, "--api-url", api], {}, input === undefined ? {} : { input })

beforeAll(async () => {
  const yaml = platformYaml({ backend: "embedded", dataDir: tempDir("jobs-cli-"), limits: { worker_timeout_s: 120 }, extra: `  gateway:\n    listener: jobs\n    token: t\n    engines:\n      - { id: tiny, kind: llama-cpp, default: true, model_path: /nonexistent/tiny.gguf }\n` })
  platform = await serve(yaml, ["jobs"])
  api = platform.url("jobs")
}, 90_000)

afterAll(async () => {
  expect(await platform?.stop()).toBe(0)
})

/** Runs `command` in a pseudo-terminal (util-linux `script`); resolves with its exit code and what the terminal showed. */
const inTerminal = async (command: Array<string>): Promise<{ code: number; screen: string }> => {
  const line = command.map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ")
  try {
    const r = await promisify(execFile)("script", ["-qefc", line, "/dev/null"], { env: { ...process.env, COLUMNS: "120", TERM: "xterm" } })
    return { code: 0, screen: r.stdout }
  } catch (e) {
    const err = e as { code: number; stdout: string }
    return { code: err.code, screen: err.stdout }
  }
}

describe("platform jobs", () => {
  it("submits a job and watches it to COMPLETED with a progress bar in a terminal", async () => {
    // 10 s in four progress steps: the watch (a fresh process) sees some of them even on a busy machine.
    const submitted = await cli(["jobs", "submit", "echo", "-f", "value=hello", "-f", "sleep_ms=10000", "--json"])
    expect(submitted.code).toBe(0)
    const job = JSON.parse(submitted.stdout)
    expect(job).toMatchObject({ job_type: "echo", payload: { value: "hello", sleep_ms: 10000 } })
    const watched = await inTerminal([process.execPath, BIN, "jobs", "watch", job.job_id, "--api-url", api])
    expect(watched.code).toBe(0)
    // cli-progress's bar (█ done, ░ to do) with the job's progress and message as they came.
    expect(watched.screen).toMatch(/█+░+ \d+% \| PROCESSING \| step \d of 4/)
    expect(watched.screen).toContain("100% | COMPLETED")
    expect(watched.screen).toMatch(new RegExp(`${job.job_id} COMPLETED in \\d+\\.\\d s`))
    const final = await jobsClient(api).get(job.job_id)
    expect(final).toMatchObject({ status: "COMPLETED", result: { value: "hello" } })
  })

  it("--json prints exactly what the API answers (get, list, watch, cancel of an ended job)", async () => {
    const { job_id } = JSON.parse((await cli(["jobs", "submit", "echo", "-f", "value=json", "--json"])).stdout)
    const watched = await cli(["jobs", "watch", job_id, "--json"])
    expect(watched.code).toBe(0)
    const api_ = jobsClient(api)
    const fromApi = await api_.get(job_id)
    expect(fromApi.status).toBe("COMPLETED")
    expect(JSON.parse(watched.stdout)).toEqual(fromApi)
    expect(JSON.parse((await cli(["jobs", "get", job_id, "--json"])).stdout)).toEqual(fromApi)
    const list = await cli(["jobs", "list", "--type", "echo", "--status", "COMPLETED", "--limit", "2", "--json"])
    expect(JSON.parse(list.stdout)).toEqual((await api_.list("job_type=echo&status=COMPLETED&limit=2")).body)
    const cancelEnded = await cli(["jobs", "cancel", job_id, "--json"])
    expect(cancelEnded.code).toBe(1)
    expect(JSON.parse(cancelEnded.stdout)).toEqual(fromApi)
    const table = await cli(["jobs", "list", "--type", "echo"])
    expect(table.stdout).toMatch(new RegExp(`^ID\\s+TYPE\\s+STATUS\\s+PROGRESS\\s+CREATED\\s+MESSAGE$`, "m"))
    expect(table.stdout).toMatch(new RegExp(`^${job_id}\\s+echo\\s+COMPLETED\\s+100%`, "m"))
  })

  it("cancels a running job: it ends CANCELLED, and a second cancel exits 1", async () => {
    const { job_id } = JSON.parse((await cli(["jobs", "submit", "echo", "-f", "value=long", "-f", "sleep_ms=30000", "--json"])).stdout)
    await jobsClient(api).waitFor(job_id, (j) => j.status === "PROCESSING")
    const cancelled = await cli(["jobs", "cancel", job_id])
    expect(cancelled).toMatchObject({ code: 0, stdout: `${job_id} CANCELLED\n` })
    expect((await jobsClient(api).get(job_id)).status).toBe("CANCELLED")
    const again = await cli(["jobs", "cancel", job_id])
    expect(again.code).toBe(1)
    expect(again.stderr).toContain(`${job_id} had already ended: CANCELLED`)
    const watched = await cli(["jobs", "watch", job_id])
    expect(watched.code).toBe(1)
    expect(watched.stderr).toContain(`${job_id} CANCELLED`)
  })

  it("a failing job's watch exits 1 with its error kind and message, over the event stream and by polling", async () => {
    const payload = JSON.stringify({ value: "x", fail_times: 9, fail_kind: "REMOTE_ERROR", retry_policy: { max_retries: 0 } })
    const submitted = await cli(["jobs", "submit", "echo", "--payload", "-"], payload)
    expect(submitted.code).toBe(0)
    const id = submitted.stdout.split(" ")[0]!
    for (const mode of [[], ["--poll", "--interval", "100"]]) {
      const watched = await cli(["jobs", "watch", id, ...mode])
      expect(watched.code).toBe(1)
      expect(watched.stderr).toMatch(new RegExp(`${id} FAILED( in [0-9.]+ s)?: REMOTE_ERROR: planned failure 1`))
    }
    const shown = await cli(["jobs", "get", id])
    expect(shown.stdout).toMatch(/^error\s+REMOTE_ERROR: planned failure 1$/m)
  })

  it("an invalid payload exits 1 listing the issues; an unknown type exits 1", async () => {
    const bad = await cli(["jobs", "submit", "echo", "-f", "sleep_ms=soon"])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain("invalid echo payload (VALIDATION_ERROR)")
    expect(bad.stderr).toMatch(/value|sleep_ms/)
    const unknown = await cli(["jobs", "submit", "no-such-type", "-f", "a=1"])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain(`unknown job type "no-such-type"`)
  })

  it("downloads a job's files", async () => {
    const submitted = await cli(["jobs", "submit", "echo", "-f", "value=artifact", "-f", "file=true", "--watch"])
    expect(submitted.code).toBe(0)
    const id = submitted.stdout.split(" ")[0]!
    const out = tempDir("jobs-files-")
    const files = await cli(["jobs", "files", id, "--out", out, "--json"])
    expect(files.code).toBe(0)
    const [file] = JSON.parse(files.stdout)
    expect(file).toMatchObject({ path: path.join(out, "echo.txt"), bytes: "echo artifact".length })
    expect(fs.readFileSync(path.join(out, "echo.txt"), "utf8")).toBe("echo artifact")
  })

  it("says in one line, exit 1, when the API is down (flag or *_API_URL variable)", async () => {
    const down = `http://127.0.0.1:${await freePort()}`
    for (const r of [await runCli(["jobs", "list", "--api-url", down]), await runCli(["jobs", "get", "job_x"], { PLATFORM_API_URL: down })]) {
      expect(r.code).toBe(1)
      expect(r.stderr.trim().split("\n")).toEqual([`Error: cannot reach the API at ${down} (ECONNREFUSED): is \`platform serve\` running there? Set --api-url or PLATFORM_API_URL.`])
    }
  })
})

describe("platform gateway status", () => {
  it("shows /status as a table, exit 1 when the default model is unavailable; --json is the document", async () => {
    const r = await runCli(["gateway", "status", "--api-url", api])
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/^MODEL\s+ENGINE\s+AVAILABLE$/m)
    expect(r.stdout).toMatch(/^tiny\s+\S+\s+no$/m)
    const json = await runCli(["gateway", "status", "--json"], { GATEWAY_API_URL: api })
    expect(JSON.parse(json.stdout)).toEqual(await (await fetch(`${api}/status`)).json())
  })
})
