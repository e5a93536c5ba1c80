import * as Schema from "effect/Schema"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { transcriptOp, youtubeSearchOp } from "../../../plugins/job-transcript/GraphOps.ts"
import { makeYouTubeClient, TranscriptConfig } from "../../../plugins/job-transcript/plugin.ts"
import { chooseTrack, transcriptJob, type TranscriptPayload } from "../../../plugins/job-transcript/Transcript.ts"
import { parseTimedText } from "../../../plugins/job-transcript/YouTube.ts"
import { expectJobFailure, jobContexts } from "../jobs/net/jobContext.ts"
import { transcriptConfigFor, type YouTubeFixture, youtubeServer } from "../../fixtures/youtube-server.ts"

let fx: YouTubeFixture
let client: ReturnType<typeof makeYouTubeClient>
let job: ReturnType<typeof transcriptJob>
const contexts = jobContexts()

beforeAll(async () => {
  fx = await youtubeServer()
  client = makeYouTubeClient(Schema.decodeUnknownSync(TranscriptConfig)(transcriptConfigFor(fx.url)))
  job = transcriptJob(client)
})
afterAll(() => fx.close())
afterEach(() => {
  fx.reset()
  contexts.cleanup()
})

const ctx = () => contexts.make()
const decode = (u: unknown) => Schema.decodeUnknownSync(job.payload)(u) as TranscriptPayload
const run = (payload: unknown, c = ctx()) => job.handler(decode(payload), c)
const failure = expectJobFailure

describe("transcript", () => {
  it("gets the manual English track through the player API and timedtext, with timestamps", async () => {
    const r = await run({ video_id: "okVideo0001" })
    expect(r).toMatchObject({ video_id: "okVideo0001", title: "Fixture video", duration_seconds: 213, language: "en", is_generated: false, translated: false })
    expect(r.transcript).toEqual([
      { start: 0, text: "Hey there & welcome" },
      { start: 1.54, text: "this is a test" },
      { start: 3.64, text: "it's multi line" }
    ])
    expect(r.full_text).toBe("Hey there & welcome this is a test it's multi line")
    // The protocol as spoken: watch page, then InnerTube player, then timedtext without fmt=srv3.
    expect(fx.log.slice(-3).map((l) => l.split("?")[0])).toEqual(["GET /watch", "POST /youtubei/v1/player", "GET /api/timedtext"])
    expect(fx.log.at(-1)).not.toMatch(/fmt=/)
  })

  it("leaves out timestamps on request and follows the language fallback", async () => {
    const plain = await run({ video_id: "okVideo0001", language: "de", include_timestamps: false })
    expect(plain.transcript).toEqual([{ text: "Hallo zusammen" }, { text: "das ist ein Test" }])
    expect(plain.language).toBe("de")
    expect((await run({ video_id: "okVideo0001", language: "en-GB" })).language).toBe("en") // same base language
    const fr = await run({ video_id: "okVideo0001", language: "fr" }) // machine translation
    expect(fr).toMatchObject({ language: "fr", translated: true, full_text: "Salut & bienvenue" })
    expect(fx.log.at(-1)).toMatch(/tlang=fr/)
    expect(await run({ video_id: "asrOnly0001", language: "en" })).toMatchObject({ language: "en-US", is_generated: true, full_text: "generated words" })
    expect(await run({ video_id: "jaOnly00001", language: "en" })).toMatchObject({ language: "ja", full_text: "こんにちは" }) // default track
  })

  it("answers the consent interstitial with its cookie", async () => {
    expect((await run({ video_id: "consentVid1" })).title).toBe("Behind consent")
  })

  it("refuses bad input", async () => {
    expect(() => decode({})).toThrow()
    expect(() => decode({ video_id: "short" })).toThrow()
    expect(() => decode({ video_id: "okVideo0001", language: "english please" })).toThrow()
    expect(() => decode({ video_id: "okVideo0001", include_timestamps: "yes" })).toThrow()
    const geo = await failure(run({ video_id: "okVideo0001", geo: "de" }))
    expect([geo.kind, geo.message]).toEqual(["VALIDATION_ERROR", expect.stringMatching(/geo routing is not configured/)])
  })

  it("fails clearly, without retry, for a video without captions or an unavailable one", async () => {
    const none = await failure(run({ video_id: "noCaptions1" }))
    expect([none.kind, none.retryable]).toEqual(["REMOTE_ERROR", false])
    expect(none.message).toBe("video noCaptions1 has no captions (transcripts are disabled or none exist)")
    const gone = await failure(run({ video_id: "unavailabl1" }))
    expect([gone.kind, gone.retryable]).toEqual(["REMOTE_ERROR", false])
    expect(gone.message).toMatch(/unavailable/)
  })

  it("retries a 429 after backoff; 404 on the track is REMOTE_ERROR; a silent player is TIMEOUT", async () => {
    expect((await run({ video_id: "rateLimit01" })).title).toBe("Popular")
    expect(fx.log.filter((l) => l.startsWith("POST /youtubei/v1/player")).length).toBeGreaterThanOrEqual(2)
    const nf = await failure(run({ video_id: "missingTrk1" }))
    expect([nf.kind, nf.message]).toEqual(["REMOTE_ERROR", expect.stringMatching(/timedtext.*HTTP 404/)])
    expect((await failure(run({ video_id: "slowVideo01" }))).kind).toBe("TIMEOUT")
  })

  it("cancels promptly", async () => {
    const c = ctx()
    setTimeout(() => c.controller.abort(), 100)
    const t0 = Date.now()
    expect((await failure(run({ video_id: "slowVideo01" }, c))).kind).toBe("CANCELLED")
    expect(Date.now() - t0).toBeLessThan(800)
  })

  it("parses srv3 documents and rejects non-timedtext bodies", () => {
    expect(parseTimedText(`<timedtext format="3"><body><p t="1500" d="900">a <s>b</s></p></body></timedtext>`)).toEqual([{ start: 1.5, duration: 0.9, text: "a b" }])
    expect(() => parseTimedText("<html>blocked</html>")).toThrow(/not timedtext/)
    expect(chooseTrack([], [], "en")).toBeNull()
  })
})

