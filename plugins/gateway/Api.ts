/**
 * The gateway's HTTP routes (spec: inference-gateway.md): `/v1/chat/completions`,
 * `/v1/completions`, `/v1/embeddings`, `/v1/models`, `/status`, `/healthz`, plus `/metrics`.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { HttpError } from "../../core/HttpError.ts"
import * as Route from "../../core/Route.ts"
import type { Gateway } from "./Gateway.ts"
import { ChatRequest, CompletionRequest, EmbeddingRequest, errorBody, HTTPValidationError, openAIError, OpenAIErrorBody } from "./OpenAI.ts"

const respond = (e: HttpError): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson(e.body, { status: e.status, headers: e.headers ?? {} })

/**
 * One issue per field, as FastAPI reports it: a nullable optional field is a union
 * (`X | null | undefined`), and the kernel lists every member's mismatch; the "Expected null" and
 * "Expected undefined" members add nothing for the client and are dropped.
 */
const issuesPerField = (issues: ReadonlyArray<Route.ValidationIssue>): ReadonlyArray<Route.ValidationIssue> => {
  const byLoc = new Map<string, Route.ValidationIssue>()
  for (const i of issues) {
    const key = JSON.stringify(i.loc)
    const noise = /^Expected (null|undefined), actual/.test(i.msg)
    const seen = byLoc.get(key)
    if (!seen || (/^Expected (null|undefined), actual/.test(seen.msg) && !noise)) byLoc.set(key, i)
  }
  return [...byLoc.values()]
}

/** `messages[0].role` for `["body", "messages", 0, "role"]`: OpenAI's way of naming a field. */
const paramOf = (loc: ReadonlyArray<string | number>): string | null => {
  const path = loc[0] === "body" ? loc.slice(1) : loc
  if (path.length === 0) return null
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? p : `.${p}`)).join("")
}

/**
 * The 422 body: the spec's HTTPValidationError `detail`, and beside it OpenAI's `error` object
 * whose message names the first failing field (what OpenAI clients show; without it the SDKs
 * report "422 status code (no body)").
 */
const validationError = (detail: ReadonlyArray<Route.ValidationIssue>) => {
  const first = detail[0]
  const param = first ? paramOf(first.loc) : null
  const message = !first ? "The request body failed validation."
    : first.type === "json_invalid" ? `The body is not valid JSON: ${first.msg}`
    : `Invalid value for \`${param ?? "body"}\`: ${first.msg}`
  const code = first?.type === "missing" ? "missing_required_parameter" : first?.type === "json_invalid" ? "invalid_json" : "invalid_value"
  return { detail, ...errorBody(message, "invalid_request_error", code, param) }
}

/** Matches a request path against a route path (`:param` segments, an optional trailing slash). */
const pathPattern = (routePath: string): RegExp =>
  new RegExp(`^${routePath.split("/").map((seg) => (seg.startsWith(":") ? "[^/]+" : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))).join("/")}/?$`)

/**
 * Anything else under `/v1`: 405 (with `Allow`) for a known path and the wrong method, 404
 * otherwise, both in OpenAI's error shape (the kernel's own 404 body is a bare string).
 */
const unmatched = (gateway: Gateway, served: ReadonlyArray<Route.Route>) => (method: Route.Method, path: string) =>
  Route.make({
    method,
    path,
    summary: "Unknown paths and methods under /v1 (OpenAI error body)",
    tags: ["gateway"],
    security: ["bearer"],
    responses: {
      ...errors,
      404: { description: "no such path (`unknown_url`)", schema: OpenAIErrorBody },
      405: { description: "the path exists with another method (`Allow` lists it)", schema: OpenAIErrorBody }
    },
    handler: ({ request }) => {
      const denied = gateway.unauthorized(request)
      if (denied) return Effect.fail(denied)
      const path = request.url.split("?")[0]!
      const allowed = served.filter((r) => pathPattern(r.path).test(path)).map((r) => r.method).join(", ")
      return Effect.fail(allowed
        ? openAIError(405, `Method ${method} is not allowed on ${path}; use ${allowed}.`, { code: "method_not_allowed", headers: { allow: allowed } })
        : openAIError(404, `Unknown request URL: ${method} ${path}.`, { code: "unknown_url" }))
    }
  })

/**
 * Resolves when the Node response behind `request` has closed: fully written, or the connection
 * dropped. Undefined when the request is not served by node:http (then only the generation's end
 * frees the engine).
 */
const responseClosed = (request: HttpServerRequest.HttpServerRequest) => (): Promise<void> | undefined => {
  let res: import("node:http").ServerResponse
  try {
    res = NodeHttpServerRequest.toServerResponse(request)
  } catch {
    return undefined
  }
  if (res.closed) return Promise.resolve()
  return new Promise((resolve) => res.once("close", () => resolve()))
}

