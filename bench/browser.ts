/**
 * Screenshot cost per page with a cold browser (launch included) versus a warm one (the
 * plugin's steady state: one Chromium per worker process, a fresh context per job).
 *
 * Serves a small fixed page on loopback, then measures the `screenshot` job handler itself
 * (context, load, PNG capture, file store write to a temporary directory):
 * - `cold_ms_per_page`: a new pool per job (Chromium launch + one page), mean of `COLD_RUNS`;
 * - `warm_ms_per_page`: one-URL jobs on an already running browser, mean of `WARM_RUNS`;
 * - `warm_batch_ms_per_page`: one job of `BATCH` URLs (one context shared), per page;
 * - `launch_ms`: Chromium launch alone, mean over the cold runs.
 * Run: `node --import tsx bench/browser.ts` (needs /usr/bin/chromium).
 */
import * as Schema from "effect/Schema"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import type { JobContext } from "../plugins/jobs/Contract.ts"
import { directOnly } from "../plugins/jobs/net/GeoRouting.ts"
import { BrowserConfig } from "../plugins/job-browser/plugin.ts"
import { browserSettings, makeBrowserPool } from "../plugins/job-browser/Setup.ts"
import { screenshotJob } from "../plugins/job-browser/Screenshot.ts"

const COLD_RUNS = 3
const WARM_RUNS = 10
const BATCH = 5

const PAGE = `<!doctype html><html><head><title>bench</title></head><body style="margin:0;font:16px sans-serif">
<h1>Benchmark page</h1>${"<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>".repeat(40)}</body></html>`

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
const round = (x: number) => Math.round(x * 10) / 10

/**
 * Runs the benchmark and returns `{cold_ms_per_page, warm_ms_per_page, warm_batch_ms_per_page,
 * launch_ms}` (milliseconds, wall clock). Throws when Chromium cannot launch.
 */
export async function benchBrowser(): Promise<Record<string, number>> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html" })
    res.end(PAGE)
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  const dir = mkdtempSync(join(tmpdir(), "bench-browser-"))
  let n = 0
  const ctx: JobContext = {
    jobId: "job_bench",
    attempt: 1,
    signal: new AbortController().signal,
    workDir: dir,
    progress: async () => undefined,
    files: {
      put: async (name, data) => {
        const path = join(dir, `${++n}-${name}`)
        writeFileSync(path, data)
        return { id: String(n), url: pathToFileURL(path).href }
      }
    }
  }
  const config = Schema.decodeUnknownSync(BrowserConfig)({})
  const settings = browserSettings(config)
  const payload = (urls: string[]) => ({ urls, full_page: true, format: "png" as const, viewport_width: 1280, viewport_height: 800, geo: null })
  try {
    const cold: number[] = []
    const launch: number[] = []
    for (let i = 0; i < COLD_RUNS; i++) {
      const pool = makeBrowserPool(config)
      const t0 = performance.now()
      await pool.get()
      launch.push(performance.now() - t0)
      await pool.close()
      const pool2 = makeBrowserPool(config)
      const t1 = performance.now()
      await screenshotJob(pool2, directOnly, settings).handler(payload([url]), ctx)
      cold.push(performance.now() - t1)
      await pool2.close()
    }
    const pool = makeBrowserPool(config)
    const job = screenshotJob(pool, directOnly, settings)
    try {
      await job.handler(payload([url]), ctx) // warm-up: launch and first render
      const warm: number[] = []
      for (let i = 0; i < WARM_RUNS; i++) {
        const t0 = performance.now()
        await job.handler(payload([url]), ctx)
        warm.push(performance.now() - t0)
      }
      const t0 = performance.now()
      await job.handler(payload(Array.from({ length: BATCH }, () => url)), ctx)
      const batch = (performance.now() - t0) / BATCH
      const out = {
        cold_ms_per_page: round(mean(cold)),
        warm_ms_per_page: round(mean(warm)),
        warm_batch_ms_per_page: round(batch),
        launch_ms: round(mean(launch))
      }
      console.log(`screenshot (1280x800 full page PNG, loopback page): cold ${out.cold_ms_per_page} ms/page (launch ${out.launch_ms} ms), warm ${out.warm_ms_per_page} ms/page, warm batch of ${BATCH} ${out.warm_batch_ms_per_page} ms/page`)
      return out
    } finally {
      await pool.close()
    }
  } finally {
    server.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  benchBrowser().then(
    (r) => console.log(JSON.stringify(r)),
    (e) => {
      console.error(e)
      process.exit(1)
    }
  )
}
