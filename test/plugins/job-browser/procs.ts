/**
 * Finds Chromium processes of a `BrowserPool` by the tag in their environment
 * (`PLATFORM_JOB_BROWSER=<pool tag>.<launch>`), which survives reparenting of orphans.
 */
import { taggedProcesses } from "../../../plugins/job-browser/BrowserPool.ts"

/** Pids whose tag starts with `tagPrefix` (a pool's tag, or `<pid>-` for every pool of a process). */
export const taggedPids = (tagPrefix: string): number[] => taggedProcesses(tagPrefix, true)

/** Waits until no such process is left (Chromium's helpers exit a moment after the browser). */
export const waitNoTagged = async (tagPrefix: string, ms = 5_000): Promise<number[]> => {
  const until = Date.now() + ms
  for (;;) {
    const left = taggedPids(tagPrefix)
    if (left.length === 0 || Date.now() > until) return left
    await new Promise((r) => setTimeout(r, 100))
  }
}
