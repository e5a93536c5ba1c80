/**
 * The Effect side of a listener: compiles the routes mounted on one listener into an `HttpApp`
 * (request decoding by each route's Schemas, responses encoded by the declared ones, errors
 * rendered), adds the listener's `/openapi.json` and request logging. `Listener.ts` serves it.
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerRespondable from "@effect/platform/HttpServerRespondable"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import { makeOpenApi } from "./OpenApi.ts"
import type { InvalidLocation, Route, ValidationIssue } from "./Route.ts"
import { defaultInvalid, isReply } from "./Route.ts"
import { HttpError } from "./HttpError.ts"
import { issuesOf as schemaIssues } from "./Issues.ts"
import { defaultLimits, jsonDeeperThan, type ListenerLimits, limitsFor, tooDeep } from "./Limits.ts"

/** A route as mounted: with the plugin that contributed it. */
export interface MountedRoute {
  readonly plugin: string
  readonly route: Route
}

const issuesOf = (location: InvalidLocation, error: ParseResult.ParseError): ReadonlyArray<ValidationIssue> =>
  schemaIssues(error).map((i) => ({
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

/**
 * The encoder of one response Schema. Extra members are kept: the Schema is checked, the body is
 * not trimmed to it. A Schema without transformations (its encoded form is its type, as for most
 * bodies) is only checked and the body sent as it is, which costs a fifth of an encode that
 * preserves extra members (a Job: about 5 µs instead of 25 µs; the jobs submit pays it per job).
 */
const encoderOf = (schema: Schema.Schema<unknown, unknown>): (body: unknown) => Either.Either<unknown, ParseResult.ParseError> => {
  const encode = Schema.encodeUnknownEither(schema)
  if (SchemaAST.typeAST(schema.ast) !== schema.ast) return (body) => encode(body, { onExcessProperty: "preserve" })
  return (body) => Either.map(encode(body), () => body)
}

/** The route's response encoders by status: JSON responses with a declared Schema. */
export const responseEncoders = (route: Route): ReadonlyMap<number, (body: unknown) => Either.Either<unknown, ParseResult.ParseError>> =>
  new Map(Object.entries(route.responses ?? {}).flatMap(([status, doc]) =>
    doc.schema && (doc.contentType ?? "application/json") === "application/json"
      ? [[Number(status), encoderOf(doc.schema as Schema.Schema<unknown, unknown>)] as const]
      : []
  ))

/** Encodes `body` by the declared Schema of `status`; a mismatch is logged and answered 500. */
export const encodeJson = (
  route: Route,
  encoders: ReturnType<typeof responseEncoders>,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {}
): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
  const encode = encoders.get(status)
  if (!encode) return Effect.succeed(HttpServerResponse.unsafeJson(body, { status, headers }))
  const encoded = encode(body)
  return Either.isRight(encoded)
    ? Effect.succeed(HttpServerResponse.unsafeJson(encoded.right, { status, headers }))
    : Effect.logError(`response ${status} of ${route.method} ${route.path} does not match its declared schema`, ParseResult.TreeFormatter.formatErrorSync(encoded.left)).pipe(
      Effect.as(HttpServerResponse.unsafeJson({ error: "internal error" }, { status: 500 }))
    )
}

/** A handler's value as a response: sent as is, or encoded JSON (`Route.reply` or 200). */
const toResponse = (route: Route, encoders: ReturnType<typeof responseEncoders>, value: unknown): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
  HttpServerResponse.isServerResponse(value)
    ? Effect.succeed(value)
    : isReply(value)
    ? encodeJson(route, encoders, value.status, value.body, value.headers)
    : encodeJson(route, encoders, 200, value)

/** A handler's failure as a response: an `HttpError` checked against its status's Schema, else `renderError`. */
const failureResponse = (route: Route, encoders: ReturnType<typeof responseEncoders>, error: unknown): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
  error instanceof HttpError && encoders.has(error.status)
    ? encodeJson(route, encoders, error.status, error.body, error.headers)
    : renderError(error)

/** Compiles one route into a router handler: decode, call, render. */
const routeHandler = (route: Route, limits: ListenerLimits) => {
  const { jsonDepth } = limitsFor(limits, route.method, route.path, route.limits)
  const onInvalid = route.onInvalid ?? defaultInvalid
  const decodeBody = route.body ? Schema.decodeUnknownEither(route.body) : undefined
  const decodeQuery = route.query ? Schema.decodeUnknownEither(route.query) : undefined
  const decodeParams = route.params ? Schema.decodeUnknownEither(route.params) : undefined
  const encoders = responseEncoders(route)
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
      if (jsonDeeperThan(text.right, jsonDepth)) {
        return HttpServerResponse.unsafeJson(tooDeep(jsonDepth), { status: 400 })
      }
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
    const out = yield* Effect.either(route.handler!({ body, query, params, request }))
    return yield* (Either.isRight(out) ? toResponse(route, encoders, out.right) : failureResponse(route, encoders, out.left))
  })
}

/**
 * The methods served on a request path, from route paths in the router's syntax (`:name` one
 * segment, `*` the rest): what a 405's `Allow` lists (RFC 9110, 15.5.6) when the path exists but
 * not for the request's method. Sorted; empty when no route has the path.
 */
const methodsByPath = (routes: ReadonlyArray<{ readonly method: string; readonly path: string }>) => {
  const patterns = routes.map(({ method, path }) => ({
    method: method.toUpperCase(),
    re: new RegExp(
      `^${path
        .split("/")
        .map((seg) => (seg === "*" ? ".*" : seg.startsWith(":") ? "[^/]+" : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
        .join("/")}/?$`
    )
  }))
  return (path: string): Array<string> => [...new Set(patterns.filter((p) => p.re.test(path)).map((p) => p.method))].sort()
}

/** Builds the `HttpApp` of one listener from its mounted routes (plus `/openapi.json`). */
export const makeApp = (listener: string, routes: ReadonlyArray<MountedRoute>, info: { title: string; version: string }, limits: ListenerLimits = defaultLimits) => {
  const openapi = makeOpenApi(listener, routes, info)
  let router = HttpRouter.empty.pipe(
    HttpRouter.get("/openapi.json", Effect.succeed(HttpServerResponse.unsafeJson(openapi)))
  )
  // Raw routes never reach the Effect app: the listener's dispatcher answers them.
  for (const { route } of routes) {
    if (route.handler) router = HttpRouter.route(route.method)(route.path as HttpRouter.PathInput, routeHandler(route, limits))(router)
  }
  const allowedMethods = methodsByPath([{ method: "GET", path: "/openapi.json" }, ...routes.map(({ route }) => route)])
  return router.pipe(
    Effect.catchTag("RouteNotFound", (e) => {
      const path = e.request.url.split("?")[0]!
      const allow = allowedMethods(path)
      return Effect.succeed(
        allow.length > 0
          ? HttpServerResponse.unsafeJson(
              { error: `method ${e.request.method} not allowed on ${path}; allowed: ${allow.join(", ")}` },
              { status: 405, headers: { allow: allow.join(", ") } }
            )
          : HttpServerResponse.unsafeJson({ error: `no route for ${e.request.method} ${path}` }, { status: 404 })
      )
    }),
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Effect.failCause(cause)
        : Effect.logError("request failed", cause).pipe(Effect.as(HttpServerResponse.unsafeJson({ error: "internal error" }, { status: 500 })))
    )
  )
}

/** One log line per request: method, path, status, duration in ms. */
export const requestLog = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest>) =>
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
