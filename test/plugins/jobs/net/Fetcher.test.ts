import * as Effect from "effect/Effect"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as ScheduleIntervals from "effect/ScheduleIntervals"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { JobFailure } from "../../../../plugins/jobs/Contract.ts"
import { backoff429, Fetcher, retryAfterMs } from "../../../../plugins/jobs/net/Fetcher.ts"
import { directOnly, parseGeo } from "../../../../plugins/jobs/net/GeoRouting.ts"
import { RateLimiter } from "../../../../plugins/jobs/net/RateLimiter.ts"
import { type Fixture, serve } from "../../../fixtures/pages-server.ts"
import { expectJobFailure } from "./jobContext.ts"

let fx: Fixture
const hits = new Map<string, number>()
const hit = (k: string) => {
  const n = (hits.get(k) ?? 0) + 1
  hits.set(k, n)
  return n
}

beforeAll(async () => {
  fx = await serve((req, res) => {
    const u = new URL(req.url ?? "/", "http://x")
    const k = u.searchParams.get("k") ?? ""
    switch (u.pathname) {
      case "/ok":
        res.writeHead(200, { "content-type": "application/json" })
        return void res.end(JSON.stringify({ ok: true }))
      case "/429-once":
        if (hit(k) === 1) {
          res.writeHead(429, { "retry-after": "0" })
          return void res.end()
        }
        res.writeHead(200)
        return void res.end("second time lucky")
      case "/429-always":
        res.writeHead(429)
        return void res.end()
      case "/429-long":
        res.writeHead(429, { "retry-after": "3600" })
        return void res.end()
      case "/404":
        res.writeHead(404)
        return void res.end("nope")
      case "/500":
        res.writeHead(500)
        return void res.end()
      case "/hang":
        res.writeHead(200)
        return void res.write("partial") // never ends: the deadline must cover the body too
      case "/big":
        res.writeHead(200)
        return void res.end(Buffer.alloc(4096))
      default:
        res.writeHead(404)
        res.end()
    }
  })
})
afterAll(() => fx.close())

const fetcher = new Fetcher({ backoffBaseMs: 10, timeoutMs: 2_000 })

const failure = expectJobFailure

