/**
 * Every command's `examples` (from the built oclif manifest, i.e. what `--help` prints) are
 * checked, so the help never shows a command line the CLI refuses. Those of commands that manage
 * a running platform over its APIs (jobs, gateway status) run as written through bash with
 * `platform` being the compiled binary, in a folder holding the files they name, against a real
 * `platform serve` (the addresses 127.0.0.1:9001/9002/9003 they show become its listener, so no
 * example reaches a platform that happens to run on this machine, and the sample job id a job it
 * ran); each must get past oclif's parsing (no usage error), reach the platform and end within
 * 60 s. Every other example is parsed by oclif's own parser against the command's flags and args
 * (custom flag parsers included), which is where a usage error comes from: running those as
 * processes (each booting the platform's declarations, many its plugins) took two thirds of this
 * file's 70 s and checked nothing more, since what each command does is tested by its own file.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { Flags, Parser } from "@oclif/core"
import { pathToFileURL } from "node:url"
import { afterAll, beforeAll, expect, it } from "vitest"
import { ROOT } from "../../core/Paths.ts"
import { BIN, runCli, serve, type Served } from "../support/cli.ts"
import { platformYaml, tempDir } from "../plugins/jobs/support.ts"

interface Example {
  readonly id: string
  readonly line: string
}

const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, "oclif.manifest.json"), "utf8")) as { commands: Record<string, { examples?: Array<string | { command: string }>; relativePath?: Array<string> }> }
const examples: Array<Example> = Object.entries(manifest.commands).flatMap(([id, c]) =>
  (c.examples ?? []).map((e) => ({ id, line: (typeof e === "string" ? e : e.command).replaceAll("<%= config.bin %>", "platform") }))
)

const SAMPLE_JOB = "job_01jd6f8r2k0000000000000000"
const USAGE_ERROR = /Nonexistent flags?:|Unexpected arguments?:|Missing \d+ required arg|Missing required flag|command .* not found|Expected --\S+=|Expected a valid/

let platform: Served
let cwd: string
let jobId: string

beforeAll(async () => {
  const yaml = platformYaml({ backend: "embedded", dataDir: tempDir("examples-"), extra: `  gateway:\n    listener: jobs\n    token: t\n    engines:\n      - { id: tiny, kind: llama-cpp, default: true, model_path: /nonexistent/tiny.gguf }\n` })
  platform = await serve(yaml, ["jobs"])
  cwd = tempDir("examples-cwd-")
  fs.writeFileSync(path.join(cwd, "platform.yaml"), yaml)
  fs.mkdirSync(path.join(cwd, "deploy"))
  fs.writeFileSync(path.join(cwd, "deploy/platform.yaml"), yaml)
  fs.writeFileSync(path.join(cwd, "crawl.json"), JSON.stringify({ query: "solar panels", max_urls: 20 }))
  fs.copyFileSync(path.join(ROOT, "plugins/chip-sim/console/examples/counter.s"), path.join(cwd, "prog.s"))
  fs.copyFileSync(path.join(ROOT, "plugins/chip-sim/console/examples/game.s"), path.join(cwd, "game.s"))
  fs.copyFileSync(path.join(ROOT, "plugins/job-graph/templates/basic_research.yaml"), path.join(cwd, "pipeline.yaml"))
  const submitted = await runCli(["jobs", "submit", "echo", "-f", "value=example", "-f", "file=true", "--watch", "--api-url", platform.url("jobs")])
  expect(submitted.code).toBe(0)
  jobId = submitted.stdout.split(" ")[0]!
}, 120_000)

afterAll(async () => {
  await platform?.stop()
})

/** Runs one example line in bash; stops it after `limitMs`. */
const runExample = (line: string, limitMs: number): Promise<{ code: number | null; output: string; stopped: boolean }> =>
  new Promise((resolve) => {
    const api = platform.url("jobs")
    const script = `platform() { "${process.execPath}" "${BIN}" "$@"; }\n${line.replaceAll("http://127.0.0.1:9001", api).replaceAll("http://127.0.0.1:9002", api).replaceAll("http://127.0.0.1:9003", api).replaceAll(SAMPLE_JOB, jobId)}`
    const child = spawn("bash", ["-c", script], {
      cwd,
      env: { ...process.env, PLATFORM_API_URL: api, GATEWAY_API_URL: api, GATEWAY_URL: api, CLUSTER_API_URL: api, PLATFORM_CONFIG: "", PLATFORM_LOG_LEVEL: "error" },
      stdio: ["pipe", "pipe", "pipe"],
      detached: true
    })
    let output = ""
    child.stdout.on("data", (d) => (output += d))
    child.stderr.on("data", (d) => (output += d))
    child.stdin.end()
    let stopped = false
    const timer = setTimeout(() => {
      stopped = true
      process.kill(-child.pid!, "SIGTERM")
    }, limitMs)
    child.once("close", (code) => {
      clearTimeout(timer)
      resolve({ code, output, stopped })
    })
  })

/** Commands that manage the running platform over its APIs: their examples are run. */
const MANAGING = /^(jobs|gateway:status)/

/** Words of a shell line (quotes honoured), up to the first `|`, `;`, `&&` or redirection. */
const words = (line: string): Array<string> => {
  const out: Array<string> = []
  for (const m of line.matchAll(/"((?:[^"\\]|\\.)*)"|'([^']*)'|(\|\||&&|[|;<>])|([^\s"'|;<>&]+)/g)) {
    if (m[3]) break
    out.push(m[1] ?? m[2] ?? m[4]!)
  }
  return out
}

/** Parses an example with the command's own flags and args (throws a usage error). */
const parseExample = async (ex: Example): Promise<void> => {
  const w = words(ex.line)
  const at = w.indexOf("platform")
  const idWords = ex.id.split(":")
  expect(w.slice(at + 1, at + 1 + idWords.length), ex.line).toEqual(idWords)
  const rel = manifest.commands[ex.id]!.relativePath!
  const mod = await import(pathToFileURL(path.join(ROOT, ...rel)).href)
  const C = mod.default as { flags?: object; baseFlags?: object; args?: object; strict?: boolean; enableJsonFlag?: boolean }
  // oclif adds `--json` itself to a command with enableJsonFlag.
  const json = C.enableJsonFlag ? { json: Flags.boolean() } : {}
  await Parser.parse(w.slice(at + 1 + idWords.length), { flags: { ...C.baseFlags, ...json, ...C.flags } as never, args: (C.args ?? {}) as never, strict: C.strict ?? true })
}

it(`runs all ${examples.length} examples of ${Object.keys(manifest.commands).length} commands without a usage error`, async () => {
  expect(examples.length).toBeGreaterThan(40)
  const failures: Array<string> = []
  const queue = [...examples]
  const work = async () => {
    for (let ex = queue.shift(); ex; ex = queue.shift()) {
      if (!MANAGING.test(ex.id)) {
        await parseExample(ex).catch((e) => failures.push(`${ex.line}\n  ${(e as Error).message}`))
        continue
      }
      const r = await runExample(ex.line, 60_000)
      const usage = USAGE_ERROR.test(r.output)
      const unreachable = /cannot reach the API/.test(r.output) || r.stopped
      if (usage || unreachable) failures.push(`${ex.line}\n  exit ${r.code}${r.stopped ? " (stopped)" : ""}: ${r.output.trim().split("\n").slice(-3).join(" | ")}`)
    }
  }
  await Promise.all([work(), work(), work(), work()])
  expect(failures).toEqual([])
}, 1_800_000)
