/**
 * The shared HTTP fetch layer of the research jobs (archive, transcript; the browser jobs use
 * the same `GeoResolver` for their contexts).
 *
 * One request = route resolution (geo), a turn of the source's `RateLimiter`, `fetch` under a
 * per-attempt deadline combined with the job's `AbortSignal`, a bounded body read, and backoff
 * on 429. Every failure leaves as a `JobFailure` whose kind follows `Failure.ts`, so the jobs
 * runtime retries transient failures (`NETWORK_ERROR`, `TIMEOUT`) and not permanent ones.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { JobFailure } from "../JobType.ts"
import { configOption } from "../../../core/Plugin.ts"
import { abortFailure, DeadlineExceeded, statusFailure, transportFailure } from "./Failure.ts"
import { directOnly, type GeoResolver, type Route } from "./GeoRouting.ts"
import type { RateLimiter } from "./RateLimiter.ts"

/** What a 429 asked for: its `Retry-After` in ms, if it sent one. */
export interface RetryAfter {
  readonly asked: number | undefined
}

/**
 * The 429 backoff as a Schedule over each 429's `RetryAfter`: waits `backoffBaseMs`, doubling per
 * retry and capped at `backoffMaxMs`, or what the server asked; stops after `max429Retries`
 * retries, or at once when the server asks for more than `backoffMaxMs`.
 */
export const backoff429 = (o: { readonly backoffBaseMs: number; readonly backoffMaxMs: number; readonly max429Retries: number }): Schedule.Schedule<unknown, RetryAfter> =>
  Schedule.exponential(Duration.millis(o.backoffBaseMs), 2).pipe(
    Schedule.intersect(Schedule.recurs(o.max429Retries)),
    Schedule.zipRight(Schedule.identity<RetryAfter>()),
    Schedule.modifyDelay((last, computed) => last.asked ?? Duration.min(computed, Duration.millis(o.backoffMaxMs))),
    Schedule.whileInput((r: RetryAfter) => r.asked === undefined || r.asked <= o.backoffMaxMs)
  )

/** Defaults of a `Fetcher`; every field can be overridden per request. */
export interface FetcherOptions {
  /** Resolves `geo` to a route; default `directOnly`. */
  readonly geo?: GeoResolver
  /** Per-attempt deadline in ms, connect to last body byte; default 30000 (spec `FETCH_TIMEOUT`). */
  readonly timeoutMs?: number
  /** Retries after a 429 before failing with `NETWORK_ERROR`; default 3. */
  readonly max429Retries?: number
  /** First 429 backoff in ms when the server sends no `Retry-After`; doubled per retry; default 1000. */
  readonly backoffBaseMs?: number
  /** Longest single wait in ms; a `Retry-After` beyond it fails at once (the runtime retries later); default 60000. */
  readonly backoffMaxMs?: number
  /** Largest body accepted, bytes; default 50 MiB. */
  readonly maxBytes?: number
  readonly userAgent?: string
  /** Injected `fetch` (tests, instrumentation); default the global one. */
  readonly fetch?: typeof globalThis.fetch
}

/** One request. */
export interface FetchRequest {
  readonly url: string
  readonly method?: string
  readonly headers?: Record<string, string>
  readonly body?: string | Uint8Array
  /** The job's signal: cancel and worker timeout abort the request at once. */
  readonly signal?: AbortSignal
  /** The job's `geo`; ignored when `route` is given. */
  readonly geo?: string | null
  /** An already resolved route (resolve once per job, reuse for its requests). */
  readonly route?: Route
  /** The source's limiter; every attempt (429 retries included) takes a token. */
  readonly limiter?: RateLimiter
  /** Names the request in error messages (`"Wayback CDX query"`); default the URL. */
  readonly what?: string
  /** Statuses returned to the caller instead of failing; default 200..299. */
  readonly accept?: (status: number) => boolean
  readonly timeoutMs?: number
  readonly max429Retries?: number
  readonly maxBytes?: number
}

/** A response whose body was read completely within the deadline. */
export interface FetchResponse {
  readonly status: number
  /** URL after redirects. */
  readonly url: string
  readonly headers: Headers
  readonly body: Uint8Array
  /** Attempts made, 1 + the 429 retries. */
  readonly attempts: number
  readonly text: () => string
  /** Parses the body as JSON; a parse error is `REMOTE_ERROR` (the source sent something else). */
  readonly json: <T = unknown>() => T
}

const DEFAULTS = {
  timeoutMs: 30_000,
  max429Retries: 3,
  backoffBaseMs: 1_000,
  backoffMaxMs: 60_000,
  maxBytes: 50 * 1024 * 1024,
  userAgent: "platform-research-jobs/0.1 (+https://localhost)"
}

