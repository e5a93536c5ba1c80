/**
 * Reading a server-sent events stream (WHATWG HTML, "Server-sent events"): the client side the
 * CLI's commands share (the gateway's streamed chat, the research client's job events).
 */

/** One event: its `event:` name (null when absent) and its `data:` lines joined with "\n". */
export interface ServerSentEvent {
  readonly event: string | null
  readonly data: string
}

/**
 * The events of an SSE response body, in order, as bytes arrive. Comment lines (`: keep-alive`)
 * and events without data are skipped; a final event without its blank line is dropped, as the
 * standard says.
 */
export async function* serverSentEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder()
  let buffer = ""
  for await (const bytes of body) {
    buffer += decoder.decode(bytes, { stream: true }).replace(/\r\n?/g, "\n")
    let cut: number
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const lines = buffer.slice(0, cut).split("\n")
      buffer = buffer.slice(cut + 2)
      const field = (name: string) => lines.filter((l) => l.startsWith(`${name}:`)).map((l) => l.slice(name.length + 1).replace(/^ /, ""))
      const data = field("data")
      if (data.length === 0) continue
      yield { event: field("event")[0] ?? null, data: data.join("\n") }
    }
  }
}