describe("Fetcher", () => {
  it("returns the body and JSON of a 200", async () => {
    const res = await fetcher.request({ url: `${fx.url}/ok` })
    expect(res.status).toBe(200)
    expect(res.json()).toEqual({ ok: true })
    expect(res.attempts).toBe(1)
  })

  it("backs off on 429 and then succeeds", async () => {
    const res = await fetcher.request({ url: `${fx.url}/429-once?k=a` })
    expect(res.text()).toBe("second time lucky")
    expect(res.attempts).toBe(2)
  })

  it("fails with a retryable NETWORK_ERROR when 429 persists or the wait is too long", async () => {
    const f = await failure(fetcher.request({ url: `${fx.url}/429-always`, max429Retries: 2, what: "probe" }))
    expect(f.kind).toBe("NETWORK_ERROR")
    expect(f.message).toMatch(/probe failed: HTTP 429.*after 3 attempts/)
    const long = await failure(fetcher.request({ url: `${fx.url}/429-long` }))
    expect(long.kind).toBe("NETWORK_ERROR")
    expect(long.message).toMatch(/wait 3600 s/)
  })

  it("its 429 backoff schedule: doubling from the base, capped, Retry-After first, bounded retries", () => {
    // Steps the schedule at time 0 with each 429's Retry-After: the waits until it stops.
    const delays = (o: { backoffBaseMs: number; backoffMaxMs: number; max429Retries: number }, asked: ReadonlyArray<number | undefined>) =>
      Effect.runSync(Effect.gen(function*() {
        const schedule = backoff429(o)
        let state = schedule.initial
        const waits: Array<number> = []
        for (const a of asked) {
          const [next, , decision] = yield* schedule.step(0, { asked: a }, state)
          if (ScheduleDecision.isDone(decision)) break
          waits.push(ScheduleIntervals.start(decision.intervals))
          state = next
        }
        return waits
      }))
    const o = { backoffBaseMs: 1000, backoffMaxMs: 60_000, max429Retries: 3 }
    expect(delays(o, [undefined, undefined, undefined, undefined, undefined])).toEqual([1000, 2000, 4000])
    expect(delays({ ...o, backoffBaseMs: 40_000 }, [undefined, undefined, undefined])).toEqual([40_000, 60_000, 60_000])
    expect(delays(o, [500, undefined, 0])).toEqual([500, 2000, 0])
    // A server asking for more than the cap ends the retries at once.
    expect(delays(o, [undefined, 61_000, undefined])).toEqual([1000])
  })

  it("classifies 404 as REMOTE_ERROR (not retried) and 500 as NETWORK_ERROR", async () => {
    const nf = await failure(fetcher.request({ url: `${fx.url}/404` }))
    expect([nf.kind, nf.retryable]).toEqual(["REMOTE_ERROR", false])
    expect((await failure(fetcher.request({ url: `${fx.url}/500` }))).kind).toBe("NETWORK_ERROR")
    const accepted = await fetcher.request({ url: `${fx.url}/404`, accept: (s) => s === 404 })
    expect(accepted.status).toBe(404)
  })

  it("times out a body that never ends", async () => {
    const t0 = Date.now()
    const f = await failure(fetcher.request({ url: `${fx.url}/hang`, timeoutMs: 300 }))
    expect(f.kind).toBe("TIMEOUT")
    expect(Date.now() - t0).toBeLessThan(1_500)
  })

  it("cancels at once when the job signal aborts", async () => {
    const ac = new AbortController()
    setTimeout(() => ac.abort(), 100)
    const f = await failure(fetcher.request({ url: `${fx.url}/hang`, signal: ac.signal }))
    expect(f.kind).toBe("CANCELLED")
  })

  it("lets a job signal abort after its requests finished without side effects", async () => {
    // undici keeps listening on a request's signal after the response; an abort then used to
    // surface as an unhandled rejection (vitest fails the run on one).
    const ac = new AbortController()
    await fetcher.request({ url: `${fx.url}/ok`, signal: ac.signal, method: "POST", body: "{}" })
    ac.abort(new JobFailure("CANCELLED", "job cancelled"))
    await new Promise((r) => setTimeout(r, 50))
  })

  it("reports a refused connection as NETWORK_ERROR and an oversized body as REMOTE_ERROR", async () => {
    expect((await failure(fetcher.request({ url: "http://127.0.0.1:1/" }))).kind).toBe("NETWORK_ERROR")
    expect((await failure(fetcher.request({ url: `${fx.url}/big`, maxBytes: 1000 }))).kind).toBe("REMOTE_ERROR")
  })

  it("refuses a non-null geo until routing is configured, and uses a proxy route's dispatcher", async () => {
    const f = await failure(fetcher.request({ url: `${fx.url}/ok`, geo: "us:ca" }))
    expect([f.kind, f.retryable]).toEqual(["VALIDATION_ERROR", false])
    expect(f.message).toMatch(/geo routing is not configured/)
    expect((await failure(directOnly.resolve("not a geo!"))).message).toMatch(/invalid geo/)
    expect(parseGeo("US:TX:tor")).toMatchObject({ country: "us", state: "tx", type: "tor" })
    expect(await directOnly.resolve(null)).toEqual({ kind: "direct" })

    const seen: unknown[] = []
    const marker = { dispatcher: "fake-proxy-agent" }
    const proxied = new Fetcher({
      geo: { resolve: async () => ({ kind: "proxy", proxyUrl: "http://proxy:3128", dispatcher: marker }) },
      fetch: async (url, init) => {
        const { dispatcher, ...rest } = init as Record<string, unknown>
        seen.push(dispatcher)
        return globalThis.fetch(url, rest as RequestInit)
      }
    })
    await proxied.request({ url: `${fx.url}/ok`, geo: "us" })
    expect(seen).toEqual([marker])
  })
})

describe("RateLimiter and Retry-After", () => {
  it("spaces requests at perMinute after the burst", async () => {
    const rl = new RateLimiter({ perMinute: 600, burst: 1 }) // one per 100 ms
    const t0 = Date.now()
    for (let i = 0; i < 4; i++) await rl.acquire()
    const took = Date.now() - t0
    expect(took).toBeGreaterThanOrEqual(280)
    expect(took).toBeLessThan(1_000)
  })

  it("lets a burst go at once, then serves waiters in arrival order", async () => {
    const rl = new RateLimiter({ perMinute: 600, burst: 3 }) // 3 at once, then one per 100 ms
    const t0 = Date.now()
    await Promise.all([rl.acquire(), rl.acquire(), rl.acquire()])
    // Without the burst the third would wait two refills (200 ms): under that is "at once",
    // with room for a test process descheduled on a loaded machine.
    expect(Date.now() - t0).toBeLessThan(190)
    const order: Array<number> = []
    await Promise.all([0, 1, 2].map((i) => rl.acquire().then(() => order.push(i))))
    expect(order).toEqual([0, 1, 2])
    expect(Date.now() - t0).toBeGreaterThanOrEqual(280)
  })

  it("gives up a waiting turn on abort without wedging the queue", async () => {
    const rl = new RateLimiter({ perMinute: 60 }) // one per second
    await rl.acquire()
    const ac = new AbortController()
    const waiting = rl.acquire(ac.signal)
    ac.abort()
    expect((await failure(waiting)).kind).toBe("CANCELLED")
  })

  it("parses delta-seconds and HTTP dates", () => {
    expect(retryAfterMs("2")).toBe(2000)
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4_000)).toBe(6_000)
    expect(retryAfterMs(null)).toBeUndefined()
  })
})
