/**
 * Fetching one web page as a graph `Page` (`core/GraphTypes.ts`): the jobs `Fetcher` does the
 * request (deadline, 429 backoff, the route of the geo, a size cap), this module checks the URL,
 * picks the per-host rate limiter and decodes the body.
 *
 * Bodies of textual types (`text/*`, JSON, XML, JavaScript) are decoded with their charset (the
 * `Content-Type` parameter, else an HTML `<meta charset>`, else UTF-8). Other types (PDF,
 * images) are still returned, their bytes base64-encoded in `html`, so a downstream op that
 * understands the type (OCR, a PDF reader) gets them intact: `pageBytes` reverses either form.
 */
import type { Page } from "../../core/GraphTypes.ts"
import { type Fetcher, JobFailure, RateLimiter, type Route } from "../jobs/Contract.ts"
import { httpUrl } from "./Urls.ts"

/** True when a content type's body is text (decoded into `Page.html`); false: base64 there. */
export const isTextual = (contentType: string): boolean => {
  const t = contentType.split(";")[0]!.trim().toLowerCase()
  return t === "" || t.startsWith("text/") || /^application\/(json|xml|javascript|ecmascript|x-javascript|xhtml\+xml|ld\+json|rss\+xml|atom\+xml)$/.test(t) || /\+(xml|json)$/.test(t)
}

/** The body bytes of a page: base64-decoded for binary types (`isTextual` false), UTF-8 otherwise. */
export const pageBytes = (page: Page): Uint8Array =>
  isTextual(page.content_type) ? new TextEncoder().encode(page.html) : new Uint8Array(Buffer.from(page.html, "base64"))

const charsetOf = (contentType: string, body: Uint8Array): string => {
  const declared = /;\s*charset\s*=\s*"?([\w.:-]+)/i.exec(contentType)?.[1]
  if (declared) return declared
  if (/html/i.test(contentType)) {
    // Browsers look for <meta charset> in the first 1024 bytes; latin1 keeps every byte as is.
    const head = Buffer.from(body.subarray(0, 1024)).toString("latin1")
    const meta = /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(head)?.[1]
    if (meta) return meta
  }
  return "utf-8"
}

/** Decodes a body by its content type (module comment): text with its charset, else base64. */
export const decodeBody = (contentType: string, body: Uint8Array): string => {
  if (!isTextual(contentType)) return Buffer.from(body).toString("base64")
  try {
    return new TextDecoder(charsetOf(contentType, body)).decode(body)
  } catch {
    return new TextDecoder("utf-8").decode(body) // an unknown charset label: UTF-8 is the web's default
  }
}

/**
 * Per-host token buckets (politeness): every request to a host (`host:port`) takes a token of
 * that host's limiter. The map is bounded: past `maxHosts` it starts over, which at worst lets a
 * host burst once more.
 */
export class HostLimits {
  private readonly limiters = new Map<string, RateLimiter>()
  constructor(readonly perMinute: number, readonly burst: number, readonly maxHosts = 10_000) {}

  /** The limiter of `url`'s host. */
  for(url: URL): RateLimiter {
    let l = this.limiters.get(url.host)
    if (!l) {
      if (this.limiters.size >= this.maxHosts) this.limiters.clear()
      l = new RateLimiter({ perMinute: this.perMinute, burst: this.burst })
      this.limiters.set(url.host, l)
    }
    return l
  }
}

/** How to fetch pages: one per op instance. */
export interface PageFetchOptions {
  readonly fetcher: Fetcher
  readonly limits: HostLimits
  /** Largest body accepted, bytes (`max_page_bytes`). */
  readonly maxBytes: number
}

/**
 * Fetches `url` along `route` as a `Page`; `op` names the operation in error messages.
 *
 * Errors (`JobFailure`): `VALIDATION_ERROR` for a URL that is not absolute http(s); the
 * `Fetcher`'s failures otherwise, with messages starting `{op}: {url}`: non-2xx final statuses
 * (`REMOTE_ERROR` for 4xx, `NETWORK_ERROR` for 5xx and 429 after backoff, with `HTTP {status}` in
 * the message), `TIMEOUT` past `timeoutMs`, `CANCELLED` on `signal`, `REMOTE_ERROR` for a body
 * over `maxBytes`.
 */
export const fetchPage = async (
  o: PageFetchOptions,
  op: string,
  url: string,
  route: Route,
  signal: AbortSignal,
  timeoutMs: number
): Promise<Page> => {
  const parsed = httpUrl(url)
  if (!parsed) throw new JobFailure("VALIDATION_ERROR", `${op}: ${JSON.stringify(url)} is not an absolute http(s) URL`, false)
  const res = await o.fetcher
    .request({
      url: parsed.href,
      what: `${op}: ${parsed.href}`,
      route,
      signal,
      timeoutMs,
      maxBytes: o.maxBytes,
      limiter: o.limits.for(parsed),
      headers: { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" }
    })
    .catch((e: unknown) => {
      // Name the setting that refused the body, so the fix is obvious from the job's error.
      if (e instanceof JobFailure && / exceeds the \d+-byte limit$/.test(e.message)) throw new JobFailure(e.kind, `${e.message} (max_page_bytes)`, false)
      throw e
    })
  const contentType = res.headers.get("content-type") ?? ""
  return { url, final_url: res.url, status: res.status, content_type: contentType, html: decodeBody(contentType, res.body) }
}
