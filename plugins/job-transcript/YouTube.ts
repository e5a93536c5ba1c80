/**
 * YouTube's transcript protocol, as maintained libraries (youtube-transcript-api 1.x,
 * youtubei.js) speak it today:
 *
 * 1. `GET /watch?v={id}` (with `Accept-Language`) and read `INNERTUBE_API_KEY` from the page.
 *    An EU consent interstitial (`action="https://consent.youtube.com/s"`) is answered by
 *    sending the `CONSENT=YES+{v}` cookie it asks for; a reCAPTCHA page means this address is
 *    blocked.
 * 2. `POST /youtubei/v1/player?key={key}` with an InnerTube client context (the ANDROID client:
 *    the WEB client's caption URLs now demand a proof-of-origin token). The answer carries
 *    `playabilityStatus`, `videoDetails` (`title`, `lengthSeconds`) and
 *    `captions.playerCaptionsTracklistRenderer` (`captionTracks[]`: `baseUrl`, `languageCode`,
 *    `name`, `kind: "asr"` for generated tracks, `isTranslatable`; `translationLanguages[]`).
 * 3. `GET {baseUrl}` (without `fmt=srv3`, plus `tlang=` for a translation): the timedtext XML,
 *    `<transcript><text start="s" dur="s">escaped text</text>…`.
 *
 * Search (`youtube_search`) uses `POST /youtubei/v1/search` with the WEB client and reads
 * every `videoRenderer` in the answer, wherever the page layout nests it.
 */
import { type Fetcher, JobFailure, type RateLimiter, type Route } from "../jobs/Contract.ts"

/** Endpoints and client identities (from the plugin config). */
export interface YouTubeOptions {
  readonly baseUrl: string
  readonly playerClient: { readonly clientName: string; readonly clientVersion: string }
  readonly searchClient: { readonly clientName: string; readonly clientVersion: string }
  readonly acceptLanguage: string
  readonly limiter: RateLimiter
}

/** A caption track as the player API lists it. */
export interface CaptionTrack {
  readonly baseUrl: string
  readonly languageCode: string
  readonly name: string
  readonly generated: boolean
  readonly translatable: boolean
}

/** What the player API tells about a video. */
export interface PlayerInfo {
  readonly videoId: string
  readonly title: string
  readonly lengthSeconds: number
  readonly tracks: ReadonlyArray<CaptionTrack>
  readonly translationLanguages: ReadonlyArray<string>
}

/** One caption cue; seconds. */
export interface Cue {
  readonly start: number
  readonly duration: number
  readonly text: string
}

/** A search hit. */
export interface VideoHit {
  readonly video_id: string
  readonly url: string
  readonly title: string
  readonly channel: string | null
  readonly duration_seconds: number | null
}

const remote = (message: string) => new JobFailure("REMOTE_ERROR", message, false)

const runsText = (v: unknown): string => {
  const o = v as { simpleText?: string; runs?: Array<{ text?: string }> } | undefined
  return o?.simpleText ?? o?.runs?.map((r) => r.text ?? "").join("") ?? ""
}

/** `1:02:03` / `4:05` to seconds; null when absent. */
export const clockSeconds = (s: string | undefined): number | null => {
  if (!s || !/^\d+(:\d{1,2}){0,2}$/.test(s)) return null
  return s.split(":").reduce((acc, p) => acc * 60 + Number(p), 0)
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " " }

/** Decodes XML/HTML character references (`&amp;`, `&#39;`, `&#x27;`). */
export const unescapeXml = (s: string): string =>
  s.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e: string) => {
    if (e[0] === "#") {
      const cp = e[1] === "x" || e[1] === "X" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10)
      return Number.isFinite(cp) ? String.fromCodePoint(cp) : m
    }
    return ENTITIES[e.toLowerCase()] ?? m
  })

const attr = (attrs: string, name: string): string | undefined => new RegExp(`\\b${name}="([^"]*)"`).exec(attrs)?.[1]

