/**
 * Raw HTTP helpers for tests of the kernel's limits: requests `fetch` cannot make (a declared
 * Content-Length far beyond what is sent, bodies streamed until the server answers, oversized
 * heads, requests left unfinished), over `node:http` / `node:net`.
 */
import * as http from "node:http"
import * as net from "node:net"

/** A response as read: status, headers, body text. */
export interface RawResponse {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
}

/**
 * Sends `bytes` of `fill` to `url` in 64 KiB chunks (chunked transfer coding when `chunked`,
 * else with a Content-Length of `bytes`), on a plain socket, writing only while the server has
 * not answered: an early answer (413) stops the upload and is read even when the server then
 * closes on the rest, as a careful client would read it. Resolves with the answer.
 */
export const upload = (url: string, bytes: number, o: { method?: string; chunked?: boolean; fill?: string; headers?: Record<string, string> } = {}): Promise<RawResponse> =>
  new Promise((resolve, reject) => {
    const u = new URL(url)
    const socket = net.connect(Number(u.port), u.hostname)
    const headers: Record<string, string> = { host: u.host, "content-type": "application/json", ...o.headers, ...(o.chunked ? { "transfer-encoding": "chunked" } : { "content-length": String(bytes) }), connection: "close" }
    let got = Buffer.alloc(0)
    let answered = false
    let sent = 0
    const chunk = Buffer.alloc(64 * 1024, o.fill ?? "a")
    const finish = () => {
      const text = got.toString("utf8")
      const split = text.indexOf("\r\n\r\n")
      if (split < 0) return reject(new Error(`no answer (${text.slice(0, 80)})`))
      const [statusLine, ...lines] = text.slice(0, split).split("\r\n")
      const h: http.IncomingHttpHeaders = {}
      for (const l of lines) {
        const i = l.indexOf(":")
        h[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim()
      }
      let body = text.slice(split + 4)
      if (/chunked/i.test(String(h["transfer-encoding"] ?? ""))) body = dechunk(body)
      resolve({ status: Number(statusLine!.split(" ")[1]), headers: h, body })
    }
    socket.on("data", (d: Buffer) => {
      answered = true
      got = Buffer.concat([got, d])
    })
    socket.on("close", finish)
    // The server closing on an upload it refused is expected once it has answered.
    socket.on("error", () => undefined)
    const pump = () => {
      while (!answered && sent < bytes && !socket.destroyed) {
        const n = Math.min(chunk.length, bytes - sent)
        sent += n
        const data = n === chunk.length ? chunk : chunk.subarray(0, n)
        const ok = socket.write(o.chunked ? Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), data, Buffer.from("\r\n")]) : data)
        if (!ok) return void socket.once("drain", pump)
      }
      if (!answered && o.chunked && !socket.destroyed) socket.write("0\r\n\r\n")
    }
    socket.write(`${o.method ?? "POST"} ${u.pathname}${u.search} HTTP/1.1\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join("\r\n")}\r\n\r\n`)
    pump()
  })

/** The payload of a chunked HTTP/1.1 body. */
const dechunk = (text: string): string => {
  let out = ""
  let rest = text
  for (;;) {
    const eol = rest.indexOf("\r\n")
    const size = parseInt(rest.slice(0, eol), 16)
    if (!(size > 0)) return out
    out += rest.slice(eol + 2, eol + 2 + size)
    rest = rest.slice(eol + 2 + size + 2)
  }
}

/**
 * Writes `head` (and `body`) on a plain socket and resolves with everything the server sent
 * before closing (or after `waitMs`). For heads Node's client refuses to build and for requests
 * deliberately left incomplete.
 */
export const rawExchange = (url: string, head: string, body = "", waitMs = 10_000): Promise<string> =>
  new Promise((resolve) => {
    const u = new URL(url)
    const socket = net.connect(Number(u.port), u.hostname)
    let got = ""
    const done = () => {
      clearTimeout(t)
      socket.destroy()
      resolve(got)
    }
    const t = setTimeout(done, waitMs)
    socket.setEncoding("utf8")
    socket.on("data", (d) => (got += d))
    socket.on("close", done)
    socket.on("error", done)
    socket.write(head + body)
  })

/** The status code and JSON body of a raw HTTP/1.1 answer (`rawExchange`'s text). */
export const parseRaw = (text: string): { status: number; json: unknown } => {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)
  const body = text.slice(text.indexOf("\r\n\r\n") + 4)
  let json: unknown
  try {
    json = JSON.parse(body)
  } catch {
    json = body
  }
  return { status, json }
}
