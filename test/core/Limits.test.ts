/**
 * The kernel's request limits on a real listener: body bytes (declared and chunked, per route
 * from platform.yaml and from the route itself), JSON depth on the raw and the Effect path, the
 * request head, the request timeout and requests in flight. Each refusal names its limit.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, type RunningPlatform, startPlatform } from "../../core/Kernel.ts"
import { jsonDeeperThan } from "../../core/Limits.ts"
import { parseRaw, rawExchange, upload } from "../support/http.ts"

process.env.PLATFORM_LOG_LEVEL ??= "error"

const F = "./test/fixtures/plugins"
let platform: RunningPlatform
let base: string

beforeAll(async () => {
  platform = await startPlatform({
    cwd: ROOT,
    yaml: `listeners:
  - name: main
    port: 0
    limits:
      body_bytes: 65536
      json_depth: 16
      header_bytes: 4096
      request_timeout_s: 1
      max_connections: 3
      routes:
        "POST /echo/echo/:id": { body_bytes: 1000000 }
plugins:
  echo:
    module: ${F}/echo
  roomy:
    module: ${F}/roomy
`
  })
  base = platform.url("main")
})
afterAll(() => platform?.stop())

const nested = (depth: number): unknown => {
  let v: unknown = "x"
  for (let i = 0; i < depth; i++) v = [v]
  return v
}

const post = (path: string, body: unknown) =>
  fetch(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })

describe("request limits", () => {
  it("body_bytes: the listener's default, platform.yaml's per-route entry, the route's own; declared or chunked", async () => {
    // 100 kB on a route platform.yaml allows 1 MB: through the Effect handler.
    const ok = await post("/echo/echo/a", { fast: false, text: "a".repeat(100_000) })
    expect([ok.status, ((await ok.json()) as { text: string }).text.length]).toEqual([200, 100_000])
    // The listener's 64 KiB everywhere else, matched route or not.
    for (const path of ["/nowhere", "/echo"]) {
      const r = await upload(`${base}${path}`, 100_000)
      expect([r.status, JSON.parse(r.body)]).toEqual([413, { error: "request body exceeds 65536 bytes", limit: "body_bytes", max: 65536 }])
      expect(r.headers.connection).toBe("close")
    }
    // Over the per-route limit, by Content-Length (refused before reading) and chunked (counted).
    for (const chunked of [false, true]) {
      const r = await upload(`${base}/echo/echo/a`, 3_000_000, { chunked })
      expect([r.status, JSON.parse(r.body).max]).toEqual([413, 1_000_000])
    }
    // The route's own declaration (500 000) where platform.yaml says nothing.
    expect((await post("/roomy/echo/b", { fast: true, text: "b".repeat(300_000) })).status).toBe(203)
    const big = await upload(`${base}/roomy/echo/b`, 600_000)
    expect([big.status, JSON.parse(big.body).max]).toEqual([413, 500_000])
    // A chunked body within the limit is replayed whole to the handler.
    const small = await upload(`${base}/echo/echo/c`, 10, { chunked: true, fill: " " })
    expect(small.status).toBe(400) // ten spaces: not JSON, and said so
  })

  it("json_depth: refused before parsing on the raw path and on the Effect path", async () => {
    for (const fast of [true, false]) {
      const r = await post("/echo/echo/d", { fast, text: "t", nested: nested(20) })
      expect([r.status, await r.json()]).toEqual([400, { error: "request body nests deeper than 16 levels", limit: "json_depth", max: 16 }])
      expect((await post("/echo/echo/d", { fast, text: "t", nested: nested(10) })).status).toBe(fast ? 203 : 200)
    }
    // 60 000 levels of `[` fit the body limit; they never reach JSON.parse or a Schema.
    const r = await upload(`${base}/roomy/echo/e`, 60_000, { fill: "[" })
    expect([r.status, JSON.parse(r.body).limit]).toEqual([400, "json_depth"])
  })

  it("the depth scan skips brackets inside strings and escapes", () => {
    expect(jsonDeeperThan(JSON.stringify({ a: "[[[[[[[[[[", b: "\\\"[[[[" }), 2)).toBe(false)
    expect(jsonDeeperThan(JSON.stringify(nested(3)), 3)).toBe(false)
    expect(jsonDeeperThan(JSON.stringify(nested(4)), 3)).toBe(true)
  })

  it("header_bytes: a head over the limit is 431 with a body naming it", async () => {
    const text = await rawExchange(base, `GET /echo HTTP/1.1\r\nHost: x\r\nX-Big: ${"h".repeat(8000)}\r\n\r\n`)
    expect(parseRaw(text)).toEqual({ status: 431, json: { error: "request head exceeds 4096 bytes", limit: "header_bytes", max: 4096 } })
  })

  it("request_timeout_s: a body that never finishes arriving is 408", async () => {
    const t0 = Date.now()
    const text = await rawExchange(base, `POST /echo/echo/f HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`, `{"fast":`)
    expect(parseRaw(text)).toEqual({ status: 408, json: { error: "request did not arrive within 1 s", limit: "request_timeout_s", max: 1 } })
    expect(Date.now() - t0).toBeLessThan(4_000)
  })

  it("max_connections: requests beyond it in flight are 503 with Retry-After; served again once they end", async () => {
    const slow = [1, 2, 3].map(() => fetch(`${base}/roomy/slow`))
    await new Promise((r) => setTimeout(r, 300))
    const over = await fetch(`${base}/echo`)
    expect([over.status, over.headers.get("retry-after"), await over.json()]).toEqual([503, "1", { error: "more than 3 requests in flight on this listener", limit: "max_connections", max: 3 }])
    expect((await Promise.all(slow)).map((r) => r.status)).toEqual([200, 200, 200])
    expect((await fetch(`${base}/echo`)).status).toBe(200)
  })

  it("the limits are in the config reference defaults: a listener without `limits` gets them", async () => {
    const p = await startPlatform({ cwd: ROOT, yaml: `listeners:\n  - name: main\n    port: 0\nplugins:\n  echo:\n    module: ${F}/echo\n` })
    try {
      const r = await upload(`${p.url("main")}/echo/echo/a`, 9 * 1024 * 1024)
      expect([r.status, JSON.parse(r.body).max]).toEqual([413, 8 * 1024 * 1024])
    } finally {
      await p.stop()
    }
  })
})