/**
 * Parses a timedtext document into cues. Reads the classic format (`<text start dur>`, seconds)
 * and srv3 (`<p t d>`, milliseconds). Text is unescaped, inner tags (`<font>`, `<s>`) dropped,
 * whitespace collapsed; empty cues are skipped. Throws `REMOTE_ERROR` when the document has
 * neither element (an HTML error page, an empty body).
 */
export const parseTimedText = (xml: string): Cue[] => {
  const cues: Cue[] = []
  // Captions are escaped twice (XML, then HTML inside it) and may carry formatting tags once
  // decoded; both levels are undone before tags go, as youtube-transcript-api does.
  const clean = (inner: string) => unescapeXml(unescapeXml(inner)).replace(/<[^>]*>/g, "").replace(/\s+/g, " ").trim()
  let found = false
  for (const m of xml.matchAll(/<text\b([^>]*)>([\s\S]*?)<\/text>|<text\b([^>]*)\/>/g)) {
    found = true
    const attrs = m[1] ?? m[3] ?? ""
    const text = clean(m[2] ?? "")
    if (text) cues.push({ start: Number(attr(attrs, "start") ?? 0), duration: Number(attr(attrs, "dur") ?? 0), text })
  }
  if (!found) {
    for (const m of xml.matchAll(/<p\b([^>]*)>([\s\S]*?)<\/p>/g)) {
      found = true
      const text = clean(m[2] ?? "")
      if (text) cues.push({ start: Number(attr(m[1]!, "t") ?? 0) / 1000, duration: Number(attr(m[1]!, "d") ?? 0) / 1000, text })
    }
  }
  if (!found && !/<transcript\b[^>]*\/>|<transcript\b[^>]*>\s*<\/transcript>|<timedtext\b/.test(xml)) {
    throw remote("timedtext: the caption document is not timedtext XML")
  }
  return cues
}

/** The client of one plugin instance (stateless; share it). */
export class YouTubeClient {
  constructor(readonly fetcher: Fetcher, readonly options: YouTubeOptions) {}

  /**
   * Reads the InnerTube API key from the watch page, answering a consent interstitial once.
   * Errors: `REMOTE_ERROR` when the page is a reCAPTCHA (address blocked) or carries no key;
   * fetch-layer failures otherwise.
   */
  async apiKey(videoId: string, signal: AbortSignal, route: Route): Promise<string> {
    const url = `${this.options.baseUrl}/watch?v=${encodeURIComponent(videoId)}`
    const get = (cookie?: string) =>
      this.fetcher.text({
        url,
        signal,
        route,
        limiter: this.options.limiter,
        what: "YouTube watch page",
        headers: { "accept-language": this.options.acceptLanguage, ...(cookie ? { cookie } : {}) }
      })
    let html = await get()
    if (html.includes('action="https://consent.youtube.com/s"')) {
      const v = /name="v" value="(.*?)"/.exec(html)?.[1]
      if (!v) throw remote("YouTube consent page: no consent value to answer with")
      html = await get(`CONSENT=YES+${v}`)
      if (html.includes('action="https://consent.youtube.com/s"')) throw remote("YouTube consent page: the consent cookie was not accepted")
    }
    const key = /"INNERTUBE_API_KEY":\s*"([a-zA-Z0-9_-]+)"/.exec(html)?.[1]
    if (key) return key
    if (html.includes('class="g-recaptcha"')) throw remote("YouTube is blocking requests from this address (reCAPTCHA page)")
    throw remote("YouTube watch page: INNERTUBE_API_KEY not found")
  }

