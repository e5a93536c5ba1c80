/**
 * The gateway's HTTP routes (spec: inference-gateway.md): `/v1/chat/completions`,
 * `/v1/models`, `/status`, `/healthz`, plus `/metrics`.
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Schema } from "effect"
import type { HttpError } from "../../core/HttpError.ts"
import * as Route from "../../core/Route.ts"
import type { Gateway } from "./Gateway.ts"
import { ChatRequest, HTTPValidationError, OpenAIErrorBody } from "./OpenAI.ts"

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
 * bodies, validation failures are HTTPValidationError (422).
 */
export const routes = (gateway: Gateway): ReadonlyArray<Route.Route> => [
  Route.make({
    method: "POST",
    path: "/v1/chat/completions",
    summary: "Create a chat completion",
    description: "OpenAI-compatible. `model` selects the engine (default engine when omitted or null). One generation at a time per engine: an overlapping request gets 503 at once, with Retry-After. `stream: true` answers with `chat.completion.chunk` server-sent events ending with `data: [DONE]`.",
    tags: ["gateway"],
    security: ["bearer"],
    body: ChatRequest,
    responses: {
      200: { description: "a `chat.completion` object, or an event stream (`text/event-stream`) when `stream` is true", schema: FreeForm },
      400: { description: "`stream: true` to a non-streaming model, or an unusable `response_format`", schema: OpenAIErrorBody },
      ...errors,
      404: { description: "unknown `model` (`model_not_found`)", schema: OpenAIErrorBody },
      422: { description: "the body fails validation", schema: HTTPValidationError },
      502: { description: "an upstream engine failed", schema: OpenAIErrorBody },
      503: { description: "the engine is busy (Retry-After) or unavailable", schema: OpenAIErrorBody }
    },
    // The token is checked before the body is judged: an anonymous caller learns nothing.
    onInvalid: (invalid) => {
      const denied = gateway.unauthorized(invalid.request)
      if (denied) return respond(denied)
      gateway.metrics.request("none", 422)
      const detail = invalid.location === "json"
        ? [{ loc: ["body"], msg: `JSON decode error: ${invalid.message}`, type: "json_invalid" }]
        : issuesPerField(invalid.issues)
      return HttpServerResponse.unsafeJson({ detail }, { status: 422 })
    },
    fast: (req) => gateway.fastBusyRefusal(req),
    handler: ({ body, request }) => {
      const denied = gateway.unauthorized(request)
      if (denied) return Effect.fail(denied)
      // The kernel has read (and cached) the body text to decode it; reading it again is free.
      return Effect.flatMap(Effect.orElseSucceed(request.text, () => undefined), (raw) => gateway.chat(body, raw, responseClosed(request)))
    }
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
  })
]
