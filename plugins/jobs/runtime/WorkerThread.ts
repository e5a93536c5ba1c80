/**
 * Workers of `platform serve` in a worker thread (redis backend): the thread launches the
 * workers-only layers (`Workers.ts`, what `platform worker` runs: `jobs` and the job plugins, no
 * listener) from the same config, so job handlers and the BullMQ worker run on their own event
 * loop and CPU core while the serving thread answers the API. The two share nothing but Redis: cancels reach the thread the way they
 * reach a `platform worker` process (the cancel channel).
 *
 * Threads do not inherit the TypeScript loader the serving thread was started with, so when the
 * platform runs from its TypeScript sources the thread starts from a small CommonJS bootstrap that
 * registers tsx (`tsx/esm/api`) before importing `Workers.ts`; from the compiled build (`dist/`)
 * it imports `Workers.js` as is.
 */
import { createRequire } from "node:module"
import * as path from "node:path"
import { Worker } from "node:worker_threads"
import { MODULE_EXT } from "../../../core/Paths.ts"

/** Messages from the thread to its parent. */
type FromThread =
  | { readonly ready: ReadonlyArray<string> }
  | { readonly error: string }
  | { readonly stopped: true }

// Runs inside the thread (CommonJS, evaluated from a string).
const BOOTSTRAP = `
const { workerData, parentPort } = require("node:worker_threads")
if (workerData.tsx) require(workerData.tsx).register()
import(workerData.entry).then(async ({ runWorkers }) => {
  const workers = await runWorkers({ yaml: workerData.text, file: workerData.file, cwd: workerData.cwd, filesUrl: workerData.filesUrl, geoRouterUrl: workerData.geoRouterUrl })
  parentPort.on("message", (m) => {
    if (m !== "stop") return
    workers.stop().finally(() => {
      parentPort.postMessage({ stopped: true })
      parentPort.close()
    })
  })
  parentPort.postMessage({ ready: workers.jobTypes })
}).catch((e) => {
  parentPort.postMessage({ error: String((e && (e.message || e.reason)) || e) })
  parentPort.close()
})
`

/** A running worker thread. */
export interface WorkerThread {
  /** Job types the thread's copy of the platform registered. */
  readonly jobTypes: ReadonlyArray<string>
  /**
   * Stops the thread's workers (running attempts go back to QUEUED for another worker, as with
   * `platform worker` on SIGTERM); the thread is terminated after `graceMs` if it has not ended.
   */
  stop(graceMs?: number): Promise<void>
}

/**
 * Starts workers in a new thread from the config at `source.file` with text `source.text`;
 * `filesUrl` is the download base of stored files when the config sets no `files.url`;
 * `geoRouterUrl` the geo router the thread resolves through when it sets no `geo_router_url`
 * (the serving thread's cluster router, registered there but not booted in the thread). Resolves
 * once they consume; rejects with the thread's boot error (a job plugin failing, Redis
 * unreachable) or when the thread dies first.
 */
export const startWorkerThread = (source: { readonly file: string; readonly text: string }, filesUrl?: string, geoRouterUrl?: string): Promise<WorkerThread> =>
  new Promise((resolve, reject) => {
    const require = createRequire(import.meta.url)
    const thread = new Worker(BOOTSTRAP, {
      eval: true,
      workerData: {
        tsx: MODULE_EXT === ".ts" ? require.resolve("tsx/esm/api") : undefined,
        entry: new URL(`../Workers${MODULE_EXT}`, import.meta.url).href,
        filesUrl,
        geoRouterUrl,
        text: source.text,
        file: path.basename(source.file),
        cwd: path.dirname(source.file)
      }
    })
    let stopping: Promise<void> | undefined
    const onBootExit = (code: number) => reject(new Error(`worker thread exited with code ${code} while starting`))
    thread.once("exit", onBootExit)
    thread.once("error", reject)
    thread.once("message", (m: FromThread) => {
      thread.off("exit", onBootExit)
      thread.off("error", reject)
      if ("error" in m) {
        void thread.terminate()
        return reject(new Error(m.error))
      }
      if (!("ready" in m)) return reject(new Error("worker thread: unexpected first message"))
      // Later errors of the thread (it keeps no state of ours) must not crash the server.
      thread.on("error", (e) => console.error(`[jobs] worker thread: ${e?.message ?? e}`))
      resolve({
        jobTypes: m.ready,
        stop: (graceMs = 10_000) => {
          stopping ??= new Promise<void>((done) => {
            const timer = setTimeout(() => void thread.terminate(), graceMs)
            thread.once("exit", () => {
              clearTimeout(timer)
              done()
            })
            thread.postMessage("stop")
          })
          return stopping
        }
      })
    })
  })
