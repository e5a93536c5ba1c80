/**
 * A listener's Node HTTP server: the request limits (`Limits.ts`) enforced before anything is
 * read, routes implemented `raw` answered on the raw Node path (see `Route.raw`), routes with a
 * `fast` pre-handler offered each request there first (see `Route.fast`), and what they decline
 * continued into the Effect app of `Server.ts` with its body replayed.
 *
 * Shutdown (scope close): the listener stops accepting, idle keep-alive sockets are closed,
 * in-flight requests get `graceMs` to finish, then every socket is closed.
 */
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as LogLevel from "effect/LogLevel"
import * as ParseResult from "effect/ParseResult"
import * as Runtime from "effect/Runtime"
import * as http from "node:http"
import * as net from "node:net"
import { Readable } from "node:stream"
import { defaultLimits, jsonDeeperThan, limitBody, type ListenerLimits, limitsFor, tooDeep } from "./Limits.ts"
import type { ListenerInfo } from "./Plugin.ts"
import type { FastReply, FastRequest, Reply, Route } from "./Route.ts"
import { encodeJson, type MountedRoute, requestLog, responseEncoders } from "./Server.ts"

interface FastEntry {
  readonly route: Route
  readonly segments: ReadonlyArray<string>
  readonly encoders: ReturnType<typeof responseEncoders>
}

const INTERNAL_ERROR: FastReply = { status: 500, headers: { "content-type": "application/json" }, body: '{"error":"internal error"}' }

/** A raw route's reply as bytes to send, encoded like a handler's (`encodeJson`). */
const encodeReply = (entry: FastEntry, reply: Reply, onFailure: (error: unknown) => void): FastReply => {
  const encode = entry.encoders.get(reply.status)
  let body = reply.body
  if (encode) {
    const encoded = encode(body)
    if (Either.isLeft(encoded)) {
      onFailure(new Error(`response ${reply.status} of ${entry.route.method} ${entry.route.path} does not match its declared schema: ${ParseResult.TreeFormatter.formatErrorSync(encoded.left)}`))
      return INTERNAL_ERROR
    }
    body = encoded.right
  }
  return { status: reply.status, headers: { "content-type": "application/json", ...reply.headers }, body: JSON.stringify(body) }
}

/** Matches `/a/:b/c` style paths, `*` as the last segment matching the rest. */
const matchSegments = (segments: ReadonlyArray<string>, path: string): Record<string, string> | undefined => {
  const parts = path.split("/")
  const rest = segments[segments.length - 1] === "*"
  if (rest ? parts.length < segments.length : parts.length !== segments.length) return undefined
  const params: Record<string, string> = {}
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!
    if (seg === "*" && i === segments.length - 1) break
    if (seg.startsWith(":")) {
      if (parts[i] === "") return undefined
      try {
        params[seg.slice(1)] = decodeURIComponent(parts[i]!)
      } catch {
        return undefined // a malformed %-escape names no resource
      }
    } else if (seg !== parts[i]) return undefined
  }
  return params
}

/** `body` dressed as `req` (what the Effect server reads of an IncomingMessage), to replay a read body. */
const withRequestOf = (req: http.IncomingMessage, body: Readable): http.IncomingMessage =>
  Object.assign(body, {
    headers: req.headers,
    rawHeaders: req.rawHeaders,
    method: req.method,
    url: req.url,
    httpVersion: req.httpVersion,
    socket: req.socket,
    connection: req.socket
  }) as unknown as http.IncomingMessage

/** How long a refused connection keeps draining what the client still sends (see `lingerOnClose`). */
const LINGER_MS = 2_000

/**
 * Closes `req`'s connection the way nginx's lingering close does: closing a socket with unread
 * request bytes makes the kernel send RST, and a client receiving RST may drop the refusal it has
 * not read yet. So after the answer the write side is shut (FIN), what still arrives is read and
 * discarded, and the socket is destroyed when the client closes or after `LINGER_MS`.
 */
const lingerOnClose = (req: http.IncomingMessage) => {
  const socket = req.socket as import("node:net").Socket & { destroySoon?: () => void }
  // Node's server calls destroySoon once a `connection: close` answer is finished.
  socket.destroySoon = function () {
    this.end()
    this.resume()
    const t = setTimeout(() => this.destroy(), LINGER_MS)
    t.unref()
    this.once("end", () => {
      clearTimeout(t)
      this.destroy()
    })
  }
  req.resume() // the body is discarded, never buffered
}

/** Sends a limit refusal (`{error, limit, max}`); `close` ends the connection (an unread body follows). */
const refuse = (req: http.IncomingMessage, res: http.ServerResponse, status: number, error: string, limit: string, max: number, close: boolean, headers: Record<string, string> = {}) => {
  if (res.headersSent) return
  const body = limitBody(error, limit, max)
  if (close) lingerOnClose(req)
  res.writeHead(status, { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)), ...(close ? { connection: "close" } : {}), ...headers })
  res.end(body)
}