/**
 * Milliseconds a `Retry-After` header asks for (delta-seconds or an HTTP date), or `undefined`
 * when absent or unparsable. `now` in ms since the epoch.
 */
export const retryAfterMs = (value: string | null, now = Date.now()): number | undefined => {
  if (value === null || value.trim() === "") return undefined
  const secs = Number(value.trim())
  if (Number.isFinite(secs)) return Math.max(0, secs * 1000)
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/** The HTTP client of the research jobs. Stateless apart from its options; share one per plugin. */
export class Fetcher {
  readonly options: Required<Omit<FetcherOptions, "fetch" | "geo">> & { geo: GeoResolver; fetch: typeof globalThis.fetch }

  constructor(options: FetcherOptions = {}) {
    this.options = {
      timeoutMs: options.timeoutMs ?? DEFAULTS.timeoutMs,
      max429Retries: options.max429Retries ?? DEFAULTS.max429Retries,
      backoffBaseMs: options.backoffBaseMs ?? DEFAULTS.backoffBaseMs,
      backoffMaxMs: options.backoffMaxMs ?? DEFAULTS.backoffMaxMs,
      maxBytes: options.maxBytes ?? DEFAULTS.maxBytes,
      userAgent: options.userAgent ?? DEFAULTS.userAgent,
      geo: options.geo ?? directOnly,
      fetch: options.fetch ?? globalThis.fetch.bind(globalThis)
    }
  }

  /** Resolves a job's `geo` once (rejects with `VALIDATION_ERROR` while routing is not configured). */
  route(geo: string | null | undefined, signal?: AbortSignal): Promise<Route> {
    return this.options.geo.resolve(geo, signal)
  }

  /**
   * Performs `req` and returns the response with its whole body.
   *
   * Errors (all `JobFailure`): `CANCELLED` when `req.signal` aborts; `TIMEOUT` when an attempt
   * exceeds `timeoutMs`; `NETWORK_ERROR` for transport errors, 5xx, and 429 once retries are
   * spent or the server asks for more than `backoffMaxMs`; `REMOTE_ERROR` for other statuses
   * not accepted by `req.accept`, bodies over `maxBytes`; `VALIDATION_ERROR` for a refused geo.
   */
  async request(req: FetchRequest): Promise<FetchResponse> {
    const o = this.options
    const what = req.what ?? req.url
    const accept = req.accept ?? ((s: number) => s >= 200 && s < 300)
    const max429 = req.max429Retries ?? o.max429Retries
    const route = req.route ?? (await this.route(req.geo, req.signal))
    let dispatcher: unknown
    if (route.kind === "proxy") {
      // Node's fetch only proxies through an undici dispatcher; a route without one is unusable here.
      if (route.dispatcher === undefined) {
        throw new JobFailure("VALIDATION_ERROR", `${what}: route ${route.label ?? route.proxyUrl} offers no HTTP dispatcher`, false)
      }
      dispatcher = route.dispatcher
    }
    let backoff: Schedule.ScheduleDriver<unknown, RetryAfter> | undefined
    for (let attempt = 1; ; attempt++) {
      if (req.limiter) await req.limiter.acquire(req.signal)
      const res = await this.once(req, what, dispatcher, attempt)
      if (res.status === 429 && !accept(429)) {
        const asked = retryAfterMs(res.headers.get("retry-after"))
        backoff ??= Effect.runSync(Schedule.driver(backoff429({ ...o, max429Retries: max429 })))
        // The schedule sleeps the wait; it ends when the retries are spent or the server asks
        // for more than backoffMaxMs.
        const waited = await Effect.runPromise(Effect.either(backoff.next({ asked })), req.signal ? { signal: req.signal } : undefined).catch((e) => {
          throw req.signal?.aborted ? abortFailure(req.signal) : e
        })
        if (waited._tag === "Left") {
          const why = attempt > max429 ? `rate limited after ${attempt} attempts` : `server asks to wait ${Math.round((asked ?? 0) / 1000)} s`
          throw statusFailure(429, what, why)
        }
        continue
      }
      if (!accept(res.status)) throw statusFailure(res.status, what)
      return res
    }
  }

  /** `request` then `text()`. */
  async text(req: FetchRequest): Promise<string> {
    return (await this.request(req)).text()
  }

  /** `request` then `json()`. */
  async json<T = unknown>(req: FetchRequest): Promise<T> {
    return (await this.request(req)).json<T>()
  }

  private async once(req: FetchRequest, what: string, dispatcher: unknown, attempt: number): Promise<FetchResponse> {
    const timeoutMs = req.timeoutMs ?? this.options.timeoutMs
    const maxBytes = req.maxBytes ?? this.options.maxBytes
    const deadline = new AbortController()
    const timer = setTimeout(() => deadline.abort(new DeadlineExceeded(timeoutMs, what)), timeoutMs)
    // fetch gets its own signal, forwarded only while this attempt is in flight: undici keeps a
    // listener on the signal of every request it ever served and, on abort, cancels that
    // request's streams, rethrowing the cancel's rejection unless its code is ERR_INVALID_STATE
    // (undici 6 `abortFetch`). A job signal aborted after (or during) a request thus surfaced
    // as an unhandled rejection. The marked reason is swallowed there; the caller still sees
    // the real cause through `outer()`.
    const inner = new AbortController()
    const forward = () => inner.abort(Object.assign(new Error(`${what}: aborted`), { name: "AbortError", code: "ERR_INVALID_STATE" }))
    const outer = (): AbortSignal | undefined => (req.signal?.aborted ? req.signal : deadline.signal.aborted ? deadline.signal : undefined)
    if (req.signal?.aborted) forward()
    req.signal?.addEventListener("abort", forward, { once: true })
    deadline.signal.addEventListener("abort", forward, { once: true })
    try {
      const init: RequestInit = {
        method: req.method ?? "GET",
        headers: { "user-agent": this.options.userAgent, ...req.headers },
        signal: inner.signal,
        redirect: "follow"
      }
      if (req.body !== undefined) init.body = req.body
      // `dispatcher` is Node's (undici's) extension of RequestInit, absent from the DOM typings.
      if (dispatcher !== undefined) (init as Record<string, unknown>).dispatcher = dispatcher
      const res = await this.options.fetch(req.url, init)
      const body = await readLimited(res, maxBytes, what)
      return {
        status: res.status,
        url: res.url || req.url,
        headers: res.headers,
        body,
        attempts: attempt,
        text: () => new TextDecoder().decode(body),
        json: <T>() => {
          try {
            return JSON.parse(new TextDecoder().decode(body)) as T
          } catch {
            throw new JobFailure("REMOTE_ERROR", `${what}: response is not JSON (HTTP ${res.status})`, false)
          }
        }
      }
    } catch (err) {
      throw transportFailure(err, outer(), what)
    } finally {
      clearTimeout(timer)
      req.signal?.removeEventListener("abort", forward)
      deadline.signal.removeEventListener("abort", forward)
    }
  }
}

/** Reads a body, refusing more than `maxBytes` without buffering the excess. */
const readLimited = async (res: Response, maxBytes: number, what: string): Promise<Uint8Array> => {
  const declared = Number(res.headers.get("content-length") ?? NaN)
  if (declared > maxBytes) {
    await res.body?.cancel().catch(() => undefined)
    throw new JobFailure("REMOTE_ERROR", `${what}: response of ${declared} bytes exceeds the ${maxBytes}-byte limit`, false)
  }
  if (!res.body) return new Uint8Array(0)
  const chunks: Uint8Array[] = []
  let total = 0
  const reader = res.body.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined)
      throw new JobFailure("REMOTE_ERROR", `${what}: response exceeds the ${maxBytes}-byte limit`, false)
    }
    chunks.push(value)
  }
  const out = new Uint8Array(total)
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.byteLength
  }
  return out
}