  /**
   * Calls the player API for `videoId`. Errors (`REMOTE_ERROR`, not retried): the video is
   * unavailable, needs a login (age restriction, bot check), or is otherwise unplayable.
   */
  async player(videoId: string, key: string, signal: AbortSignal, route: Route): Promise<PlayerInfo> {
    const data = await this.fetcher.json<Record<string, any>>({
      url: `${this.options.baseUrl}/youtubei/v1/player?key=${encodeURIComponent(key)}&prettyPrint=false`,
      method: "POST",
      headers: { "content-type": "application/json", "accept-language": this.options.acceptLanguage },
      body: JSON.stringify({ context: { client: { ...this.options.playerClient, hl: "en" } }, videoId }),
      signal,
      route,
      limiter: this.options.limiter,
      what: "YouTube player API"
    })
    const ps = data.playabilityStatus ?? {}
    const status: string = ps.status ?? "OK"
    if (status !== "OK") {
      const reason: string = ps.reason ?? runsText(ps.errorScreen?.playerErrorMessageRenderer?.subreason) ?? ""
      if (status === "LOGIN_REQUIRED") {
        throw remote(/not a bot/i.test(reason)
          ? `video ${videoId}: YouTube asks to confirm this is not a bot (request blocked)`
          : `video ${videoId} requires signing in (age-restricted or private)${reason ? `: ${reason}` : ""}`)
      }
      throw remote(`video ${videoId} is unavailable (${status}${reason ? `: ${reason}` : ""})`)
    }
    const renderer = data.captions?.playerCaptionsTracklistRenderer
    const tracks: CaptionTrack[] = (renderer?.captionTracks ?? []).map((t: Record<string, any>) => ({
      baseUrl: String(t.baseUrl ?? ""),
      languageCode: String(t.languageCode ?? ""),
      name: runsText(t.name),
      generated: t.kind === "asr",
      translatable: Boolean(t.isTranslatable)
    }))
    return {
      videoId,
      title: String(data.videoDetails?.title ?? ""),
      lengthSeconds: Math.trunc(Number(data.videoDetails?.lengthSeconds ?? 0)) || 0,
      tracks,
      translationLanguages: (renderer?.translationLanguages ?? []).map((l: Record<string, any>) => String(l.languageCode ?? ""))
    }
  }

  /**
   * Fetches and parses a track, translated to `tlang` when given. Errors: `REMOTE_ERROR` when
   * the URL demands a PO token (`exp=xpe`), on 404, or on a document that is not timedtext.
   */
  async timedText(track: CaptionTrack, tlang: string | null, signal: AbortSignal, route: Route): Promise<Cue[]> {
    if (/[?&]exp=xpe\b/.test(track.baseUrl)) throw remote("caption URL requires a proof-of-origin (PO) token, which this client cannot produce")
    const url = new URL(track.baseUrl, this.options.baseUrl)
    // srv3 is the newer format; the classic one is what the parser reads most simply.
    url.searchParams.delete("fmt")
    if (tlang) url.searchParams.set("tlang", tlang)
    const xml = await this.fetcher.text({ url: url.href, signal, route, limiter: this.options.limiter, what: `YouTube timedtext (${track.languageCode})` })
    return parseTimedText(xml)
  }

  /** Searches videos; at most `max` hits of the first result page(s). */
  async search(query: string, max: number, signal: AbortSignal, route: Route): Promise<VideoHit[]> {
    const data = await this.fetcher.json<unknown>({
      url: `${this.options.baseUrl}/youtubei/v1/search?prettyPrint=false`,
      method: "POST",
      headers: { "content-type": "application/json", "accept-language": this.options.acceptLanguage },
      // `EgIQAQ==` is the "type: video" search filter.
      body: JSON.stringify({ context: { client: { ...this.options.searchClient, hl: "en" } }, query, params: "EgIQAQ==" }),
      signal,
      route,
      limiter: this.options.limiter,
      what: "YouTube search"
    })
    const hits: VideoHit[] = []
    const seen = new Set<string>()
    const walk = (node: unknown): void => {
      if (hits.length >= max || node === null || typeof node !== "object") return
      if (Array.isArray(node)) return node.forEach(walk)
      const vr = (node as Record<string, any>).videoRenderer
      if (vr && typeof vr.videoId === "string" && !seen.has(vr.videoId)) {
        seen.add(vr.videoId)
        hits.push({
          video_id: vr.videoId,
          url: `${this.options.baseUrl}/watch?v=${vr.videoId}`,
          title: runsText(vr.title),
          channel: runsText(vr.ownerText ?? vr.longBylineText) || null,
          duration_seconds: clockSeconds(runsText(vr.lengthText) || undefined)
        })
      }
      for (const v of Object.values(node)) walk(v)
    }
    walk(data)
    return hits
  }
}
