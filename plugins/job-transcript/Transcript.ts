/**
 * The `transcript` job type (research-jobs spec, "transcript") and its language fallback.
 *
 * Language choice, first match wins (codes compared case-insensitively):
 * 1. a manually created track in `language`;
 * 2. a generated (automatic speech recognition) track in `language`;
 * 3. a track of the same base language (`en` ↔ `en-US`, `en-GB`), manual before generated;
 * 4. YouTube's machine translation into `language` of the first translatable track (manual
 *    first), when `language` is among the video's translation languages;
 * 5. the video's first track (manual first), in its own language.
 * The result's `language` and `is_generated` say which track was used; `translated` is true
 * for step 4.
 */
import * as Schema from "effect/Schema"
import { JobFailure, type JobType, GeoField } from "../jobs/Contract.ts"
import type { CaptionTrack, YouTubeClient } from "./YouTube.ts"

/** YouTube video ids are 11 characters of the URL-safe base-64 alphabet. */
export const VideoId = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{11}$/), Schema.annotations({ description: "YouTube video id (11 characters)", examples: ["dQw4w9WgXcQ"] }))

/** A BCP-47-like language code (`en`, `pt-BR`, `es-419`). */
export const LanguageCode = Schema.String.pipe(Schema.pattern(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/), Schema.annotations({ description: "language code (BCP 47 style)" }))

/** The transcript payload; `geo` extends the spec (refused until geo routing exists). */
export const TranscriptPayload = Schema.Struct({
  video_id: VideoId,
  language: Schema.optionalWith(LanguageCode, { default: () => "en" }),
  include_timestamps: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  geo: Schema.optionalWith(GeoField, { default: () => null })
}).annotations({ identifier: "TranscriptPayload" })
export type TranscriptPayload = typeof TranscriptPayload.Type

/** One transcript entry; `start` (seconds) is present only with `include_timestamps`. */
export const TranscriptEntry = Schema.Struct({
  start: Schema.optional(Schema.Number),
  text: Schema.String
})

/** The spec's result plus `language`, `is_generated` and `translated` (which track was used). */
export const TranscriptResult = Schema.Struct({
  video_id: Schema.String,
  title: Schema.String,
  duration_seconds: Schema.Int,
  transcript: Schema.Array(TranscriptEntry),
  full_text: Schema.String,
  language: Schema.String,
  is_generated: Schema.Boolean,
  translated: Schema.Boolean
}).annotations({ identifier: "TranscriptResult" })
export type TranscriptResult = typeof TranscriptResult.Type

/** The chosen track and, for a translation, the target language. */
export interface TrackChoice {
  readonly track: CaptionTrack
  readonly tlang: string | null
}

const base = (code: string) => code.toLowerCase().split("-")[0]!

/**
 * Picks a track for `language` following the module's documented order. `null` only when the
 * video has no tracks at all.
 */
export const chooseTrack = (tracks: ReadonlyArray<CaptionTrack>, translationLanguages: ReadonlyArray<string>, language: string): TrackChoice | null => {
  if (tracks.length === 0) return null
  const want = language.toLowerCase()
  const ordered = [...tracks.filter((t) => !t.generated), ...tracks.filter((t) => t.generated)]
  const exact = ordered.find((t) => t.languageCode.toLowerCase() === want)
  if (exact) return { track: exact, tlang: null }
  const sameBase = ordered.find((t) => base(t.languageCode) === base(want))
  if (sameBase) return { track: sameBase, tlang: null }
  const canTranslate = translationLanguages.find((l) => l.toLowerCase() === want) ?? translationLanguages.find((l) => base(l) === base(want))
  const translatable = ordered.find((t) => t.translatable)
  if (canTranslate && translatable) return { track: translatable, tlang: canTranslate }
  return { track: ordered[0]!, tlang: null }
}

/**
 * Reads the transcript of one video: the watch page's API key, the player's caption tracks, the
 * chosen track's timedtext. Rejects with `JobFailure` (no captions: REMOTE_ERROR, not retried).
 */
export const readTranscript = async (
  client: YouTubeClient,
  p: { video_id: string; language: string; include_timestamps: boolean; geo?: string | null },
  ctx: { signal: AbortSignal; progress: (percent: number, message?: string) => Promise<void> }
): Promise<TranscriptResult> => {
  const route = await client.fetcher.route(p.geo ?? null, ctx.signal)
  await ctx.progress(5, "reading the watch page")
  const key = await client.apiKey(p.video_id, ctx.signal, route)
  await ctx.progress(30, "asking the player API for caption tracks")
  const info = await client.player(p.video_id, key, ctx.signal, route)
  const choice = chooseTrack(info.tracks, info.translationLanguages, p.language)
  if (!choice) {
    // A property of the video, not a transient failure: never retried.
    throw new JobFailure("REMOTE_ERROR", `video ${p.video_id} has no captions (transcripts are disabled or none exist)`, false)
  }
  await ctx.progress(60, `fetching the ${choice.track.languageCode}${choice.track.generated ? " (generated)" : ""} track${choice.tlang ? ` translated to ${choice.tlang}` : ""}`)
  const cues = await client.timedText(choice.track, choice.tlang, ctx.signal, route)
  await ctx.progress(100, `${cues.length} caption lines`)
  return {
    video_id: p.video_id,
    title: info.title,
    duration_seconds: info.lengthSeconds,
    transcript: cues.map((c) => (p.include_timestamps ? { start: Math.round(c.start * 1000) / 1000, text: c.text } : { text: c.text })),
    full_text: cues.map((c) => c.text).join(" "),
    language: choice.tlang ?? choice.track.languageCode,
    is_generated: choice.track.generated,
    translated: choice.tlang !== null
  }
}

/** Builds the `transcript` job type over `client`. */
export const transcriptJob = (client: YouTubeClient): JobType<TranscriptPayload, TranscriptResult> => ({
  id: "transcript",
  description: "YouTube transcript extraction via the InnerTube player API's caption tracks and the timedtext document.",
  payload: TranscriptPayload,
  result: TranscriptResult,
  handler: (p, ctx) => readTranscript(client, p, ctx)
})
