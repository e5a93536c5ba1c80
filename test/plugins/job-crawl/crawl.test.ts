/**
 * crawl jobs end to end on the real kernel: SearXNG-shaped search, the fixture web (links, a
 * robots.txt disallowing /private/ which every page header links to), the model fixture behind
 * the gateway scoring pages by the query's terms. The crawl keeps only pages at or above
 * min_score, never fetches a disallowed path, stops at max_urls, stores embeddings a later vectl
 * search finds, and writes a report whose sources are exactly the kept pages.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import { type ModelServer, startModelServer } from "../../fixtures/model-server.ts"
import type { Fixture } from "../../fixtures/pages-server.ts"
import { searxngServer } from "../../fixtures/searxng-server.ts"
import { type WebFixture, webServer } from "../../fixtures/web-server.ts"
import { researchYaml } from "../../support/research.ts"
import { jobsClient, tempDir } from "../jobs/support.ts"

process.env.PLATFORM_LOG_LEVEL ??= "error"
const TOKEN = "crawl-token-1234"
let web: WebFixture
let searx: Fixture
let model: ModelServer
let platform: Awaited<ReturnType<typeof startPlatform>>
let api: ReturnType<typeof jobsClient>

beforeAll(async () => {
  web = await webServer()
  searx = await searxngServer(web.url)
  model = await startModelServer({ token: "upstream-key" })
  platform = await startPlatform({
    cwd: ROOT,
    yaml: await researchYaml({
      dataDir: tempDir("crawl-"),
      modelUrl: model.url,
      upstreamKey: "upstream-key",
      token: TOKEN,
      plugins: `  web: { searxng_url: "${searx.url}", per_host_per_minute: 60000, per_host_burst: 200 }
  text: {}
  job-vectl: {}
  job-crawl: { per_host_concurrency: 4 }
`
    })
  })
  api = jobsClient(platform.url("jobs"))
}, 60_000)
afterAll(async () => {
  await platform?.stop()
  for (const f of [model, searx, web]) await f?.close()
})

const sourcesOf = (md: string) =>
  [...md.split("## Sources")[1]!.split("## Pages below")[0]!.matchAll(/^\| \d+ \| ([\d.]+) \| (\S+) \|/gm)].map((m) => ({ score: Number(m[1]), url: m[2]! }))

describe("crawl over the Jobs API", () => {
  it("keeps pages at or above min_score, honours robots.txt and max_urls, embeds what it keeps, reports its sources", async () => {
    const before = web.log.length
    const r = await api.submit("crawl", { query: "Jane Doe Senate race", max_urls: 9, max_depth: 3, min_score: 6 })
    expect(r.status).toBe(202)
    const j = await api.waitFor(r.body.job_id, undefined, 120_000)
    expect(j.status, j.error).toBe("COMPLETED")
    const res = j.result as { total_urls: number; urls_processed: number; chunks_generated: number; embeddings_stored: boolean; synthesis: string; report_url: string }
    expect(Object.keys(res).sort()).toEqual(["chunks_generated", "embeddings_stored", "report_url", "synthesis", "total_urls", "urls_processed"])
    expect(res.urls_processed).toBeGreaterThan(0)
    expect(res.urls_processed).toBeLessThanOrEqual(9)
    expect(res.total_urls).toBeGreaterThanOrEqual(res.urls_processed)
    expect(res.embeddings_stored).toBe(true)
    expect(res.chunks_generated).toBeGreaterThan(0)
    expect(res.synthesis).toContain("Jane Doe")
    // never a disallowed path; robots.txt itself was read
    const requests = web.log.slice(before)
    expect(requests.filter((l) => l.includes("/private/"))).toEqual([])
    expect(requests.some((l) => l.startsWith("GET /robots.txt"))).toBe(true)
    const pageGets = requests.filter((l) => l.startsWith("GET /") && !l.startsWith("GET /robots.txt"))
    expect(pageGets.length).toBeLessThanOrEqual(9)
    // the report's sources are exactly the kept pages, each at or above min_score
    const md = await (await fetch(res.report_url)).text()
    expect(md).toContain("# Crawl report: Jane Doe Senate race")
    const sources = sourcesOf(md)
    expect(sources.length).toBeGreaterThan(0)
    expect(sources.every((x) => x.score >= 6)).toBe(true)
    // the articles on the query are kept; a solar article the crawl reached, not about her, is not
    expect(sources.map((x) => x.url)).toEqual(expect.arrayContaining([`${web.url}/city-gazette/jane-doe-announces-senate-run`, `${web.url}/city-gazette/jane-doe-endorsed-by-unions`]))
    expect(requests.some((l) => l.includes("/energy-daily/solar-panel-prices-fall"))).toBe(true)
    expect(sources.some((x) => x.url.includes("/energy-daily/solar-panel-prices-fall"))).toBe(false)
    const below = [...md.split("## Pages below min_score")[1]!.matchAll(/^- ([\d.]+) (\S+)$/gm)].map((m) => Number(m[1]))
    expect(below.every((x) => x < 6)).toBe(true)
    expect(sources.length + below.length).toBe(res.urls_processed)
    // the embeddings: a later vectl search over the crawl store finds a kept page's text
    const search = await api.waitFor((await api.submit("vectl", { operation: "search", query: "Jane Doe Senate race", store: "crawl", top_k: 3 })).body.job_id)
    expect(search.status).toBe("COMPLETED")
    const matches = (search.result as { matches: Array<{ text: string; score: number }> }).matches
    expect(matches.length).toBeGreaterThan(0)
    expect(matches[0]!.text).toContain("Doe")
    // progress after every batch
    const hist = await (await fetch(`${platform.url("jobs")}/api/v1/jobs/${r.body.job_id}`)).json() as { progress: number; message: string }
    expect(hist).toMatchObject({ progress: 100 })
  }, 150_000)

  it("stops at max_urls even when the frontier is larger", async () => {
    const j = await api.waitFor((await api.submit("crawl", { query: "solar power", max_urls: 3, max_depth: 5, min_score: 0 })).body.job_id, undefined, 120_000)
    expect(j.status, j.error).toBe("COMPLETED")
    expect((j.result as { urls_processed: number }).urls_processed).toBe(3)
    expect((j.result as { total_urls: number }).total_urls).toBeGreaterThan(3)
  }, 150_000)

  it("is cancelled within a second while it waits on the model", async () => {
    const r = await api.submit("crawl", { query: "Jane Doe FIXTURE_DELAY_MS=20000", max_urls: 4 })
    await api.waitFor(r.body.job_id, (j) => j.status === "PROCESSING" && (j.message ?? "").includes("fetching"), 30_000)
    await new Promise((res) => setTimeout(res, 500))
    const t0 = Date.now()
    expect((await api.cancel(r.body.job_id)).status).toBe(200)
    const j = await api.waitFor(r.body.job_id)
    expect(j.status).toBe("CANCELLED")
    expect(Date.now() - t0).toBeLessThan(1000)
  }, 60_000)

  it("refuses an invalid payload with 422", async () => {
    const r = await api.submit("crawl", { query: "", min_score: 11 })
    expect(r.status).toBe(422)
    expect(r.body.error).toMatch(/query/)
    expect(r.body.error).toMatch(/min_score/)
  })
})
