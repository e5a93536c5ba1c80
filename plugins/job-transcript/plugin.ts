/**
 * Plugin `job-transcript`: the `transcript` job type (YouTube captions through the InnerTube
 * player API and the timedtext document) and the `youtube_search` graph operation.
 *
 * `youtube_base_url` points every request (watch page, InnerTube, search) at another server
 * (tests use a loopback fixture); caption URLs come from the player answer itself. The client
 * versions are configurable because YouTube retires old ones.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { directOnly, fetchConfigFields, fetcherFor, jobTypes, pluggedGeoResolver, RateLimiter } from "../jobs/Contract.ts"
import { configOption, definePlugin } from "../../core/Plugin.ts"
import { TranscriptDoc, transcriptOp, Video, youtubeSearchOp } from "./GraphOps.ts"
import { TranscriptPayload, TranscriptResult, transcriptJob } from "./Transcript.ts"
import { YouTubeClient } from "./YouTube.ts"

const opt = configOption

/** Config of `plugins.job-transcript` in platform.yaml. */
export const TranscriptConfig = Schema.Struct({
  youtube_base_url: opt(Schema.String.pipe(Schema.pattern(/^https?:\/\/\S+[^/]$/)), "https://www.youtube.com", "YouTube origin for the watch page, InnerTube player and search APIs"),
  player_client_name: opt(Schema.String, "ANDROID", "InnerTube client used for the player API (ANDROID gets caption URLs without a PO token)"),
  player_client_version: opt(Schema.String, "20.10.38", "version of that InnerTube client"),
  search_client_name: opt(Schema.String, "WEB", "InnerTube client used for search"),
  search_client_version: opt(Schema.String, "2.20250101.00.00", "version of the search client"),
  accept_language: opt(Schema.String, "en-US", "Accept-Language sent to YouTube"),
  requests_per_minute: opt(Schema.Number.pipe(Schema.greaterThan(0)), 60, "YouTube requests per minute per worker process"),
  ...fetchConfigFields
}).annotations({ identifier: "JobTranscriptConfig" })
export type TranscriptConfig = typeof TranscriptConfig.Type

/** Builds the YouTube client of a decoded config. */
export const makeYouTubeClient = (c: TranscriptConfig, geo = directOnly): YouTubeClient =>
  new YouTubeClient(
    fetcherFor(c, geo),
    {
      baseUrl: c.youtube_base_url,
      playerClient: { clientName: c.player_client_name, clientVersion: c.player_client_version },
      searchClient: { clientName: c.search_client_name, clientVersion: c.search_client_version },
      acceptLanguage: c.accept_language,
      limiter: new RateLimiter({ perMinute: c.requests_per_minute, burst: 5 })
    }
  )

export default definePlugin({
  name: "job-transcript",
  version: "0.1.0",
  description: "transcript jobs: YouTube captions via the InnerTube player API and timedtext, with language fallback; youtube_search and transcript graph operations.",
  dependsOn: ["jobs"],
  // No routes of its own; jobs and graph operations are served by the `jobs` listener.
  defaultListener: "jobs",
  config: TranscriptConfig,
  resources: { TranscriptPayload, TranscriptResult, YouTubeVideo: Video, TranscriptDoc },
  setup: (ctx) =>
    Effect.gen(function* () {
      const geo = yield* pluggedGeoResolver
      const client = makeYouTubeClient(ctx.config, geo)
      return { extensions: jobTypes(transcriptJob(client)), graphOps: [youtubeSearchOp(client), transcriptOp(client)] }
    })
})
