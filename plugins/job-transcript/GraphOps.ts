/**
 * Graph operation of the transcript plugin: `youtube_search` (Discover), a query to videos.
 */
import * as Schema from "effect/Schema"
import type { GraphOperation } from "../../core/Contribution.ts"
import { JobFailure, GeoField } from "../jobs/Contract.ts"
import { LanguageCode, readTranscript } from "./Transcript.ts"
import type { VideoHit, YouTubeClient } from "./YouTube.ts"

/** `youtube_search` params: `max_results` (1..50, default 10), optional `query` (else the input), `geo`. */
export const SearchParams = Schema.Struct({
  query: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  max_results: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 50)), { default: () => 10 }),
  geo: Schema.optionalWith(GeoField, { default: () => null })
})

/** A video found by search; `url` is its watch URL. */
export const Video = Schema.Struct({
  video_id: Schema.String,
  url: Schema.String,
  title: Schema.String,
  channel: Schema.NullOr(Schema.String),
  duration_seconds: Schema.NullOr(Schema.Int)
}).annotations({ identifier: "YouTubeVideo" })

/**
 * `youtube_search`: query (the input string, or `params.query`) → `Video[]`, at most
 * `max_results`, in YouTube's relevance order. Errors: the fetch layer's `JobFailure`s.
 */
export const youtubeSearchOp = (client: YouTubeClient): GraphOperation<typeof SearchParams.Type, string | null, ReadonlyArray<VideoHit>> => ({
  name: "youtube_search",
  category: "discover",
  inputTypes: ["string"],
  outputType: "video[]",
  description: "Searches YouTube videos (InnerTube search API) and returns ids, watch URLs, titles, channels and durations.",
  params: SearchParams,
  input: Schema.NullOr(Schema.String),
  output: Schema.Array(Video),
  handler: async (params, input, ctx) => {
    const query = (params.query ?? input ?? "").trim()
    if (!query) throw new JobFailure("VALIDATION_ERROR", "youtube_search needs a query (input or params.query)", false)
    const route = await client.fetcher.route(params.geo, ctx.signal)
    return client.search(query, params.max_results, ctx.signal, route)
  }
})

/** `transcript` op params: caption `language` (default en, with translation fallback), `geo`. */
export const TranscriptParams = Schema.Struct({
  language: Schema.optionalWith(LanguageCode, { default: () => "en" }),
  geo: Schema.optionalWith(GeoField, { default: () => null })
})

/** A transcript as a graph `text` value (a Doc: url, title, text) with the video's facts. */
export const TranscriptDoc = Schema.Struct({
  url: Schema.String,
  title: Schema.NullOr(Schema.String),
  text: Schema.String,
  video_id: Schema.String,
  duration_seconds: Schema.NullOr(Schema.Int),
  language: Schema.String
}).annotations({ identifier: "TranscriptDoc" })

const VideoRef = Schema.Union(Video, Schema.String)

/**
 * `transcript` (Process): `video[]` (from `youtube_search`) or video ids → `transcript[]`, one
 * Doc per video that has captions, in input order; videos without captions are left out (said in
 * progress). Fails when no video has a transcript, with the first error.
 */
export const transcriptOp = (client: YouTubeClient): GraphOperation<typeof TranscriptParams.Type, ReadonlyArray<typeof VideoRef.Type>, ReadonlyArray<typeof TranscriptDoc.Type>> => ({
  name: "transcript",
  description: "Reads the captions of videos (YouTube InnerTube player + timedtext) as texts with their watch URL and title.",
  category: "process",
  inputTypes: ["video[]", "string[]"],
  outputType: "transcript[]",
  params: TranscriptParams,
  input: Schema.Array(VideoRef),
  output: Schema.Array(TranscriptDoc),
  handler: async (params, videos, ctx) => {
    const out: Array<typeof TranscriptDoc.Type> = []
    let first: unknown
    for (const [i, v] of videos.entries()) {
      const id = typeof v === "string" ? v : v.video_id
      try {
        const t = await readTranscript(client, { video_id: id, language: params.language, include_timestamps: false, geo: params.geo }, { signal: ctx.signal, progress: async () => {} })
        out.push({ url: typeof v === "string" ? `https://www.youtube.com/watch?v=${id}` : v.url, title: t.title, text: t.full_text, video_id: id, duration_seconds: t.duration_seconds, language: t.language })
        await ctx.progress(Math.round((100 * (i + 1)) / videos.length), `${id}: ${t.full_text.split(/\s+/).length} words`)
      } catch (e) {
        if (ctx.signal.aborted) throw e
        first ??= e
        await ctx.progress(Math.round((100 * (i + 1)) / videos.length), `${id}: skipped: ${(e as Error).message}`)
      }
    }
    if (videos.length > 0 && out.length === 0) throw first
    return out
  }
})
