/**
 * Finds Chromium processes of a `BrowserPool` by the tag in their environment
 * (`PLATFORM_JOB_BROWSER=<tag>`), which survives reparenting of orphans.
 */
import { readdirSync, readFileSync } from "node:fs"
import { TAG_ENV } from "../../../plugins/job-browser/BrowserPool.ts"

/** Pids whose environment carries `TAG_ENV=tag` (Linux `/proc`); `prefix` matches tags starting with `tag`. */
export const taggedPids = (tag: string, prefix = false): number[] => {
  const needle = `${TAG_ENV}=${tag}${prefix ? "" : "\0"}`
  const out: number[] = []
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue
    try {
      if (readFileSync(`/proc/${d}/environ`, "latin1").includes(needle)) out.push(Number(d))
    } catch {
      // exited meanwhile, or not ours to read
    }
  }
  return out
}

/** Waits until no tagged process is left (Chromium's helpers exit a moment after the browser). */
export const waitNoTagged = async (tag: string, ms = 5_000, prefix = false): Promise<number[]> => {
  const until = Date.now() + ms
  for (;;) {
    const left = taggedPids(tag, prefix)
    if (left.length === 0 || Date.now() > until) return left
    await new Promise((r) => setTimeout(r, 100))
  }
}
