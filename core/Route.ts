/**
 * Schema-declared HTTP routes: the unit of HTTP a plugin contributes to its listener.
 *
 * A `Route` carries its method, path (`@effect/platform` HttpRouter syntax: `:param`, `*`),
 * optional `body` / `query` / `params` Schemas and documented responses. The kernel compiles the
 * routes of a listener into one `HttpRouter`, decodes requests with the Schemas (invalid input
 * never reaches the handler), renders errors, and derives the listener's OpenAPI document from
 * the same declarations.
 *
 * Handler results: a value is sent as JSON 200, a `Route.reply(status, body)` with its status;
 * either is first encoded with the Schema the route declares for that status in `responses`
 * (so a declared response is a contract, not documentation: a body that does not match it is
 * logged and answered 500). An `HttpServerResponse` (streams, files, empty bodies) is sent as is.
 * Handler failures: a `Respondable` error (see `HttpError`) renders itself, its JSON body
 * checked against the declared Schema of its status the same way; an error whose Schema class
 * carries an `HttpApiSchema` status annotation is sent as its encoded JSON with that status;
 * anything else is logged and answered 500 `{error}` without internals.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { RouteLimits } from "./Limits.ts"

/** HTTP methods a route may declare. */
export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD" | "OPTIONS"

/** Where a request failed its Schema (or JSON parsing, for `json`). */
export type InvalidLocation = "body" | "query" | "path" | "json"

/** One validation problem in FastAPI/OpenAPI style: `loc` starts with the location. */
export interface ValidationIssue {
  readonly loc: ReadonlyArray<string | number>
  readonly msg: string
  readonly type: string
}

/** A request refused before the handler ran. `issues` is empty for unparsable JSON. */
export interface InvalidRequest {
  readonly location: InvalidLocation
  readonly message: string
  readonly issues: ReadonlyArray<ValidationIssue>
  readonly request: HttpServerRequest.HttpServerRequest
}

/** What a handler receives: decoded parts plus the raw request (headers, remote address, stream). */
export interface RouteRequest<B, Q, P> {
  readonly body: B
  readonly query: Q
  readonly params: P
  readonly request: HttpServerRequest.HttpServerRequest
}

/** Documentation of one response status, for the OpenAPI document. */
export interface ResponseDoc {
  readonly description: string
  readonly schema?: Schema.Schema.Any
  /** Defaults to `application/json`. */
  readonly contentType?: string
}

/**
 * What a `fast` pre-handler sees: the request with its body read and (when it is JSON) parsed,
 * on the raw Node path, before any Effect fiber exists.
 */
export interface FastRequest {
  readonly method: string
  readonly path: string
  readonly headers: Readonly<Record<string, string | Array<string> | undefined>>
  readonly params: Readonly<Record<string, string>>
  /** `JSON.parse` of the body, or undefined when it is empty or not JSON. */
  readonly json: unknown
  readonly rawBody: Uint8Array
  readonly remoteAddress: string | undefined
}

/** A complete answer from a `fast` pre-handler: `body` is sent as is (prebuild it). */
export interface FastReply {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | Uint8Array
}