const Status = Schema.Struct({
  ok: Schema.Boolean,
  models: Schema.Array(Schema.Struct({ id: Schema.String, engine: Schema.String, available: Schema.Boolean }))
}).annotations({ identifier: "Status" })

const FreeForm = Schema.Record({ key: Schema.String, value: Schema.Unknown })

const errors = {
  401: { description: "missing or wrong bearer token (`WWW-Authenticate: Bearer`)", schema: OpenAIErrorBody }
}

/**
 * The routes of one gateway instance. Shapes: see the spec; errors on `/v1/*` are OpenAI error
 * bodies (unknown paths and methods included), validation failures are HTTPValidationError
 * (422) with OpenAI's `error` beside `detail`.
 */
export const routes = (gateway: Gateway): ReadonlyArray<Route.Route> => {
  const served = servedRoutes(gateway)
  const v1 = served.filter((r) => r.path.startsWith("/v1/"))
  // The router prefers every route above to these wildcards.
  const fallbacks = (["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const).flatMap((method) =>
    ["/v1", "/v1/*"].map((path) => unmatched(gateway, v1)(method, path)))
  return [...served, ...fallbacks]
}

/** The 422 answer of a body that fails validation, after the token check (an anonymous caller learns nothing). */
const invalidBody = (gateway: Gateway) => (invalid: Route.InvalidRequest) => {
  const denied = gateway.unauthorized(invalid.request)
  if (denied) return respond(denied)
  gateway.metrics.request("none", 422)
  const detail = invalid.location === "json"
    ? [{ loc: ["body"], msg: `JSON decode error: ${invalid.message}`, type: "json_invalid" }]
    : issuesPerField(invalid.issues)
  return HttpServerResponse.unsafeJson(validationError(detail), { status: 422 })
}

/** The answers every generation endpoint shares besides its own 200 and 400. */
const generationErrors = {
  ...errors,
  404: { description: "unknown `model` (`model_not_found`)", schema: OpenAIErrorBody },
  422: { description: "the body fails validation", schema: HTTPValidationError },
  502: { description: "an upstream engine failed", schema: OpenAIErrorBody },
  503: { description: "the engine is busy (`engine_busy`, Retry-After), loading or unavailable", schema: OpenAIErrorBody }
}

/** The handler of a generation endpoint other than chat: the token, then the engine (`Gateway.serve`). */
const servedBy = (gateway: Gateway, kind: "completions" | "embeddings") =>
  ({ body, request }: { readonly body: unknown; readonly request: HttpServerRequest.HttpServerRequest }) => {
    const denied = gateway.unauthorized(request)
    if (denied) return Effect.fail(denied)
    // The kernel has read (and cached) the body text to decode it; reading it again is free.
    return Effect.flatMap(Effect.orElseSucceed(request.text, (): string | undefined => undefined), (raw) => gateway.serve(kind, body as never, raw, responseClosed(request)))
  }

/** The routes with a purpose (what the `/v1` fallbacks' 405s list in `Allow`). */
const servedRoutes = (gateway: Gateway): ReadonlyArray<Route.Route> => [
  Route.make({
    method: "POST",
    path: "/v1/chat/completions",
    summary: "Create a chat completion",
    description: "OpenAI-compatible. `model` selects the engine (default engine when omitted or null). One generation at a time per engine: an overlapping request gets 503 at once, with Retry-After. `stream: true` answers with `chat.completion.chunk` server-sent events ending with `data: [DONE]`. `max_completion_tokens` wins over `max_tokens`; `n` choices are generated one after another.",
    tags: ["gateway"],
    security: ["bearer"],
    body: ChatRequest,
    responses: {
      200: { description: "a `chat.completion` object, or an event stream (`text/event-stream`) when `stream` is true", schema: FreeForm },
      400: { description: "the prompt and the completion asked for exceed the context (`context_length_exceeded`); a field the engine cannot honour (`unsupported_parameter`, named in `param`); `stream: true` to a non-streaming model; an unusable `response_format` or `logit_bias`", schema: OpenAIErrorBody },
      ...errors,
      404: { description: "unknown `model` (`model_not_found`)", schema: OpenAIErrorBody },
      422: { description: "the body fails validation: `detail` per field, and OpenAI's `error` naming the first", schema: HTTPValidationError },
      502: { description: "an upstream engine failed", schema: OpenAIErrorBody },
      503: { description: "the engine is busy (`engine_busy`; `retry-after` and `retry-after-ms` from the running generation's remaining budget, jittered), loading (`model_loading`) or unavailable (`model_unavailable`, `x-should-retry: false`)", schema: OpenAIErrorBody }
    },
    // The token is checked before the body is judged: an anonymous caller learns nothing.
    onInvalid: invalidBody(gateway),
    fast: (req) => gateway.fastBusyRefusal(req),
    handler: ({ body, request }) => {
      const denied = gateway.unauthorized(request)
      if (denied) return Effect.fail(denied)
      // The kernel has read (and cached) the body text to decode it; reading it again is free.
      return Effect.flatMap(Effect.orElseSucceed(request.text, () => undefined), (raw) => gateway.chat(body, raw, responseClosed(request)))
    }
  }),
  Route.make({
    method: "POST",
    path: "/v1/completions",
    summary: "Create a text completion",
    description: "OpenAI's (legacy) text completions: `prompt` is a text, texts, token ids or lists of them; `max_tokens` defaults to 16. Same token, routing and one-at-a-time rule as chat completions (an engine busy with any request answers 503 at once). `stream: true` answers `text_completion` events ending with `data: [DONE]`. Upstream engines get the body untouched.",
    tags: ["gateway"],
    security: ["bearer"],
    body: CompletionRequest,
    responses: {
      200: { description: "a `text_completion` object, or an event stream when `stream` is true", schema: FreeForm },
      400: { description: "prompt plus completion over the context (`context_length_exceeded`); a field the engine cannot honour (`echo`, `suffix`, `best_of` > 1, `logprobs` on llama-cpp engines: `unsupported_parameter`)", schema: OpenAIErrorBody },
      ...generationErrors
    },
    onInvalid: invalidBody(gateway),
    handler: servedBy(gateway, "completions")
  }),
  Route.make({
    method: "POST",
    path: "/v1/embeddings",
    summary: "Create embeddings",
    description: "OpenAI embeddings: one vector per input (text, texts, token ids or lists of them), `encoding_format` `float` or `base64`. Served by llama-cpp engines with an `embedding_model_path` and by upstream engines (body untouched). Same token and one-at-a-time rule per engine as chat completions.",
    tags: ["gateway"],
    security: ["bearer"],
    body: EmbeddingRequest,
    responses: {
      200: { description: "OpenAI's list of `embedding` objects with usage", schema: FreeForm },
      400: { description: "the engine has no embedding model (`model_not_supported`); an input over the context (`context_length_exceeded`); `dimensions` other than the model's", schema: OpenAIErrorBody },
      ...generationErrors
    },
    onInvalid: invalidBody(gateway),
    handler: servedBy(gateway, "embeddings")
  }),
  Route.make({
    method: "GET",
    path: "/v1/models",
    summary: "List the models (engines)",
    tags: ["gateway"],
    security: ["bearer"],
    responses: { 200: { description: "OpenAI list of models, with `available`, `streaming`, `default`", schema: FreeForm }, ...errors },
    handler: ({ request }) => {
      const denied = gateway.unauthorized(request)
      return denied ? Effect.fail(denied) : Effect.succeed(gateway.models())
    }
  }),
  Route.make({
    method: "GET",
    path: "/v1/models/:model",
    summary: "Retrieve one model (engine)",
    tags: ["gateway"],
    security: ["bearer"],
    params: Schema.Struct({ model: Schema.String }),
    responses: {
      200: { description: "the OpenAI model object, with `available`, `streaming`, `default`", schema: FreeForm },
      ...errors,
      404: { description: "unknown model id (`model_not_found`)", schema: OpenAIErrorBody }
    },
    handler: ({ params, request }) => {
      const denied = gateway.unauthorized(request)
      if (denied) return Effect.fail(denied)
      const model = gateway.model(params.model)
      return model
        ? Effect.succeed(model)
        : Effect.fail(openAIError(404, `The model \`${params.model}\` does not exist.`, { code: "model_not_found", param: "model" }))
    }
  }),
  Route.make({
    method: "GET",
    path: "/status",
    summary: "What is up (public)",
    tags: ["gateway"],
    responses: { 200: { description: "the Status document", schema: Status } },
    handler: () => Effect.succeed(gateway.status())
  }),
  Route.make({
    method: "GET",
    path: "/healthz",
    summary: "Cache statistics and memory figures (loopback or admin token)",
    tags: ["gateway"],
    responses: {
      200: { description: "free-form health document: per-engine KV cache, prefix reuse, model and memory sizes in bytes", schema: FreeForm },
      403: { description: "neither a loopback client nor the admin token", schema: OpenAIErrorBody }
    },
    handler: ({ request }) => {
      const denied = gateway.forbidden(request)
      return denied ? Effect.fail(denied) : gateway.health()
    }
  }),
  Route.make({
    method: "GET",
    path: "/metrics",
    summary: "Prometheus metrics (loopback or admin token)",
    tags: ["gateway"],
    responses: {
      200: { description: "Prometheus text format 0.0.4", contentType: "text/plain" },
      403: { description: "neither a loopback client nor the admin token", schema: OpenAIErrorBody }
    },
    handler: ({ request }) => {
      const denied = gateway.forbidden(request)
      return denied
        ? Effect.fail(denied)
        : Effect.sync(() => HttpServerResponse.text(gateway.renderMetrics(), { contentType: "text/plain; version=0.0.4; charset=utf-8" }))
    }
  }),
]
