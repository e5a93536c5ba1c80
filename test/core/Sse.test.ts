import { describe, expect, it } from "vitest"
import { serverSentEvents } from "../../core/Sse.ts"

/** The body as chunks cut at the given byte offsets (events split across reads). */
async function* chunks(text: string, cuts: ReadonlyArray<number>): AsyncGenerator<Uint8Array> {
  const bytes = new TextEncoder().encode(text)
  let at = 0
  for (const c of [...cuts, bytes.length]) {
    yield bytes.slice(at, c)
    at = c
  }
}

describe("serverSentEvents", () => {
  it("events split across reads, comments skipped, multi-line data joined, CRLF, an unfinished last event dropped", async () => {
    const text = ": keep-alive\n\nid: 1\nevent: job\ndata: {\"a\":1}\n\ndata: line one\r\ndata:line two\r\n\r\nevent: end\ndata: x"
    const got = []
    for await (const e of serverSentEvents(chunks(text, [3, 20, 31, 50]))) got.push(e)
    expect(got).toEqual([{ event: "job", data: "{\"a\":1}" }, { event: null, data: "line one\nline two" }])
  })
})
