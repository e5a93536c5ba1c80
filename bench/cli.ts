/**
 * CLI start-up (`npm run bench -- cli`): wall time of `platform --help`, `platform config
 * validate` (the repository's platform.yaml) and `platform jobs list` against a running platform
 * (50 jobs in its store: vectl submissions its schema refused, recorded FAILED), each the median
 * of 10 runs of the compiled binary (bin/platform.js, built first when stale), beside `node -e 0`
 * on the same machine. Targets (issue 23): 0.4 s, 0.8 s and 0.6 s.
 */
import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ROOT, startPlatform } from "../core/Kernel.ts"

const RUNS = 10

/** One run of `node ...args`: wall seconds; throws when it fails. Asynchronous: the platform under test runs in this process. */
const timed = (args: Array<string>, env: Record<string, string>): Promise<number> =>
  new Promise((resolve, reject) => {
    const started = process.hrtime.bigint()
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] })
    let stderr = ""
    child.stderr.on("data", (d) => (stderr += d))
    child.once("close", (code) => {
      const s = Number(process.hrtime.bigint() - started) / 1e9
      if (code === 0) resolve(s)
      else reject(new Error(`node ${args.join(" ")} exited ${code}: ${stderr}`))
    })
  })

/** Median wall time in seconds of `node ...args` over `RUNS` runs, one after another. */
const median = async (args: Array<string>, env: Record<string, string> = {}): Promise<number> => {
  const times: Array<number> = []
  for (let i = 0; i < RUNS; i++) times.push(await timed(args, env))
  times.sort((a, b) => a - b)
  return (times[RUNS / 2 - 1]! + times[RUNS / 2]!) / 2
}

/** The figures, in seconds. */
export const benchCli = async (): Promise<Record<string, number>> => {
  execFileSync(process.execPath, [path.join(ROOT, "scripts/build.mjs"), "--if-stale"], { cwd: ROOT, stdio: "inherit" })
  const bin = path.join(ROOT, "bin/platform.js")
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cli-bench-"))
  const platform = await startPlatform({
    cwd: ROOT,
    yaml: `data_dir: ${dataDir}\nlog: { level: warning }\nlisteners:\n  - { name: jobs, port: 0 }\nplugins:\n  jobs:\n    backend: embedded\n    workers: false\n  job-vectl: {}\n`
  })
  try {
    const api = platform.url("jobs")
    for (let i = 0; i < 50; i++) {
      await fetch(`${api}/api/v1/jobs/vectl`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ note: i }) })
    }
    const figures = {
      node_e_0_s: await median(["-e", "0"]),
      help_s: await median([bin, "--help"]),
      config_validate_s: await median([bin, "config", "validate"], { PLATFORM_LOG_LEVEL: "error" }),
      jobs_list_s: await median([bin, "jobs", "list", "--api-url", api])
    }
    const row = (name: string, s: number, target?: number) => `${name.padEnd(26)} ${s.toFixed(3)} s${target ? `  (target ${target} s: ${s <= target ? "met" : "missed"})` : ""}`
    console.log([
      `medians of ${RUNS} runs, ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(2)}`,
      row("node -e 0", figures.node_e_0_s),
      row("platform --help", figures.help_s, 0.4),
      row("platform config validate", figures.config_validate_s, 0.8),
      row("platform jobs list", figures.jobs_list_s, 0.6)
    ].join("\n"))
    return figures
  } finally {
    await platform.stop()
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === new URL(import.meta.url).pathname) await benchCli()