interface RouteEntry extends FastEntry {
  readonly bodyBytes: number
  readonly jsonDepth: number
}

/**
 * The raw Node request handler of a listener. Every request passes the listener's limits first
 * (requests in flight, body bytes by Content-Length, or counted while buffering a chunked body);
 * requests to a route with a `fast` pre-handler or a `raw` implementation have their body
 * buffered and offered to it; everything else (and every request `fast` declines, with its body
 * replayed) goes to the Effect app.
 */
const dispatcher = (
  routes: ReadonlyArray<MountedRoute>,
  limits: ListenerLimits,
  effectHandler: (req: http.IncomingMessage, res: http.ServerResponse) => void,
  logFast: (method: string, path: string, status: number, ms: number) => void,
  onFastFailure: (error: unknown) => void
) => {
  const byMethod = new Map<string, Array<RouteEntry>>()
  for (const { route } of routes) {
    const list = byMethod.get(route.method) ?? []
    list.push({ route, segments: route.path.split("/"), encoders: responseEncoders(route), ...limitsFor(limits, route.method, route.path, route.limits) })
    byMethod.set(route.method, list)
  }
  const fallback = limitsFor(limits, "", "")
  let inFlight = 0
  return (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (inFlight >= limits.max_connections) {
      return refuse(req, res, 503, `more than ${limits.max_connections} requests in flight on this listener`, "max_connections", limits.max_connections, true, { "retry-after": "1" })
    }
    inFlight++
    res.once("close", () => inFlight--)
    const url = req.url ?? "/"
    const q = url.indexOf("?")
    const path = q < 0 ? url : url.slice(0, q)
    let entry: RouteEntry | undefined
    let params: Record<string, string> | undefined
    for (const c of byMethod.get(req.method ?? "") ?? []) {
      params = matchSegments(c.segments, path)
      if (params) {
        entry = c
        break
      }
    }
    const { bodyBytes, jsonDepth } = entry ?? fallback
    const length = req.headers["content-length"]
    const declared = length === undefined ? undefined : Number(length)
    const tooLarge = () => refuse(req, res, 413, `request body exceeds ${bodyBytes} bytes`, "body_bytes", bodyBytes, true)
    if (declared !== undefined && declared > bodyBytes) return tooLarge()
    const offered = entry && (entry.route.fast || entry.route.raw) ? entry : undefined
    // A raw route is answered here whatever its size (within body_bytes); a fast pre-handler only sees small bodies.
    const fastLimit = offered?.route.raw ? Infinity : offered?.route.fastMaxBody ?? 1024 * 1024
    // A chunked body has no length to check up front: it is buffered, counted, and replayed.
    const chunked = declared === undefined && req.headers["transfer-encoding"] !== undefined
    if (!chunked && (!offered || (declared ?? 0) > fastLimit)) return effectHandler(req, res)
    const start = performance.now()
    const chunks: Array<Buffer> = []
    let size = 0
    let refused = false
    const onData = (c: Buffer) => {
      size += c.length
      if (size > bodyBytes) {
        refused = true
        req.removeListener("data", onData)
        req.removeListener("end", onEnd)
        chunks.length = 0
        tooLarge()
        return
      }
      chunks.push(c)
    }
    const onEnd = () => {
      if (refused) return
      const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)
      const replay = () => effectHandler(withRequestOf(req, Readable.from(raw.length ? [raw] : [])), res)
      if (!offered || raw.length > fastLimit) return replay()
      let json: unknown
      if (raw.length > 0) {
        const text = raw.toString("utf8")
        if (jsonDeeperThan(text, jsonDepth)) {
          const deep = tooDeep(jsonDepth)
          return refuse(req, res, 400, deep.error, deep.limit, deep.max, false)
        }
        try {
          json = JSON.parse(text)
        } catch {
          json = undefined
        }
      }
      const send = (reply: FastReply) => {
        // With a length the answer goes out in one write (writeHead without one means chunked).
        res.setHeader("content-length", Buffer.byteLength(reply.body))
        res.writeHead(reply.status, reply.headers)
        res.end(reply.body)
        logFast(req.method!, path, reply.status, Math.round((performance.now() - start) * 100) / 100)
      }
      const request: FastRequest = { method: req.method!, path, headers: req.headers, params: params!, json, rawBody: raw, remoteAddress: req.socket.remoteAddress }
      const route = offered.route
      if (route.raw) {
        const failed = (error: unknown) => {
          onFastFailure(error)
          send(INTERNAL_ERROR)
        }
        let answer: ReturnType<NonNullable<Route["raw"]>>
        try {
          answer = route.raw(request)
        } catch (error) {
          return failed(error)
        }
        if (!(answer instanceof Promise)) return send(encodeReply(offered, answer, onFastFailure))
        answer.then((r) => send(encodeReply(offered, r, onFastFailure)), failed)
        return
      }
      let outcome: ReturnType<NonNullable<Route["fast"]>>
      try {
        outcome = route.fast!(request)
      } catch {
        return replay()
      }
      if (outcome === undefined) return replay()
      if (!(outcome instanceof Promise)) return send(outcome)
      outcome.then(
        (reply) => (reply ? send(reply) : replay()),
        (error) => {
          onFastFailure(error)
          send(INTERNAL_ERROR)
        }
      )
    }
    req.on("data", onData)
    req.on("end", onEnd)
  }
}