describe("youtube_search", () => {
  it("returns videos found anywhere in the InnerTube search answer", async () => {
    const op = youtubeSearchOp(client)
    const hits = await op.handler(Schema.decodeUnknownSync(op.params)({ max_results: 5 }), "cats", ctx())
    expect(hits.map((h) => h.video_id)).toEqual(["okVideo0001", "asrOnly0001", "jaOnly00001"])
    expect(hits[0]).toEqual({ video_id: "okVideo0001", url: `${fx.url}/watch?v=okVideo0001`, title: "cats explained", channel: "Fixture Channel", duration_seconds: 213 })
    expect(hits[2]!.duration_seconds).toBe(3723)
    await expect(op.handler(Schema.decodeUnknownSync(op.params)({}), "", ctx())).rejects.toThrow(/needs a query/)
  })
})

describe("transcript (graph operation)", () => {
  it("reads the transcripts of searched videos as texts, skipping a video without captions", async () => {
    const search = youtubeSearchOp(client)
    const hits = await search.handler(Schema.decodeUnknownSync(search.params)({ max_results: 5 }), "cats", ctx())
    const op = transcriptOp(client)
    const c = ctx()
    const docs = await op.handler(Schema.decodeUnknownSync(op.params)({}), [...hits, "noCaptions1"], c)
    expect(docs.map((d) => d.video_id)).toEqual(["okVideo0001", "asrOnly0001", "jaOnly00001"])
    expect(docs[0]).toMatchObject({ url: `${fx.url}/watch?v=okVideo0001`, title: "Fixture video", language: "en" })
    expect(docs[0]!.text.length).toBeGreaterThan(10)
    expect(c.progressLog.at(-1)!.message).toMatch(/noCaptions1: skipped: .*no captions/)
    await expect(op.handler(Schema.decodeUnknownSync(op.params)({}), ["noCaptions1"], ctx())).rejects.toThrow(/no captions/)
  })
})
