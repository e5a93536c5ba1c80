/**
 * Crawl throughput: one `crawl` job (max_urls 500) over a 500-page local fixture web, the model
 * fixture answering at once behind the platform's gateway (fixtures in a child process:
 * `bench/fixtures/crawl-web.ts`). Figures: `pages_per_s` (pages fetched and scored per second of
 * the job's wall time), `cpu_ms_per_page` (this process's CPU — kernel, crawler, operations,
 * gateway — per page; the fixtures' CPU is not in it), `kept`, `urls_processed`.
 */
import { spawn } from "node:child_process"
import * as path from "node:path"
import { createInterface } from "node:readline"
import { ROOT, startPlatform } from "../core/Kernel.ts"
import { researchYaml } from "../test/support/research.ts"
import { jobsClient, tempDir } from "../test/plugins/jobs/support.ts"

export const benchCrawl = async (): Promise<Record<string, number>> => {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "bench/fixtures/crawl-web.ts")], { cwd: ROOT, stdio: ["pipe", "pipe", "inherit"] })
  const urls = await new Promise<{ web: string; search: string; model: string }>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once("line", (l) => resolve(JSON.parse(l)))
    child.once("exit", (c) => reject(new Error(`fixtures exited ${c}`)))
  })
  const token = "bench-token-1234567"
  const platform = await startPlatform({
    cwd: ROOT,
    yaml: await researchYaml({
      dataDir: tempDir("bench-crawl-"),
      modelUrl: urls.model,
      upstreamKey: "bench-upstream",
      token,
      plugins: `  web: { searxng_url: "${urls.search}", per_host_per_minute: 1000000, per_host_burst: 1000 }
  text: {}
  job-vectl: {}
  job-crawl: { per_host_concurrency: 8 }
`
    })
  })
  try {
    const api = jobsClient(platform.url("jobs"))
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    const s = await api.submit("crawl", { query: "solar power storage batteries", max_urls: 500, max_depth: 20, min_score: 5 })
    const j = await api.waitFor(s.body.job_id, undefined, 600_000)
    const wall = performance.now() - t0
    const cpu = process.cpuUsage(cpu0)
    if (j.status !== "COMPLETED") throw new Error(`crawl ${j.status}: ${j.error}`)
    const r = j.result as { urls_processed: number; total_urls: number; chunks_generated: number }
    const md = await (await fetch((j.result as { report_url: string }).report_url)).text()
    const kept = (md.split("## Sources")[1]!.split("## Pages below")[0]!.match(/^\| \d+ \|/gm) ?? []).length
    const out = {
      urls_processed: r.urls_processed,
      total_urls: r.total_urls,
      kept,
      chunks_generated: r.chunks_generated,
      wall_s: Math.round(wall) / 1000,
      pages_per_s: Math.round((r.urls_processed * 10_000) / wall) / 10,
      cpu_ms_per_page: Math.round(((cpu.user + cpu.system) / 1000 / r.urls_processed) * 100) / 100
    }
    for (const [k, v] of Object.entries(out)) console.log(`${k.padEnd(18)} ${v}`)
    return out
  } finally {
    await platform.stop()
    child.stdin!.end()
  }
}
