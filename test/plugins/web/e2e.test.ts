/**
 * The `web` plugin in the real kernel: it boots from a platform.yaml pointing it at the SearXNG
 * and SOCKS5 fixtures, registers its six graph operations with their categories and types and
 * the `searxng` provider, accepts a provider from another plugin through its extension point,
 * and the registered operations run against the fixtures with the configured addresses.
 */
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import type { GraphOperation } from "../../../core/Contribution.ts"
import { SearchProviders } from "../../../plugins/web/Contract.ts"
import type { Fixture } from "../../fixtures/pages-server.ts"
import { searxngServer } from "../../fixtures/searxng-server.ts"
import { type Socks5Fixture, socks5Server } from "../../fixtures/socks5-server.ts"
import { ONION_HOST, type WebFixture, webServer } from "../../fixtures/web-server.ts"
import { tempDir } from "../jobs/support.ts"
import { jobContexts } from "../jobs/net/jobContext.ts"
import { runOp } from "./support.ts"

let web: WebFixture
let searx: Fixture
let socks: Socks5Fixture
let platform: Awaited<ReturnType<typeof startPlatform>>
const contexts = jobContexts()

beforeAll(async () => {
  web = await webServer()
  searx = await searxngServer(web.url)
  socks = await socks5Server({ host: "127.0.0.1", port: Number(new URL(web.url).port) })
  platform = await startPlatform({
    cwd: ROOT,
    yaml: `data_dir: ${tempDir("web-e2e-")}
log: { level: warning, format: json }
listeners:
  - { name: jobs, host: 127.0.0.1, port: 0 }
plugins:
  jobs: { workers: false }
  web:
    searxng_url: ${searx.url}
    tor_socks_url: ${socks.url}
    per_host_per_minute: 60000
  search-extra:
    module: ${path.join(ROOT, "test/fixtures/plugins/search-extra")}
`
  })
})
afterAll(async () => {
  contexts.cleanup()
  await platform?.stop()
  await socks?.close()
  await searx?.close()
  await web?.close()
})

const op = (name: string): GraphOperation => platform.kernel.graphOps.get(name)!

describe("web plugin in the kernel", () => {
  it("boots and registers its operations with their categories and types, and the searxng provider", () => {
    const p = platform.kernel.plugins.find((x) => x.name === "web")!
    expect(p.status).toBe("running")
    expect([...p.contributions.graphOps].sort()).toEqual(["fetch", "fetch_batch", "filter_urls", "links", "search", "tor_fetch"])
    expect(p.contributions.searchProviders).toEqual(["searxng"])
    const shapes = Object.fromEntries(p.contributions.graphOps.map((n) => [n, { category: op(n).category, in: op(n).inputTypes, out: op(n).outputType }]))
    expect(shapes).toEqual({
      search: { category: "discover", in: ["string"], out: "url[]" },
      fetch: { category: "acquire", in: [], out: "html" },
      fetch_batch: { category: "acquire", in: ["url[]"], out: "html[]" },
      tor_fetch: { category: "acquire", in: [], out: "html" },
      filter_urls: { category: "filter", in: ["url[]"], out: "url[]" },
      links: { category: "transform", in: ["html", "html[]"], out: "url[]" }
    })
    expect(platform.kernel.graphOps.entry("fetch")?.plugin).toBe("web")
  })

  it("takes search providers from other plugins through its extension point", async () => {
    const providers = platform.kernel.extensions.registry(SearchProviders)
    expect([...providers.ids()].sort()).toEqual(["catalog", "searxng"])
    expect(providers.entry("catalog")?.plugin).toBe("search-extra")
    expect(await runOp(op("search"), { provider: "catalog" }, "solar robot", contexts.make())).toEqual(["https://catalog.example/solar/sweep"])
  })

  it("runs search against the configured SearXNG and tor_fetch through the configured proxy", async () => {
    const urls = await runOp<string[]>(op("search"), { query: "Jane Doe town hall Riverton", max_results: 3 }, undefined, contexts.make())
    expect(urls[0]).toBe(`${web.url}/city-gazette/jane-doe-town-hall`)
    expect(searx.log.some((l) => l.startsWith("GET /search?q=Jane+Doe+town+hall+Riverton&format=json"))).toBe(true)
    const page = await runOp<{ html: string }>(op("tor_fetch"), { url: `http://${ONION_HOST}/` }, undefined, contexts.make())
    expect(page.html).toContain("Shadow Market")
    expect(socks.connections.some((c) => c.host === ONION_HOST && c.reply === 0)).toBe(true)
  })
})
