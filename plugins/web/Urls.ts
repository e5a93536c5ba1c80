/**
 * URL handling shared by the web operations (and the crawl job, through `Contract.ts`):
 * normalisation for de-duplication, domain tests, the `filter_urls` rules and link extraction
 * from HTML (parsed with linkedom, so attributes, entities and `<base href>` are read the way a
 * browser reads them).
 */
import { parseHTML } from "linkedom"
import { JobFailure } from "../jobs/Contract.ts"
import type { Page } from "../../core/GraphTypes.ts"

/** Parses `raw` as an absolute http(s) URL; undefined for anything else. */
export const httpUrl = (raw: string): URL | undefined => {
  let u: URL
  try {
    u = new URL(raw.trim())
  } catch {
    return undefined
  }
  return u.protocol === "http:" || u.protocol === "https:" ? u : undefined
}

/**
 * The normal form of an http(s) URL, for comparing URLs: scheme and host lowercased and the
 * default port dropped (WHATWG URL parsing does both), the fragment dropped, `utm_*` tracking
 * parameters dropped, the remaining query parameters sorted by name (stable, so repeated names
 * keep their order), and an empty `?` removed. Undefined when `raw` is not an absolute http(s) URL.
 */
export const normaliseUrl = (raw: string): string | undefined => {
  const u = httpUrl(raw)
  if (!u) return undefined
  u.hash = ""
  for (const key of [...new Set(u.searchParams.keys())]) if (/^utm_/i.test(key)) u.searchParams.delete(key)
  u.searchParams.sort()
  if ([...u.searchParams.keys()].length === 0) u.search = ""
  return u.href
}

/** `host` without a leading `www.`, lowercased. */
const bareHost = (host: string): string => host.toLowerCase().replace(/^www\./, "")

/** True when `host` is `domain` or a subdomain of it (`news.acme.com` is in `acme.com`); a leading `www.` is ignored on both. */
export const inDomain = (host: string, domain: string): boolean => {
  const h = bareHost(host)
  const d = bareHost(domain.trim().replace(/^\.+/, ""))
  return d !== "" && (h === d || h.endsWith(`.${d}`))
}

/** Rules of `filter_urls`; every field optional. */
export interface UrlFilter {
  /** Regexes (JavaScript syntax): a URL is kept when one matches; none given keeps all. */
  readonly include?: ReadonlyArray<string>
  /** Regexes: a URL is dropped when one matches. */
  readonly exclude?: ReadonlyArray<string>
  /** Keep only URLs on this URL's domain (or its subdomains). */
  readonly sameDomainAs?: string | null
  /** Keep only URLs on one of these domains (or their subdomains). */
  readonly domains?: ReadonlyArray<string>
  /** Drop these URLs (compared in normal form: already visited, already fetched). */
  readonly excludeUrls?: ReadonlyArray<string>
  /** Keep at most this many (the first ones); 0 or less keeps none. */
  readonly max?: number | null
  /** Normalise (`normaliseUrl`) and drop repeats, keeping the first. */
  readonly dedupe?: boolean
}

const compile = (what: string, kind: string, patterns: ReadonlyArray<string> | undefined): RegExp[] =>
  (patterns ?? []).map((p) => {
    try {
      return new RegExp(p)
    } catch (e) {
      throw new JobFailure("VALIDATION_ERROR", `${what}: invalid ${kind} regex ${JSON.stringify(p)}: ${(e as Error).message}`, false)
    }
  })

/**
 * Applies `f` to `urls` in order: anything that is not an absolute http(s) URL is dropped, and so
 * is any of `excludeUrls`; with `dedupe` each URL is replaced by its normal form and repeats are
 * dropped; then the domain rules,
 * `include`/`exclude` (tested against the URL as output) and `max`. Returns the kept URLs and how
 * many were dropped as invalid.
 *
 * Errors: `JobFailure` `VALIDATION_ERROR` naming an invalid regex or an invalid `sameDomainAs`.
 */
export const filterUrls = (urls: ReadonlyArray<string>, f: UrlFilter, what = "filter_urls"): { kept: string[]; invalid: number } => {
  const include = compile(what, "include", f.include)
  const exclude = compile(what, "exclude", f.exclude)
  let sameHost: string | undefined
  if (f.sameDomainAs !== undefined && f.sameDomainAs !== null) {
    const u = httpUrl(f.sameDomainAs)
    if (!u) throw new JobFailure("VALIDATION_ERROR", `${what}: same_domain_as ${JSON.stringify(f.sameDomainAs)} is not an absolute http(s) URL`, false)
    sameHost = u.hostname
  }
  const domains = (f.domains ?? []).filter((d) => d.trim() !== "")
  const excluded = new Set((f.excludeUrls ?? []).map((x) => normaliseUrl(x)).filter((x): x is string => x !== undefined))
  const seen = new Set<string>()
  const kept: string[] = []
  let invalid = 0
  for (const raw of urls) {
    if (f.max !== undefined && f.max !== null && kept.length >= f.max) break
    const u = httpUrl(raw)
    if (!u) {
      invalid++
      continue
    }
    let out = raw.trim()
    if (excluded.size > 0 && excluded.has(normaliseUrl(out)!)) continue
    if (f.dedupe) {
      out = normaliseUrl(out)!
      if (seen.has(out)) continue
      seen.add(out)
    }
    if (sameHost !== undefined && !inDomain(u.hostname, sameHost)) continue
    if (domains.length > 0 && !domains.some((d) => inDomain(u.hostname, d))) continue
    if (include.length > 0 && !include.some((r) => r.test(out))) continue
    if (exclude.some((r) => r.test(out))) continue
    kept.push(out)
  }
  return { kept, invalid }
}

/** True when a content type is HTML (or XHTML). */
export const isHtml = (contentType: string): boolean => /^\s*(text\/html|application\/xhtml\+xml)\b/i.test(contentType)

/**
 * The absolute http(s) links of an HTML page (`<a href>` and `<area href>`), resolved against its
 * `<base href>` or else its `final_url`, normalised, without repeats, in document order.
 * Non-HTML pages have none. `sameDomain` keeps only links on the page's own domain.
 */
export const pageLinks = (page: Page, sameDomain = false): string[] => {
  if (!isHtml(page.content_type)) return []
  const { document } = parseHTML(page.html)
  const baseHref = document.querySelector("base[href]")?.getAttribute("href")
  let base: URL | undefined = httpUrl(page.final_url) ?? httpUrl(page.url)
  if (baseHref) {
    try {
      base = new URL(baseHref, base)
    } catch {
      // An unusable <base href> is ignored, as browsers do.
    }
  }
  const host = base?.hostname
  const seen = new Set<string>()
  const out: string[] = []
  for (const a of document.querySelectorAll("a[href], area[href]")) {
    const href = (a.getAttribute("href") ?? "").trim()
    if (href === "" || href.startsWith("#")) continue
    let abs: string
    try {
      abs = new URL(href, base).href
    } catch {
      continue
    }
    const norm = normaliseUrl(abs)
    if (norm === undefined || seen.has(norm)) continue
    if (sameDomain && host !== undefined && !inDomain(new URL(norm).hostname, host)) continue
    seen.add(norm)
    out.push(norm)
  }
  return out
}