/**
 * The fetch keys of a job plugin's config (`fetch_timeout_ms`, `max_429_retries`,
 * `backoff_base_ms`, `backoff_max_ms`), to spread into its config Struct; `fetcherFor` builds
 * the `Fetcher` they describe.
 */
export const fetchConfigFields = {
  fetch_timeout_ms: configOption(Schema.Int.pipe(Schema.between(100, 600_000)), 30_000, "deadline of one HTTP request, ms"),
  max_429_retries: configOption(Schema.Int.pipe(Schema.between(0, 10)), 3, "retries after a 429 within one attempt before failing NETWORK_ERROR"),
  backoff_base_ms: configOption(Schema.Int.pipe(Schema.between(0, 600_000)), 2_000, "first 429 backoff when the server sends no Retry-After, ms (doubles per retry)"),
  backoff_max_ms: configOption(Schema.Int.pipe(Schema.between(0, 3_600_000)), 60_000, "longest single backoff, ms; a longer Retry-After fails the attempt at once")
}

/** A decoded config holding `fetchConfigFields`. */
export type FetchConfig = Schema.Struct.Type<typeof fetchConfigFields>

/** The `Fetcher` of a decoded config's fetch keys, routing through `geo`. */
export const fetcherFor = (c: FetchConfig, geo: GeoResolver = directOnly): Fetcher =>
  new Fetcher({ geo, timeoutMs: c.fetch_timeout_ms, max429Retries: c.max_429_retries, backoffBaseMs: c.backoff_base_ms, backoffMaxMs: c.backoff_max_ms })
