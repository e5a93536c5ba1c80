/**
 * Runs the real `platform` binary (bin/platform.js) from the repository root, as a user would.
 * Resolves with the exit code and both outputs; never rejects on a non-zero exit.
 */
import { execFile } from "node:child_process"
import * as path from "node:path"
import { promisify } from "node:util"
import { ROOT } from "../../core/Kernel.ts"

export interface CliResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** `platform ...args` with `PLATFORM_LOG_LEVEL=error` unless `env` says otherwise. */
export const runCli = async (args: Array<string>, env: Record<string, string> = {}): Promise<CliResult> => {
  try {
    const r = await promisify(execFile)(process.execPath, [path.join(ROOT, "bin/platform.js"), ...args], {
      cwd: ROOT,
      env: { ...process.env, PLATFORM_LOG_LEVEL: "error", ...env }
    })
    return { code: 0, stdout: r.stdout, stderr: r.stderr }
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string }
    return { code: err.code, stdout: err.stdout, stderr: err.stderr }
  }
}
