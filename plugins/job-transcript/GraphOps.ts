/**
 * Graph operation of the transcript plugin: `youtube_search` (Discover), a query to videos.
 */
import { Schema } from "effect"
import type { GraphOperation } from "../../core/Contribution.ts"
import { JobFailure } from "../jobs/Contract.ts"
import type { VideoHit, YouTubeClient } from "./YouTube.ts"

/** `youtube_search` params: `max_results` (1..50, default 10), optional `query` (else the input), `geo`. */
export const SearchParams = Schema.Struct({
  query: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  max_results: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 50)), { default: () => 10 }),
  geo: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null })
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