/** The declaration a plugin writes; `Route.make` fills in defaults. */
export interface RouteSpec<B, Q, P> {
  readonly method: Method
  readonly path: string
  readonly summary?: string
  readonly description?: string
  readonly tags?: ReadonlyArray<string>
  /** JSON request body. Without it the body is left unread for the handler. */
  readonly body?: Schema.Schema<B, any>
  readonly query?: Schema.Schema<Q, any>
  readonly params?: Schema.Schema<P, any>
  readonly responses?: Readonly<Record<number, ResponseDoc>>
  /** OpenAPI security requirement names (e.g. `["bearer"]`); documentation only. */
  readonly security?: ReadonlyArray<string>
  /** Extra OpenAPI operation members (e.g. `x-` extensions). */
  readonly openapi?: Readonly<Record<string, unknown>>
  /** Response for a request that fails decoding; default 422 `{error, detail: ValidationIssue[]}` (400 for bad JSON). */
  readonly onInvalid?: (invalid: InvalidRequest) => HttpServerResponse.HttpServerResponse
  /** The implementation, in an Effect fiber. A route has this or `raw`, never both. */
  readonly handler?: (req: RouteRequest<B, Q, P>) => Effect.Effect<unknown, unknown, never>
  /**
   * The implementation on the raw Node path, for a route whose answers must not pay for a fiber
   * (`npm run bench` shows where: the jobs submit). The server reads the whole body, parses it
   * as JSON when it can (`json` undefined otherwise), matches `:params` (not decoded by
   * `params`), and sends the reply JSON-encoded through the Schema `responses` declares for its
   * status, like a handler's. A rejection is logged and answered 500.
   */
  readonly raw?: (req: FastRequest) => Reply | Promise<Reply>
  /**
   * Optional synchronous pre-handler on the raw Node path, for hot answers that must not pay for
   * a fiber (a busy engine's 503 under load). It returns a complete reply, or undefined to let
   * the request continue to `handler` exactly as if `fast` did not exist (the body is replayed).
   * It must give the same answer `handler` would: it is an optimisation, never a second API.
   * A promise is awaited; a rejected one is answered 500 (never replayed: the work may have
   * happened), so an async `fast` should settle every expected outcome itself.
   */
  readonly fast?: (req: FastRequest) => FastReply | undefined | Promise<FastReply | undefined>
  /** Largest body `fast` buffers, in bytes (default 1 MiB); larger requests skip `fast`. */
  readonly fastMaxBody?: number
  /** The route's own request limits (see `Limits`); platform.yaml's `limits.routes` overrides them. */
  readonly limits?: RouteLimits
}

/** A handler's answer with its status (and headers): `body` is encoded by `responses[status].schema`. */
export interface Reply {
  readonly _tag: "RouteReply"
  readonly status: number
  readonly body: unknown
  readonly headers?: Readonly<Record<string, string>>
}

/** Answers `status` with `body` as JSON, encoded by the route's declared Schema for that status. */
export const reply = (status: number, body: unknown, headers?: Readonly<Record<string, string>>): Reply => ({ _tag: "RouteReply", status, body, ...(headers ? { headers } : {}) })

/** True for a `reply(...)` value. */
export const isReply = (u: unknown): u is Reply => typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "RouteReply"

/** A route as registered: the spec plus the contributing plugin's name. */
export interface Route<B = any, Q = any, P = any> extends RouteSpec<B, Q, P> {
  readonly _tag: "Route"
}

/** Declares a route. Types of `body`/`query`/`params` flow into the handler. */
export const make = <B = undefined, Q = Record<string, string>, P = Record<string, string>>(
  spec: RouteSpec<B, Q, P>
): Route<B, Q, P> => {
  if ((spec.handler === undefined) === (spec.raw === undefined)) throw new Error(`route ${spec.method} ${spec.path}: give it one implementation, handler or raw`)
  if (spec.raw && spec.fast) throw new Error(`route ${spec.method} ${spec.path}: a raw route needs no fast pre-handler`)
  return { _tag: "Route", ...spec }
}

/** Default rendering of a refused request: 400 for unparsable JSON, 422 with issues otherwise. */
export const defaultInvalid = (invalid: InvalidRequest): HttpServerResponse.HttpServerResponse =>
  invalid.location === "json"
    ? HttpServerResponse.unsafeJson({ error: invalid.message }, { status: 400 })
    : HttpServerResponse.unsafeJson({ error: invalid.message, detail: invalid.issues }, { status: 422 })

/** Schema of the default 422 body, for OpenAPI documents. */
export const ValidationErrorBody = Schema.Struct({
  error: Schema.String,
  detail: Schema.Array(Schema.Struct({
    loc: Schema.Array(Schema.Union(Schema.String, Schema.Number)),
    msg: Schema.String,
    type: Schema.String
  }))
}).annotations({ identifier: "ValidationErrorBody", description: "Request refused by its Schema" })

/** Schema of a plain `{error}` body. */
export const ErrorBody = Schema.Struct({ error: Schema.String }).annotations({ identifier: "ErrorBody" })
