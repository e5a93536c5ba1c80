/**
 * The web operations inside the real graph engine (`job-graph`) over the Jobs API: a discover →
 * filter → fetch → links pipeline against the SearXNG and web fixtures, the crawl loop of the
 * `iterative_crawl` template (its web stages, inline), and a `dark_web_monitor`-style onion fetch
 * through the SOCKS5 fixture.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import type { Fixture } from "../../fixtures/pages-server.ts"
import { searxngServer } from "../../fixtures/searxng-server.ts"
import { type Socks5Fixture, socks5Server } from "../../fixtures/socks5-server.ts"
import { ONION_HOST, type WebFixture, webServer } from "../../fixtures/web-server.ts"
import { jobsClient, platformYaml, tempDir } from "../jobs/support.ts"

let web: WebFixture
let searx: Fixture
let socks: Socks5Fixture
let platform: Awaited<ReturnType<typeof startPlatform>>
let api: ReturnType<typeof jobsClient>

beforeAll(async () => {
  web = await webServer()
  searx = await searxngServer(web.url)
  socks = await socks5Server({ host: "127.0.0.1", port: Number(new URL(web.url).port) })
  const extra = `  job-graph: {}
  web:
    searxng_url: ${searx.url}
    tor_socks_url: ${socks.url}
    per_host_per_minute: 60000
    per_host_burst: 100
`
  platform = await startPlatform({ cwd: ROOT, yaml: platformYaml({ backend: "embedded", dataDir: tempDir("web-graph-"), extra }) })
  api = jobsClient(platform.url("jobs"))
})
afterAll(async () => {
  await platform?.stop()
  await socks?.close()
  await searx?.close()
  await web?.close()
})

type Result = { outputs: Record<string, any>; state: Record<string, any> }
const run = async (graph: string, params: Record<string, unknown> = {}): Promise<Result> => {
  const r = await api.submit("graph", { graph, params })
  expect(r.status, JSON.stringify(r.body)).toBe(202)
  const j = await api.waitFor(r.body.job_id, undefined, 30_000)
  expect(j.status, JSON.stringify(j)).toBe("COMPLETED")
  return j.result as Result
}

describe("web operations in graphs", () => {
  it("search → filter_urls → fetch_batch → links", async () => {
    const res = await run(
      `name: discover_and_read
inputs:
  - { name: query, type: string, required: true }
stages:
  - name: discover
    sequential:
      - { op: search, params: { query: "{{ query }}", max_results: 5 }, output: found }
      - { op: filter_urls, input: found, params: { include: ["/city-gazette/"], max: 3 }, output: urls }
  - name: acquire
    sequential:
      - { op: fetch_batch, input: urls, output: pages }
      - { op: links, input: pages, params: { same_domain: true }, output: linked }
outputs: [urls, pages, linked]
`,
      { query: "Jane Doe Riverton" }
    )
    expect(res.outputs.urls).toHaveLength(3)
    expect(res.outputs.urls.every((u: string) => u.startsWith(`${web.url}/city-gazette/jane-doe-`))).toBe(true)
    expect(res.outputs.pages.map((p: { url: string }) => p.url)).toEqual(res.outputs.urls)
    expect(res.outputs.pages.every((p: { html: string }) => p.html.includes("Jane Doe"))).toBe(true)
    expect(res.outputs.linked).toContain(`${web.url}/city-gazette/`)
  })

  it("runs the crawl loop of iterative_crawl: breadth first, visited URLs excluded, max_urls honoured", async () => {
    const res = await run(
      `name: crawl
inputs:
  - { name: seed_url, type: string, required: true }
  - { name: max_depth, type: int, default: 3 }
  - { name: max_urls, type: int, default: 6 }
stages:
  - name: seed
    sequential:
      - { op: fetch, params: { url: "{{ seed_url }}" }, output: seed_page }
      - { op: set, params: { value: "{{ [seed_url] }}" }, output: urls }
      - { op: set, params: { value: "{{ [seed_page] }}" }, output: pages }
      - { op: links, input: seed_page, params: { same_domain: true }, output: frontier }
  - name: crawl
    loop:
      until: iteration + 1 >= max_depth || length(frontier) == 0 || length(urls) >= max_urls
      max_iterations: 10
      operations:
        - op: filter_urls
          input: frontier
          params: { exclude_urls: "{{ urls }}", include: ["/gen/"], max: "{{ max_urls - length(urls) }}" }
          output: batch
        - { op: fetch_batch, input: batch, output: batch_pages }
        - { op: merge, input: [urls, batch], output: urls }
        - { op: merge, input: [pages, batch_pages], output: pages }
        - { op: links, input: batch_pages, params: { same_domain: true }, output: frontier }
outputs: [urls, pages]
`,
      { seed_url: `${web.url}/gen/1` }
    )
    // gen/N links gen/1, gen/N+1 and gen/N+2: round 1 adds 2, 3; round 2 adds 4, 5 (1 and 3
    // already visited); round 3 may add 6 and 7 but max_urls (6) leaves room for one
    expect(res.outputs.urls).toEqual([1, 2, 3, 4, 5, 6].map((n) => `${web.url}/gen/${n}`))
    expect(res.outputs.pages.map((p: { html: string }) => /gen-marker-(\d+)\./.exec(p.html)?.[1])).toEqual(["1", "2", "3", "4", "5", "6"])
  })

  it("fetches onion pages with tor_fetch in parallel_foreach", async () => {
    const res = await run(
      `name: onions
inputs:
  - { name: onion_urls, type: "url[]", required: true }
stages:
  - name: fetch
    parallel_foreach:
      input: onion_urls
      as: onion
      operations:
        - { op: tor_fetch, params: { url: "{{ onion }}" }, output: page }
      output: content
outputs: [content]
`,
      { onion_urls: [`http://${ONION_HOST}/`, `http://${ONION_HOST}/listing/acme-credentials`, `http://${ONION_HOST}/missing`] }
    )
    expect(res.outputs.content.map((p: { html: string }) => p.html.includes("Acme Robotics"))).toEqual([true, true])
    expect(res.state.content_errors).toMatchObject([{ index: 2, kind: "REMOTE_ERROR", error: `tor_fetch: http://${ONION_HOST}/missing failed: HTTP 404` }])
    expect(socks.connections.filter((c) => c.host === ONION_HOST).length).toBeGreaterThanOrEqual(1)
  })
})
