/**
 * Vitest global setup: tests that run the `platform` binary run the compiled build, so it is
 * brought up to date first (`scripts/build.mjs --if-stale`: nothing to do when `dist/` is newer
 * than every source file; a full build takes about 15 s).
 */
import { execFileSync } from "node:child_process"
import * as path from "node:path"
import { ROOT } from "../../core/Paths.ts"

export default function setup(): void {
  execFileSync(process.execPath, [path.join(ROOT, "scripts/build.mjs"), "--if-stale"], { cwd: ROOT, stdio: "inherit" })
}
