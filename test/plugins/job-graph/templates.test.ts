/**
 * The ten built-in templates end to end on the real kernel, every operation the real one of its
 * plugin, against loopback fixtures speaking the real protocols: the fixture web (HTML pages
 * with links), a SearXNG-shaped search API, the archive CDX fixtures, the video-site fixtures,
 * a SOCKS5 proxy in front of an `.onion`-named host, and an OpenAI-compatible model reached
 * through the platform's gateway (an `upstream` engine pointed at the model fixture).
 * Each test asserts on the outputs' content.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import { archiveConfigFor, type ArchiveFixture, archiveServer } from "../../fixtures/archive-server.ts"
import { type ModelServer, startModelServer } from "../../fixtures/model-server.ts"
import type { Fixture } from "../../fixtures/pages-server.ts"
import { searxngServer } from "../../fixtures/searxng-server.ts"
import { type Socks5Fixture, socks5Server } from "../../fixtures/socks5-server.ts"
import { ONION_HOST, type WebFixture, webServer } from "../../fixtures/web-server.ts"
import { transcriptConfigFor, type YouTubeFixture, youtubeServer } from "../../fixtures/youtube-server.ts"
import { researchYaml } from "../../support/research.ts"
import { jobsClient, tempDir } from "../jobs/support.ts"

process.env.PLATFORM_LOG_LEVEL ??= "error"
const TOKEN = "templates-token-123"

let web: WebFixture
let searx: Fixture
let socks: Socks5Fixture
let archive: ArchiveFixture
let youtube: YouTubeFixture
let model: ModelServer
let platform: Awaited<ReturnType<typeof startPlatform>>
let api: ReturnType<typeof jobsClient>

const block = (o: Record<string, unknown>) => Object.entries(o).map(([k, v]) => `    ${k}: ${JSON.stringify(v)}`).join("\n")

beforeAll(async () => {
  web = await webServer()
  searx = await searxngServer(web.url)
  socks = await socks5Server({ host: "127.0.0.1", port: Number(new URL(web.url).port) })
  archive = await archiveServer()
  youtube = await youtubeServer()
  model = await startModelServer({ token: "upstream-key" })
  const fast = { per_host_per_minute: 60000, per_host_burst: 200 }
  platform = await startPlatform({
    cwd: ROOT,
    yaml: await researchYaml({
      dataDir: tempDir("templates-"),
      modelUrl: model.url,
      upstreamKey: "upstream-key",
      token: TOKEN,
      plugins: `  job-graph: {}
  web:
    searxng_url: ${searx.url}
    tor_socks_url: ${socks.url}
${block(fast)}
  text: {}
  job-vectl: {}
  job-archive:
${block(archiveConfigFor(archive.url))}
  job-transcript:
${block(transcriptConfigFor(youtube.url))}
  job-browser:
    tor_proxy_url: ${socks.url.replace(/^socks5h:/, "socks5:")}
`
    })
  })
  api = jobsClient(platform.url("jobs"))
}, 120_000)

afterAll(async () => {
  await platform?.stop()
  for (const f of [model, youtube, archive, socks, searx, web]) await f?.close()
})

type Out = Record<string, any>
const runTemplate = async (template: string, params: Record<string, unknown>): Promise<{ outputs: Out; state: Out; artifacts: Array<{ name: string; url: string }> }> => {
  const r = await api.submit("graph", { template, params })
  expect(r.status, JSON.stringify(r.body)).toBe(202)
  const j = await api.waitFor(r.body.job_id, undefined, 120_000)
  expect(j.status, JSON.stringify({ error: j.error, details: (j as any).error_details?.message })).toBe("COMPLETED")
  expect(j.result).toMatchObject({ graph_name: template, stages_completed: (j.result as any).stages_total })
  return j.result as any
}
const text = async (url: string) => (await fetch(url)).text()
const names = (entities: Array<{ name: string }>) => entities.map((e) => e.name)
const onWeb = (u: string) => u.startsWith(web.url)

describe("the ten built-in templates", () => {
  it("basic_research: search → read → focus → an answer citing the fixture pages", async () => {
    const r = await runTemplate("basic_research", { query: "Acme Robotics chief executive Maria Chen", max_urls: 5 })
    expect(r.outputs.urls.length).toBeGreaterThan(0)
    expect(r.outputs.urls.length).toBeLessThanOrEqual(5)
    expect(r.outputs.urls.every(onWeb)).toBe(true)
    expect(r.outputs.urls[0]).toContain("/acme-news/acme-names-new-ceo")
    expect(r.outputs.synthesis).toContain("Maria Chen")
    expect(r.outputs.synthesis).toMatch(/\[1\]/)
    expect(r.outputs.synthesis).toContain(`${web.url}/acme-news/`)
  }, 120_000)

  it("deep_research: link expansion below max_urls, entities, an indexed vector store, a stored report", async () => {
    const r = await runTemplate("deep_research", { query: "Jane Doe Senate", max_urls: 8 })
    expect(r.outputs.urls.length).toBeGreaterThan(r.state.seed_urls.length)
    expect(r.outputs.urls.length).toBeLessThanOrEqual(8)
    expect(names(r.outputs.entities)).toContain("Jane Doe")
    expect(r.state.indexed).toMatchObject({ store: "deep_research" })
    expect(r.state.indexed.total).toBeGreaterThan(0)
    expect(r.outputs.synthesis).toContain("Jane Doe")
    const md = await text(r.outputs.report.file_url)
    expect(md).toContain("Deep research: Jane Doe Senate")
    expect(md).toContain("## Sources")
    expect(md).toContain(`${web.url}/city-gazette/`)
    expect(r.artifacts.map((a) => a.name)).toContain("report.md")
  }, 120_000)

  it("opposition_research: web, archives and video transcripts merged; entities, a dated timeline, a report", async () => {
    const r = await runTemplate("opposition_research", { subject_name: "Jane Doe", include_archives: true, include_video: true })
    expect(r.state.videos.length).toBeGreaterThan(0)
    expect(r.state.transcripts.length).toBeGreaterThan(0)
    expect(r.state.texts.length).toBe(r.state.web_texts.length + r.state.archived_texts.length + r.state.transcripts.length)
    expect(names(r.outputs.entities)).toContain("Jane Doe")
    expect(r.outputs.timeline).toMatch(/Jane Doe/)
    expect(r.outputs.synthesis).toContain("Jane Doe")
    expect(await text(r.outputs.report.file_url)).toContain("Opposition research: Jane Doe")
    const skipped = await runTemplate("opposition_research", { subject_name: "Jane Doe", include_archives: false })
    expect(skipped.state.videos).toBeUndefined()
    expect(skipped.state.snapshots).toBeUndefined()
  }, 180_000)

  it("company_profile: entities, executives and a report about the company", async () => {
    const r = await runTemplate("company_profile", { company_name: "Acme Robotics" })
    expect(names(r.outputs.entities)).toContain("Acme Robotics")
    expect(r.outputs.executives).toContain("Maria Chen")
    expect(r.outputs.synthesis).toContain("Acme Robotics")
    expect(r.state.news_urls.length).toBeGreaterThan(0)
    expect(await text(r.outputs.report.file_url)).toContain("Company profile: Acme Robotics")
  }, 120_000)

  it("news_aggregation: one search per region, de-duplicated sources, articles and a synthesis", async () => {
    const r = await runTemplate("news_aggregation", { topic: "solar power", regions: ["us", "gb"], days: 7 })
    expect(r.state.found_errors).toEqual([])
    expect(r.outputs.sources.length).toBeGreaterThan(0)
    expect(new Set(r.outputs.sources).size).toBe(r.outputs.sources.length)
    expect(r.outputs.articles.length).toBeGreaterThan(0)
    expect(r.outputs.articles.every((a: { text: string }) => /solar/i.test(a.text))).toBe(true)
    expect(r.outputs.synthesis).toMatch(/solar/i)
    // the region became the SearXNG language of each search
    expect(searx.log.some((l) => l.includes("language=en-GB"))).toBe(true)
  }, 120_000)

  it("temporal_analysis: archived snapshots in the range, changes between versions, a timeline and a report", async () => {
    const r = await runTemplate("temporal_analysis", { url: "http://example.com/", start_date: "2019-01-01", end_date: "2023-12-31" })
    const dates = r.outputs.snapshots.map((s: { date: string }) => s.date)
    expect(dates.length).toBeGreaterThanOrEqual(2)
    expect(dates.every((d: string) => d >= "2019-01-01" && d <= "2023-12-31")).toBe(true)
    expect(r.outputs.changes.aspects.length).toBeGreaterThan(0)
    expect(r.state.versions.map((v: { text: string }) => v.text.match(/captured (\d{4})/)?.[1])).toEqual(["2019", "2020", "2023"])
    expect(r.outputs.timeline).toContain("http://example.com/")
    const md = await text(r.outputs.report.file_url)
    expect(md).toContain("Changes of http://example.com/ from 2019-01-01 to 2023-12-31")
    // the report cites each archived version it compared
    for (const ts of ["20190101000000", "20200101000000", "20230101000000"]) expect(md).toContain(ts)
  }, 120_000)

  it("source_comparison: one summary per source and a comparison by aspect", async () => {
    const sources = ["/city-gazette/jane-doe-announces-senate-run", "/city-gazette/jane-doe-town-hall", "/energy-daily/solar-record-output"].map((p) => `${web.url}${p}`)
    const r = await runTemplate("source_comparison", { topic: "Jane Doe", sources })
    expect(r.outputs.summaries.length).toBeGreaterThanOrEqual(2)
    expect(r.outputs.comparison.aspects.map((a: { aspect: string }) => a.aspect)).toEqual(["coverage of Jane Doe", "facts", "tone"])
    expect(await text(r.outputs.report.file_url)).toMatch(/How 3 sources cover Jane Doe/)
  }, 120_000)

  it("video_analysis: videos, their transcripts, entities and a synthesis from the transcripts", async () => {
    const r = await runTemplate("video_analysis", { query: "cats", max_videos: 5 })
    expect(r.outputs.videos.map((v: { video_id: string }) => v.video_id)).toContain("okVideo0001")
    expect(r.outputs.transcripts.length).toBeGreaterThan(0)
    expect(r.outputs.transcripts[0].text.length).toBeGreaterThan(10)
    expect(Array.isArray(r.outputs.entities)).toBe(true)
    expect(r.outputs.synthesis.length).toBeGreaterThan(0)
  }, 120_000)

  it("dark_web_monitor: onion pages through the SOCKS5 proxy, keyword alerts, entities, screenshots through Tor", async () => {
    const before = socks.connections.length
    const onion = [`http://${ONION_HOST}/`, `http://${ONION_HOST}/listing/acme-credentials`]
    const r = await runTemplate("dark_web_monitor", { onion_urls: onion, keywords: ["credentials", "escrow", "ransomware"] })
    expect(r.outputs.content.map((c: { url: string }) => c.url)).toEqual(onion)
    expect(r.outputs.content[0].text).toContain("Shadow Market")
    const alerts = r.outputs.alerts as Array<{ keyword: string; url: string }>
    expect(alerts.filter((a) => a.keyword === "credentials").map((a) => a.url)).toEqual(onion)
    expect(alerts.filter((a) => a.keyword === "escrow").length).toBe(2)
    expect(alerts.some((a) => a.keyword === "ransomware")).toBe(false)
    expect(names(r.outputs.entities)).toContain("Acme Robotics")
    expect(r.outputs.screenshots.map((s: { url: string }) => s.url)).toEqual(onion)
    const png = new Uint8Array(await (await fetch(r.outputs.screenshots[0].file_url)).arrayBuffer())
    expect([...png.slice(1, 4)].map((c) => String.fromCharCode(c)).join("")).toBe("PNG")
    // the onion requests went through the SOCKS5 proxy by name: two by tor_fetch, Chromium's (kept alive) after them
    expect(socks.connections.slice(before).filter((c) => c.host === ONION_HOST).length).toBeGreaterThanOrEqual(3)
  }, 120_000)

  it("iterative_crawl: breadth-first rounds from the seed within max_depth and max_urls, then a synthesis", async () => {
    const seed = `${web.url}/acme-news/acme-names-new-ceo`
    const r = await runTemplate("iterative_crawl", { seed_url: seed, max_depth: 2, max_urls: 6 })
    expect(r.outputs.urls[0]).toBe(seed)
    expect(r.outputs.urls.length).toBeGreaterThan(1)
    expect(r.outputs.urls.length).toBeLessThanOrEqual(6)
    expect(new Set(r.outputs.urls).size).toBe(r.outputs.urls.length)
    expect(r.outputs.content.length).toBe(r.state.pages.length)
    expect(r.outputs.content.some((c: { text: string }) => c.text.includes("Maria Chen"))).toBe(true)
    expect(r.outputs.synthesis).toMatch(/Acme/)
  }, 120_000)
})

describe("graphs of the real operations", () => {
  it("parallel_foreach over 50 URLs with 3 failing returns 47 pages in input order and 3 errors", async () => {
    const urls = Array.from({ length: 50 }, (_, i) => ([7, 21, 44].includes(i) ? `${web.url}/fail/${i}` : `${web.url}/gen/${i + 1}`))
    const r = await api.submit("graph", {
      graph: `name: fifty
inputs:
  - { name: urls, type: "url[]", required: true }
stages:
  - name: each
    parallel_foreach:
      input: urls
      as: url
      operations:
        - { op: fetch, params: { url: "{{ url }}" }, output: page }
        - { op: to_text, input: page, output: doc }
      output: docs
outputs: [docs, docs_errors]
`,
      params: { urls }
    })
    const j = await api.waitFor(r.body.job_id, undefined, 60_000)
    expect(j.status, j.error).toBe("COMPLETED")
    const out = (j.result as any).outputs
    expect(out.docs).toHaveLength(47)
    expect(out.docs.map((d: { url: string }) => d.url)).toEqual(urls.filter((u) => !u.includes("/fail/")))
    expect(out.docs[0].text).toContain("gen-marker-1")
    expect(out.docs_errors.map((e: { index: number; kind: string }) => [e.index, e.kind])).toEqual([[7, "NETWORK_ERROR"], [21, "NETWORK_ERROR"], [44, "NETWORK_ERROR"]])
    expect(out.docs_errors[0].error).toMatch(/500/)
  }, 60_000)

  it("DELETE of a running graph stops its fetches within a second (the server sees every client leave)", async () => {
    const slow = Array.from({ length: 5 }, (_, i) => `${web.url}/slow?ms=30000&n=${i}`)
    const before = { ...web.stats }
    const r = await api.submit("graph", {
      graph: `name: slow
inputs:
  - { name: urls, type: "url[]", required: true }
stages:
  - name: acquire
    sequential:
      - { op: fetch_batch, input: urls, output: pages }
outputs: [pages]
`,
      params: { urls: slow }
    })
    await api.waitFor(r.body.job_id, (j) => j.status === "PROCESSING", 30_000)
    const deadline = Date.now() + 10_000
    while (web.stats.slowStarted - before.slowStarted < 5 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 50))
    expect(web.stats.slowStarted - before.slowStarted).toBe(5)
    const t0 = Date.now()
    expect((await api.cancel(r.body.job_id)).status).toBe(200)
    while (web.stats.slowClosedEarly - before.slowClosedEarly < 5 && Date.now() - t0 < 2000) await new Promise((res) => setTimeout(res, 20))
    expect(Date.now() - t0).toBeLessThan(1000)
    expect(web.stats.slowClosedEarly - before.slowClosedEarly).toBe(5)
    expect((await api.get(r.body.job_id)).status).toBe("CANCELLED")
  }, 60_000)
})
