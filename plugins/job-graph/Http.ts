/**
 * HTTP routes of the graph plugin, on the jobs listener:
 * - `GET /api/v1/graph/operations`: every registered graph operation, its types and params schema;
 * - `POST /api/v1/graph/validate`: `{graph | template, params?}` → `{valid, graph_name, problems}`
 *   (200 either way: the report is the answer);
 * - `GET /api/v1/templates`, `GET /api/v1/templates/{name}` (with its YAML),
 *   `POST /api/v1/templates` (YAML body, `application/yaml`/`text/yaml`/`text/plain`, or JSON
 *   `{yaml}`): 201 created / 200 replaced; 422 `{error, problems}` when the template is invalid;
 *   409 for a built-in name; `DELETE /api/v1/templates/{name}`: 204, 404 unknown, 409 built-in.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { HttpError } from "../../core/HttpError.ts"
import * as Route from "../../core/Route.ts"
import { OperationInfo, ProblemsBody, TemplateInfo, ValidateRequest, ValidationReport } from "./Api.ts"
import type { Graphs } from "./Graphs.ts"
import { declaredName, summarize, TEMPLATE_NAME, type TemplateEntry } from "./Templates.ts"

const ErrorBody = Schema.Struct({ error: Schema.String })
const MAX_TEMPLATE_BYTES = 256 * 1024

const info = (t: TemplateEntry, withYaml: boolean) => ({ name: t.name, builtin: t.builtin, ...summarize(t.yaml), ...(withYaml ? { yaml: t.yaml } : {}) })

/** The routes, over `graphs`. */
export const routes = (graphs: Graphs): ReadonlyArray<Route.Route> => [
  Route.make({
    method: "GET",
    path: "/api/v1/graph/operations",
    summary: "List the graph operations every plugin contributes, with input/output types and params JSON Schema",
    tags: ["graph"],
    responses: { 200: { description: "operations by name", schema: Schema.Array(OperationInfo) } },
    handler: () => Effect.succeed(graphs.operations())
  }),
  Route.make({
    method: "POST",
    path: "/api/v1/graph/validate",
    summary: "Validate a graph (inline YAML or a template with params) without running it",
    tags: ["graph"],
    body: ValidateRequest,
    responses: { 200: { description: "the report: valid, or every problem with line, column and path", schema: ValidationReport } },
    handler: ({ body }) =>
      Effect.sync(() => {
        const r = graphs.resolve({ graph: body.graph, template: body.template, ...(body.params !== undefined ? { params: body.params } : {}) })
        return r._tag === "Right"
          ? { valid: true, graph_name: r.right.name, problems: [] }
          : { valid: false, graph_name: null, problems: r.left.problems }
      })
  }),
  Route.make({
    method: "GET",
    path: "/api/v1/templates",
    summary: "List graph templates (the ten built-ins and custom ones)",
    tags: ["graph"],
    responses: { 200: { description: "templates", schema: Schema.Array(TemplateInfo) } },
    handler: () => Effect.sync(() => graphs.templates.list().map((t) => info(t, false)))
  }),
  Route.make({
    method: "GET",
    path: "/api/v1/templates/:name",
    summary: "One template with its YAML",
    tags: ["graph"],
    params: Schema.Struct({ name: Schema.String }),
    responses: { 200: { description: "the template", schema: TemplateInfo }, 404: { description: "no such template", schema: ErrorBody } },
    handler: ({ params }) => {
      const t = graphs.templates.get(params.name)
      return t === undefined ? Effect.fail(HttpError.of(404, `no template "${params.name}"`)) : Effect.succeed(info(t, true))
    }
  }),
  Route.make({
    method: "POST",
    path: "/api/v1/templates",
    summary: "Register (or replace) a custom template: YAML body, or JSON {yaml}",
    description: "The template's `name` is its template name (lower case, digits, _). It is validated as a whole before it is stored; built-in names cannot be taken.",
    tags: ["graph"],
    responses: {
      200: { description: "replaced", schema: TemplateInfo },
      201: { description: "created", schema: TemplateInfo },
      400: { description: "no YAML in the body", schema: ErrorBody },
      409: { description: "a built-in template has that name", schema: ErrorBody },
      413: { description: "body too large", schema: ErrorBody },
      422: { description: "the template is invalid: every problem with line, column and path", schema: ProblemsBody }
    },
    handler: ({ request }) =>
      Effect.gen(function*() {
        const text = yield* request.text.pipe(Effect.mapError(() => HttpError.of(400, "could not read the request body")))
        if (Buffer.byteLength(text) > MAX_TEMPLATE_BYTES) return yield* Effect.fail(HttpError.of(413, `a template is at most ${MAX_TEMPLATE_BYTES} bytes`))
        const type = (request.headers["content-type"] ?? "").toLowerCase()
        let yaml = text
        if (type.includes("json")) {
          let parsed: unknown
          try {
            parsed = JSON.parse(text)
          } catch (e) {
            return yield* Effect.fail(HttpError.of(400, `body is not JSON: ${(e as Error).message}`))
          }
          const y = (parsed as { yaml?: unknown } | null)?.yaml
          if (typeof y !== "string") return yield* Effect.fail(HttpError.of(400, "JSON body must be {\"yaml\": \"<template YAML>\"}"))
          yaml = y
        }
        if (yaml.trim() === "") return yield* Effect.fail(HttpError.of(400, "empty body: send the template YAML"))
        const r = graphs.check(yaml)
        if (r.graph === undefined) return yield* Effect.fail(new HttpError({ status: 422, body: { error: `invalid template: ${r.problems.length} problem(s)`, problems: r.problems } }))
        const name = declaredName(yaml)!
        if (!TEMPLATE_NAME.test(name)) {
          return yield* Effect.fail(new HttpError({ status: 422, body: { error: `template name "${name}" must match ${TEMPLATE_NAME.source}`, problems: [{ line: 1, column: 1, path: "name", message: `must match ${TEMPLATE_NAME.source}` }] } }))
        }
        if (graphs.templates.isBuiltin(name)) return yield* Effect.fail(HttpError.of(409, `"${name}" is a built-in template and cannot be replaced; register it under another name`))
        const replaced = graphs.templates.put(name, yaml)
        return Route.reply(replaced ? 200 : 201, info({ name, builtin: false, yaml }, true))
      })
  }),
  Route.make({
    method: "DELETE",
    path: "/api/v1/templates/:name",
    summary: "Delete a custom template",
    tags: ["graph"],
    params: Schema.Struct({ name: Schema.String }),
    responses: {
      204: { description: "deleted" },
      404: { description: "no such custom template", schema: ErrorBody },
      409: { description: "built-in templates cannot be deleted", schema: ErrorBody }
    },
    handler: ({ params }) => {
      if (graphs.templates.isBuiltin(params.name)) return Effect.fail(HttpError.of(409, `"${params.name}" is a built-in template and cannot be deleted`))
      return graphs.templates.delete(params.name)
        ? Effect.succeed(HttpServerResponse.empty({ status: 204 }))
        : Effect.fail(HttpError.of(404, `no custom template "${params.name}"`))
    }
  })
]

