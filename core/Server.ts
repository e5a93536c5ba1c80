/**
 * Listeners: compiles the routes mounted on one listener into an `HttpApp`, adds the listener's
 * `/openapi.json`, request logging and error rendering, and serves it on a Node HTTP server.
 *
 * Shutdown (scope close): the listener stops accepting, idle keep-alive sockets are closed,
 * in-flight requests get `graceMs` to finish, then every socket is closed.
 */
import { HttpApiSchema, HttpMiddleware, HttpRouter, HttpServer, HttpServerRequest, HttpServerRespondable, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Cause, Effect, Either, ParseResult, Schema } from "effect"
import * as http from "node:http"
import { makeOpenApi } from "./OpenApi.ts"
import type { ListenerInfo } from "./Plugin.ts"
import type { InvalidLocation, Route, ValidationIssue } from "./Route.ts"
import { defaultInvalid } from "./Route.ts"

/** A route as mounted: with the plugin that contributed it. */
export interface MountedRoute {
  readonly plugin: string
  readonly route: Route
}

const issuesOf = (location: InvalidLocation, error: ParseResult.ParseError): ReadonlyArray<ValidationIssue> =>
  ParseResult.ArrayFormatter.formatErrorSync(error).map((i) => ({
    loc: [location, ...i.path.map((p) => (typeof p === "number" ? p : String(p)))],
    msg: i.message,
    type: i._tag === "Missing" ? "missing" : i._tag === "Unexpected" ? "extra_forbidden" : i._tag === "Type" ? "type_error" : "value_error"
  }))

const decodeOptions = { errors: "all", onExcessProperty: "ignore" } as const

/** Renders a handler failure: Respondable, status-annotated Schema error, or a logged 500. */
export const renderError = (error: unknown): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
  if (HttpServerRespondable.isRespondable(error)) return HttpServerRespondable.toResponse(error)
  const ctor = (error as { constructor?: { ast?: unknown } } | null)?.constructor
  if (ctor && Schema.isSchema(ctor)) {
    const status = HttpApiSchema.getStatusErrorAST(ctor.ast)
    const encoded = Schema.encodeUnknownEither(ctor as Schema.Schema<unknown, unknown>)(error)
    const body = Either.isRight(encoded) ? encoded.right : { error: String((error as Error).message ?? error) }
    return Effect.succeed(HttpServerResponse.unsafeJson(body, { status }))
  }
  return Effect.logError("unhandled route failure", error).pipe(
    Effect.as(HttpServerResponse.unsafeJson({ error: "internal error" }, { status: 500 }))
  )
}

const toResponse = (value: unknown): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.isServerResponse(value) ? value : HttpServerResponse.unsafeJson(value)

/** Compiles one route into a router handler: decode, call, render. */
const routeHandler = (route: Route) => {
  const onInvalid = route.onInvalid ?? defaultInvalid
  const decodeBody = route.body ? Schema.decodeUnknownEither(route.body) : undefined
  const decodeQuery = route.query ? Schema.decodeUnknownEither(route.query) : undefined
  const decodeParams = route.params ? Schema.decodeUnknownEither(route.params) : undefined
  return Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const invalid = (location: InvalidLocation, message: string, issues: ReadonlyArray<ValidationIssue>) =>
      onInvalid({ location, message, issues, request })
    let params: unknown = yield* HttpRouter.params
    if (decodeParams) {
      const r = decodeParams(params, decodeOptions)
      if (Either.isLeft(r)) return invalid("path", "invalid path parameters", issuesOf("path", r.left))
      params = r.right
    }
    let query: unknown = Object.fromEntries(new URLSearchParams(request.url.split("?")[1] ?? ""))
    if (decodeQuery) {
      const r = decodeQuery(query, decodeOptions)
      if (Either.isLeft(r)) return invalid("query", "invalid query parameters", issuesOf("query", r.left))
      query = r.right
    }
    let body: unknown = undefined
    if (decodeBody) {
      const text = yield* Effect.either(request.text)
      if (Either.isLeft(text)) return invalid("json", "request body could not be read", [])
      let json: unknown
      try {
        json = JSON.parse(text.right)
      } catch (e) {
        return invalid("json", `request body is not valid JSON: ${(e as Error).message}`, [])
      }
      const r = decodeBody(json, decodeOptions)
      if (Either.isLeft(r)) return invalid("body", "request body failed validation", issuesOf("body", r.left))
      body = r.right
    }
    const out = yield* Effect.either(route.handler({ body, query, params, request }))
    return Either.isRight(out) ? toResponse(out.right) : yield* renderError(out.left)
  })
}

/** Builds the `HttpApp` of one listener from its mounted routes (plus `/openapi.json`). */
export const makeApp = (listener: string, routes: ReadonlyArray<MountedRoute>, info: { title: string; version: string }) => {
  const openapi = makeOpenApi(listener, routes, info)
  let router = HttpRouter.empty.pipe(
    HttpRouter.get("/openapi.json", Effect.succeed(HttpServerResponse.unsafeJson(openapi)))
  )
  for (const { route } of routes) {
    router = HttpRouter.route(route.method)(route.path as HttpRouter.PathInput, routeHandler(route))(router)
  }
  return router.pipe(
    Effect.catchTag("RouteNotFound", (e) =>
      Effect.succeed(HttpServerResponse.unsafeJson({ error: `no route for ${e.request.method} ${e.request.url.split("?")[0]}` }, { status: 404 }))
    ),
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Effect.failCause(cause)
        : Effect.logError("request failed", cause).pipe(Effect.as(HttpServerResponse.unsafeJson({ error: "internal error" }, { status: 500 })))
    )
  )
}

/** One log line per request: method, path, status, duration in ms. */
const requestLog = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest>) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const start = performance.now()
    const exit = yield* Effect.exit(app)
    const ms = Math.round((performance.now() - start) * 100) / 100
    const status = exit._tag === "Success" ? exit.value.status : Cause.isInterruptedOnly(exit.cause) ? 499 : 500
    yield* Effect.logInfo("request").pipe(
      Effect.annotateLogs({ method: request.method, path: request.url.split("?")[0], status, duration_ms: ms })
    )
    return yield* exit
  })

/**
 * Serves `app` on `host:port` within the current scope. Returns the bound address
 * (`port: 0` resolves to the real port). Fails with `ServeError` when the port is taken.
 */
export const serveListener = (
  name: string,
  host: string,
  port: number,
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest | any>,
  graceMs: number
) =>
  Effect.gen(function* () {
    const server = http.createServer()
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
    yield* HttpServer.serveEffect(app as any, requestLog as any).pipe(
      // No span exporter is configured: a span per request would be pure overhead.
      HttpMiddleware.withTracerDisabledWhenEffect(() => true),
      Effect.provideService(HttpServer.HttpServer, httpServer),
      Effect.provide(NodeHttpServer.layerContext)
    )
    const address = httpServer.address
    const boundPort = address._tag === "TcpAddress" ? address.port : port
    const urlHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host
    const info: ListenerInfo = { name, host, port: boundPort, url: `http://${urlHost}:${boundPort}` }
    return info
  })

