/**
 * Tor routing through the SOCKS5 fixture: `tor_fetch` of an `.onion` URL reaches the onion site
 * with the name resolved at the proxy (ATYP domain), `fetch`/`fetch_batch` with `geo: tor` (or a
 * `:tor` type) take the same route, other geos do not, and a missing proxy is a clear error.
 */
import * as net from "node:net"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import type { Page } from "../../../core/GraphTypes.ts"
import { parseSocksUrl, torAwareResolver, wantsTor } from "../../../plugins/web/Contract.ts"
import { type Socks5Fixture, socks5Server } from "../../fixtures/socks5-server.ts"
import { ONION_HOST, ONION_PAGES, type WebFixture, webServer } from "../../fixtures/web-server.ts"
import { freePort } from "../jobs/support.ts"
import { expectJobFailure, jobContexts } from "../jobs/net/jobContext.ts"
import { runOp, webOpsFor } from "./support.ts"

let web: WebFixture
let socks: Socks5Fixture
let setup: ReturnType<typeof webOpsFor>
const contexts = jobContexts()

beforeAll(async () => {
  web = await webServer()
  const { port } = new URL(web.url)
  socks = await socks5Server({ host: "127.0.0.1", port: Number(port) })
  setup = webOpsFor({ tor_socks_url: socks.url })
})
afterAll(async () => {
  await setup?.close()
  await socks?.close()
  await web?.close()
})
afterEach(() => contexts.cleanup())

describe("tor_fetch", () => {
  it("fetches an .onion page through the SOCKS5 proxy, the name resolved by the proxy", async () => {
    const seen = socks.connections.length
    const ctx = contexts.make()
    const page = await runOp<Page>(setup.ops.tor_fetch!, { url: `http://${ONION_HOST}/listing/acme-credentials` }, undefined, ctx)
    expect(page).toMatchObject({ url: `http://${ONION_HOST}/listing/acme-credentials`, final_url: `http://${ONION_HOST}/listing/acme-credentials`, status: 200 })
    const listing = ONION_PAGES.find((p) => p.path === "/listing/acme-credentials")!
    expect(page.html).toContain(listing.title)
    expect(page.html).toContain("12,400 credentials of Acme Robotics staff")
    // Proof it went through the proxy: the proxy got the name (ATYP 3) and the fixture saw the onion Host.
    expect(socks.connections.slice(seen)).toEqual([{ host: ONION_HOST, port: 80, atyp: "domain", reply: 0 }])
    expect(web.onionLog).toContain(`${ONION_HOST} /listing/acme-credentials`)
    expect(ctx.progressLog.at(-1)?.message).toContain("over Tor")
  })

  it("reuses the proxy connection for later requests and follows onion links", async () => {
    const a = await runOp<Page>(setup.ops.tor_fetch!, { url: `http://${ONION_HOST}/` }, undefined, contexts.make())
    expect(a.html).toContain("fresh leak of Acme Robotics employee credentials")
    const links = await runOp<string[]>(setup.ops.links!, {}, a, contexts.make())
    expect(links).toEqual([`http://${ONION_HOST}/`, `http://${ONION_HOST}/forum/grayfox`, `http://${ONION_HOST}/listing/acme-credentials`])
    const forum = await runOp<Page>(setup.ops.tor_fetch!, { url: links[1]! }, undefined, contexts.make())
    expect(forum.html).toContain("Riverton City Council mail credentials")
  })

  it("answers 404 for unknown onion paths with the status in the message", async () => {
    const f = await expectJobFailure(runOp(setup.ops.tor_fetch!, { url: `http://${ONION_HOST}/nothing-here` }, undefined, contexts.make()))
    expect(f).toMatchObject({ kind: "REMOTE_ERROR", message: `tor_fetch: http://${ONION_HOST}/nothing-here failed: HTTP 404` })
  })

  it("fails clearly when the proxy refuses the destination", async () => {
    const f = await expectJobFailure(runOp(setup.ops.tor_fetch!, { url: "http://example.com/" }, undefined, contexts.make()))
    expect(f.kind).toBe("NETWORK_ERROR")
    expect(f.message).toContain("tor_fetch: http://example.com/ failed")
    expect(f.message).toContain(`through the Tor SOCKS proxy ${socks.url}`)
    expect(socks.connections.at(-1)).toEqual({ host: "example.com", port: 80, atyp: "domain", reply: 2 })
  })

  it("fails clearly when no Tor proxy listens", async () => {
    const port = await freePort()
    const down = webOpsFor({ tor_socks_url: `socks5h://127.0.0.1:${port}` })
    try {
      const f = await expectJobFailure(runOp(down.ops.tor_fetch!, { url: `http://${ONION_HOST}/` }, undefined, contexts.make()))
      expect(f.kind).toBe("NETWORK_ERROR")
      expect(f.message).toMatch(new RegExp(`^tor_fetch: http://${ONION_HOST.replace(/\./g, "\\.")}/ failed: .*through the Tor SOCKS proxy socks5h://127\\.0\\.0\\.1:${port}; is tor running there\\?\\)$`))
    } finally {
      await down.close()
    }
  })

  it("is cancelled within a second while a page trickles in through the proxy", async () => {
    const ctx = contexts.make()
    const before = web.stats.slowClosedEarly
    const started = Date.now()
    const p = runOp(setup.ops.tor_fetch!, { url: `http://127.0.0.1:${new URL(web.url).port}/slow?ms=8000` }, undefined, ctx)
    setTimeout(() => ctx.controller.abort(new Error("stop")), 300)
    expect((await expectJobFailure(p)).kind).toBe("CANCELLED")
    expect(Date.now() - started).toBeLessThan(1300)
    // an IP destination travels as SOCKS5 ATYP IPv4
    expect(socks.connections.at(-1)).toEqual({ host: "127.0.0.1", port: Number(new URL(web.url).port), atyp: "ipv4", reply: 0 })
    await new Promise((r) => setTimeout(r, 300))
    expect(web.stats.slowClosedEarly).toBe(before + 1)
  })
})

