/**
 * Raw HTTP helpers for the gateway tests: each call opens its own connection (`agent: false`),
 * so 50 calls really are 50 simultaneous requests, and reports its own latency in ms.
 */
import * as http from "node:http"

/** A finished response: status, lower-cased headers, body text, ms from send to last byte. */
export interface Answer {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly text: string
  readonly ms: number
  json<T = any>(): T
}

/** Sends one request; `body` objects are JSON-encoded. Never rejects on HTTP status. */
export const request = (
  base: string,
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {}
): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const payload = opts.body === undefined ? undefined : typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body)
    const t0 = performance.now()
    const req = http.request(base + path, {
      method,
      agent: false,
      headers: {
        ...(payload !== undefined ? { "content-type": "application/json" } : {}),
        ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
        ...opts.headers
      }
    }, (res) => {
      const parts: Buffer[] = []
      res.on("data", (b: Buffer) => parts.push(b))
      res.on("end", () => {
        const text = Buffer.concat(parts).toString("utf8")
        resolve({ status: res.statusCode!, headers: res.headers, text, ms: performance.now() - t0, json: () => JSON.parse(text) })
      })
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end(payload)
  })

/** Parses an SSE body into its `data:` payloads (`[DONE]` kept as the string). */
export const sseEvents = (text: string): Array<any> =>
  text.split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => {
    const d = e.slice(6)
    return d === "[DONE]" ? d : JSON.parse(d)
  })

/**
 * Opens a streaming request and resolves once the first body bytes arrived; `drop()` then cuts
 * the connection the way a client that goes away does.
 */
export const openStream = (base: string, path: string, token: string, body: unknown): Promise<{ status: number; first: string; drop: () => void }> =>
  new Promise((resolve, reject) => {
    const req = http.request(base + path, {
      method: "POST",
      agent: false,
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` }
    }, (res) => {
      res.once("data", (b: Buffer) => resolve({ status: res.statusCode!, first: b.toString("utf8"), drop: () => req.destroy() }))
      res.on("error", () => undefined)
    })
    req.on("error", (e) => { if (!req.destroyed) reject(e) })
    req.end(JSON.stringify(body))
  })

// The burst client runs in a worker thread: on a 2-core machine the client then has its own
// core instead of queueing behind the server's event loop, as a real remote client would.
const BURST_WORKER = `
const { parentPort, workerData } = require("node:worker_threads")
const http = require("node:http")
const { base, path, token, body, n } = workerData
const agent = new http.Agent({ keepAlive: true, maxSockets: n })
const call = (method, p, payload) => new Promise((resolve, reject) => {
  const t0 = performance.now()
  const req = http.request(base + p, { method, agent, headers: { "content-type": "application/json", authorization: "Bearer " + token } }, (res) => {
    const parts = []
    res.on("data", (b) => parts.push(b))
    res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, text: Buffer.concat(parts).toString("utf8"), ms: performance.now() - t0 }))
  })
  req.on("error", reject)
  req.end(payload)
})
;(async () => {
  // Open and warm the n connections first: the burst measures the gateway, not TCP handshakes.
  await Promise.all(Array.from({ length: n }, () => call("GET", "/status")))
  const payload = JSON.stringify(body)
  const out = await Promise.all(Array.from({ length: n }, () => call("POST", path, payload)))
  agent.destroy()
  parentPort.postMessage(out)
})().catch((e) => parentPort.postMessage({ error: String(e) }))
`

/** Result of one request of a burst. */
export interface BurstAnswer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly text: string
  /** ms from writing the request on a warm keep-alive connection to the last response byte. */
  readonly ms: number
}

/** Sends `n` identical POSTs at the same instant over `n` warm connections, from a worker thread. */
export const burst = async (base: string, path: string, token: string, body: unknown, n: number): Promise<BurstAnswer[]> => {
  const { Worker } = await import("node:worker_threads")
  const worker = new Worker(BURST_WORKER, { eval: true, workerData: { base, path, token, body, n } })
  try {
    const out = await new Promise<any>((resolve, reject) => { worker.once("message", resolve); worker.once("error", reject) })
    if (!Array.isArray(out)) throw new Error(out.error)
    return out
  } finally {
    await worker.terminate()
  }
}

/**
 * A platform.yaml serving only the gateway on an ephemeral port, with bearer `token` and one
 * engine per entry of `engines` (each the inside of a YAML flow map: `id: tiny, kind: upstream, ...`).
 */
export const gatewayYaml = (token: string, engines: ReadonlyArray<string>): string => `
log: { level: error }
listeners:
  - name: gateway
    port: 0
plugins:
  gateway:
    token: ${token}
    engines:
${engines.map((e) => `      - { ${e} }`).join("\n")}
`

/** The OpenAI SDK error a call fails with; fails the test when the call succeeds or fails otherwise. */
export const sdkFailure = async <E extends Error>(call: Promise<unknown>, errorClass: abstract new (...args: never) => E): Promise<E> => {
  try {
    await call
  } catch (e) {
    if (e instanceof errorClass) return e
    throw e
  }
  throw new Error("expected the call to fail")
}