/**
 * Node's own refusals (a request head over `header_bytes`, a request not arrived within
 * `request_timeout_s`, unparsable HTTP) as JSON bodies naming the limit; the socket is closed.
 */
const onClientError = (limits: ListenerLimits) => (error: Error & { code?: string }, socket: import("node:stream").Duplex) => {
  const send = (status: number, reason: string, body: string) => {
    if (socket.writable && !(socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent) {
      socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`)
    }
    socket.destroy()
  }
  if (error.code === "HPE_HEADER_OVERFLOW") {
    return send(431, "Request Header Fields Too Large", limitBody(`request head exceeds ${limits.header_bytes} bytes`, "header_bytes", limits.header_bytes))
  }
  if (error.code === "ERR_HTTP_REQUEST_TIMEOUT") {
    return send(408, "Request Timeout", limitBody(`request did not arrive within ${limits.request_timeout_s} s`, "request_timeout_s", limits.request_timeout_s))
  }
  if (error.code === "ECONNRESET" || !socket.writable) return socket.destroy()
  send(400, "Bad Request", JSON.stringify({ error: `malformed HTTP request (${error.code ?? error.message})` }))
}

/**
 * Serves `app` on `host:port` within the current scope. Returns the bound address
 * (`port: 0` resolves to the real port). Fails with `ServeError` when the port is taken.
 */
export const serveListener = (
  name: string,
  host: string,
  port: number,
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest | any>,
  graceMs: number,
  routes: ReadonlyArray<MountedRoute> = [],
  limits: ListenerLimits = defaultLimits
) =>
  Effect.gen(function* () {
    const requestTimeout = Math.round(limits.request_timeout_s * 1000)
    const server = http.createServer({
      maxHeaderSize: limits.header_bytes,
      requestTimeout,
      headersTimeout: Math.min(60_000, requestTimeout),
      // Node checks the timeouts on this interval (30 s by default): 408s would come late.
      connectionsCheckingInterval: Math.min(1000, requestTimeout)
    })
    server.on("clientError", onClientError(limits))
    const httpServer = yield* NodeHttpServer.make(() => server, { port, host })
    // Runs before make's own finalizer (LIFO): bound the wait for in-flight requests.
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        // Keep-alive sockets become idle as in-flight requests finish; close them as they do.
        const idle = setInterval(() => server.closeIdleConnections(), 25)
        const hard = setTimeout(() => server.closeAllConnections(), graceMs)
        idle.unref()
        hard.unref()
        server.closeIdleConnections()
        server.once("close", () => {
          clearInterval(idle)
          clearTimeout(hard)
        })
      })
    )
    const effectHandler = yield* NodeHttpServer.makeHandler(app as any, requestLog as any).pipe(
      // No span exporter is configured: a span per request would be pure overhead.
      HttpMiddleware.withTracerDisabledWhenEffect(() => true),
      Effect.provide(NodeHttpServer.layerContext)
    )
    const runtime = yield* Effect.runtime<never>()
    const infoEnabled = LogLevel.greaterThanEqual(LogLevel.Info, FiberRefs.getOrDefault(runtime.fiberRefs, FiberRef.currentMinimumLogLevel))
    const logFast = (method: string, path: string, status: number, ms: number) => {
      if (infoEnabled) {
        Runtime.runSync(runtime)(Effect.logInfo("request").pipe(Effect.annotateLogs({ method, path, status, duration_ms: ms })))
      }
    }
    const onFastFailure = (error: unknown) => Runtime.runSync(runtime)(Effect.logError("raw route or fast pre-handler failed", error))
    const handler = dispatcher(routes, limits, effectHandler as (req: http.IncomingMessage, res: http.ServerResponse) => void, logFast, onFastFailure)
    server.on("request", handler)
    yield* Effect.addFinalizer(() => Effect.sync(() => server.off("request", handler)))
    const address = httpServer.address
    const boundPort = address._tag === "TcpAddress" ? address.port : port
    const urlHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host
    const info: ListenerInfo = { name, host, port: boundPort, url: `http://${urlHost}:${boundPort}` }
    return info
  })

/**
 * A free TCP port on 127.0.0.1 (bound, then released), for a listener or helper process started
 * with an explicit port. Rejects when no port can be bound.
 */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once("error", reject)
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => resolve(port))
    })
  })