describe("geo: tor on fetch and fetch_batch", () => {
  it("routes fetch with geo tor (and a :tor type) through the proxy, and geo null directly", async () => {
    const before = socks.connections.length
    const page = await runOp<Page>(setup.ops.fetch!, { url: `http://${ONION_HOST}/forum/grayfox`, geo: "tor" }, undefined, contexts.make())
    expect(page.html).toContain("GrayFox has sold three leaks this year")
    const typed = await runOp<Page>(setup.ops.fetch!, { url: `http://${ONION_HOST}/`, geo: "us:tx:tor" }, undefined, contexts.make())
    expect(typed.html).toContain("Shadow Market")
    const direct = await runOp<Page>(setup.ops.fetch!, { url: `${web.url}/acme-news/`, geo: null }, undefined, contexts.make())
    expect(direct.html).toContain("Acme News Wire")
    expect(socks.connections.length - before).toBeLessThanOrEqual(2)
    expect(socks.connections.slice(before).every((c) => c.host === ONION_HOST)).toBe(true)
  })

  it("cannot reach an .onion name without Tor (local DNS does not know it)", async () => {
    const f = await expectJobFailure(runOp(setup.ops.fetch!, { url: `http://${ONION_HOST}/` }, undefined, contexts.make()))
    expect(f.kind).toBe("NETWORK_ERROR")
  })

  it("fetch_batch with geo tor fetches onion pages through the proxy in order", async () => {
    const urls = ONION_PAGES.map((p) => `http://${ONION_HOST}${p.path}`)
    const pages = await runOp<Page[]>(setup.ops.fetch_batch!, { geo: "tor" }, urls, contexts.make())
    expect(pages.map((p) => p.url)).toEqual(urls)
    pages.forEach((p, i) => expect(p.html).toContain(`<h1>${ONION_PAGES[i]!.title}</h1>`))
  })
})

