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
 * Sends `bytes` of `fill` to `url` in 64 KiB chunks (chunked when `chunked`, else with a
 * Content-Length of `bytes`), writing only while the server has not answered: an early answer
 * (413) stops the upload, as a real client would see it. Resolves with the answer.
 */
export const upload = (url: string, bytes: number, o: { method?: string; chunked?: boolean; fill?: string; headers?: Record<string, string> } = {}): Promise<RawResponse> =>
  new Promise((resolve, reject) => {
    const u = new URL(url)
    const headers: Record<string, string> = { "content-type": "application/json", ...o.headers, ...(o.chunked ? {} : { "content-length": String(bytes) }) }
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: o.method ?? "POST", headers, agent: false })
    let answered = false
    let sent = 0
    const chunk = Buffer.alloc(64 * 1024, o.fill ?? "a")
    const pump = () => {
      while (!answered && sent < bytes) {
        const n = Math.min(chunk.length, bytes - sent)
        sent += n
        if (!req.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void req.once("drain", pump)
      }
      if (!answered) req.end()
    }
    req.on("response", (res) => {
      answered = true
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (d) => (body += d))
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }))
      res.on("error", () => resolve({ status: res.statusCode!, headers: res.headers, body }))
    })
    // The server closing on an upload it refused is expected once it has answered.
    req.on("error", (e) => (answered ? undefined : reject(e)))
    pump()
  })

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
