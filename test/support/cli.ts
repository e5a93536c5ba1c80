/**
 * Runs the real `platform` binary (bin/platform.js, the compiled build: see `build.ts`) from the
 * repository root, as a user would, and `platform serve` as a child process on loopback.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ROOT } from "../../core/Kernel.ts"

/** The binary users run. */
export const BIN = path.join(ROOT, "bin/platform.js")

export interface CliResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/**
 * `platform ...args` with `PLATFORM_LOG_LEVEL=error` unless `env` says otherwise; `input` is
 * written to its stdin (closed either way). Resolves with the exit code and both outputs; never
 * rejects on a non-zero exit.
 */
export const runCli = (args: Array<string>, env: Record<string, string> = {}, options: { input?: string; cwd?: string } = {}): Promise<CliResult> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd ?? ROOT, env: { ...process.env, PLATFORM_LOG_LEVEL: "error", ...env } })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stderr += d))
    child.once("error", reject)
    child.once("close", (code) => resolve({ code: code ?? 1, stdout, stderr }))
    child.stdin.end(options.input ?? "")
  })

/** A `platform serve` child: the URL of each listener, and `stop` (SIGTERM, resolves with the exit code). */
export interface Served {
  readonly url: (listener: string) => string
  readonly output: () => string
  readonly stop: () => Promise<number | null>
}

/**
 * Writes `yaml` to a temporary platform.yaml (log level `info`, JSON lines, so the listeners'
 * "serving on" lines can be read) and runs `platform serve` on it; resolves once every listener
 * named in `listeners` serves. Rejects with the output when serve exits first or after 60 s.
 */
export const serve = async (yaml: string, listeners: ReadonlyArray<string>): Promise<Served> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "platform-serve-"))
  const file = path.join(dir, "platform.yaml")
  fs.writeFileSync(file, yaml)
  const child = spawn(process.execPath, [BIN, "serve", "--config", file], {
    cwd: dir,
    env: { ...process.env, PLATFORM_LOG_LEVEL: "info", PLATFORM_LOG_FORMAT: "json" },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  child.stdout.on("data", (d) => (out += d))
  child.stderr.on("data", (d) => (out += d))
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  const urls = new Map<string, string>()
  await new Promise<void>((resolve, reject) => {
    const deadline = Date.now() + 60_000
    const timer = setInterval(() => {
      for (const m of out.matchAll(/listener ([a-z0-9-]+) serving on (http:\/\/[0-9.:]+)/g)) urls.set(m[1]!, m[2]!)
      if (listeners.every((l) => urls.has(l))) {
        clearInterval(timer)
        resolve()
      } else if (Date.now() > deadline) {
        clearInterval(timer)
        child.kill("SIGKILL")
        reject(new Error(`serve did not start:\n${out}`))
      }
    }, 50)
    exited.then(() => {
      clearInterval(timer)
      reject(new Error(`serve exited early:\n${out}`))
    })
  })
  return {
    url: (listener) => urls.get(listener) ?? "",
    output: () => out,
    stop: () => {
      child.kill("SIGTERM")
      return exited
    }
  }
}