describe("tor-aware resolver", () => {
  it("parses the SOCKS URL and recognises Tor geos", () => {
    expect(parseSocksUrl("socks5h://127.0.0.1:9050")).toEqual({ host: "127.0.0.1", port: 9050 })
    expect(() => parseSocksUrl("http://127.0.0.1:9050")).toThrow(/scheme must be socks5h/)
    expect([wantsTor(null), wantsTor("tor"), wantsTor("TOR"), wantsTor("us:tx:tor"), wantsTor("us:tor"), wantsTor("us"), wantsTor("us:ca")]).toEqual([false, true, true, true, true, false, false])
  })

  it("hands non-Tor geos to the fallback resolver (a GeoRouter when plugged in)", async () => {
    const asked: Array<string | null | undefined> = []
    const r = torAwareResolver("socks5h://127.0.0.1:9050", { resolve: async (geo) => (asked.push(geo), { kind: "proxy", proxyUrl: "http://vpn-us:3128", label: "us bank" }) })
    expect(await r.resolve("us:ca")).toEqual({ kind: "proxy", proxyUrl: "http://vpn-us:3128", label: "us bank" })
    expect(asked).toEqual(["us:ca"])
    const tor = await r.resolve("tor")
    expect(tor).toMatchObject({ kind: "proxy", proxyUrl: "socks5://127.0.0.1:9050", label: "tor" })
    expect((tor as { dispatcher?: unknown }).dispatcher).toBeDefined()
    expect(await r.resolve("tor")).toBe(tor)
    await r.close()
  })
})

describe("SOCKS5 fixture protocol (RFC 1928)", () => {
  /** Sends `frames` one after another on a raw connection to the proxy and collects every byte it answers until it closes. */
  const exchange = (frames: Buffer[]): Promise<Buffer> =>
    new Promise((resolve, reject) => {
      const s = net.connect(socks.port, socks.host)
      const got: Buffer[] = []
      s.on("data", (d) => got.push(d))
      s.on("error", reject)
      s.on("close", () => resolve(Buffer.concat(got)))
      s.on("connect", async () => {
        for (const f of frames) {
          s.write(f)
          await new Promise((r) => setTimeout(r, 20))
        }
        setTimeout(() => s.end(), 100)
      })
    })

  it("answers 0xFF when no-authentication is not offered", async () => {
    expect([...(await exchange([Buffer.from([5, 1, 2])]))]).toEqual([5, 0xff])
  })

  it("refuses commands other than CONNECT (0x07), IPv6 (0x08) and non-loopback addresses (0x02)", async () => {
    const hello = Buffer.from([5, 1, 0])
    const bind = Buffer.from([5, 2, 0, 1, 127, 0, 0, 1, 0, 80])
    expect([...(await exchange([hello, bind]))].slice(0, 4)).toEqual([5, 0, 5, 7])
    const v6 = Buffer.concat([Buffer.from([5, 1, 0, 4]), Buffer.alloc(16), Buffer.from([0, 80])])
    expect([...(await exchange([hello, v6]))].slice(0, 4)).toEqual([5, 0, 5, 8])
    const outside = Buffer.from([5, 1, 0, 1, 93, 184, 216, 34, 0, 80])
    expect([...(await exchange([hello, outside]))].slice(0, 4)).toEqual([5, 0, 5, 2])
    expect(socks.connections.at(-1)).toEqual({ host: "93.184.216.34", port: 80, atyp: "ipv4", reply: 2 })
  })

  it("connects a domain request split over several packets and relays bytes both ways", async () => {
    const name = Buffer.from(ONION_HOST)
    const req = Buffer.concat([Buffer.from([5, 1, 0, 3, name.length]), name, Buffer.from([0, 80])])
    const http = Buffer.from(`GET /forum/grayfox HTTP/1.1\r\nHost: ${ONION_HOST}\r\nConnection: close\r\n\r\n`)
    const out = await exchange([Buffer.from([5]), Buffer.from([1, 0]), req.subarray(0, 7), req.subarray(7), http])
    expect([...out.subarray(0, 4)]).toEqual([5, 0, 5, 0])
    const text = out.subarray(12).toString()
    expect(text.startsWith("HTTP/1.1 200 OK")).toBe(true)
    expect(text).toContain("GrayFox has sold three leaks this year")
  })
})
