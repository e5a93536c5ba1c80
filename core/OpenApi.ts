/**
 * OpenAPI 3.1 document of what is mounted on one listener, derived from the route declarations
 * (`JSONSchema.make` of each Schema; shared `$defs` hoisted into `components.schemas`).
 */
import * as JSONSchema from "effect/JSONSchema"
import * as Schema from "effect/Schema"
import type { MountedRoute } from "./Server.ts"
import { ValidationErrorBody } from "./Route.ts"

type Json = Record<string, unknown>

/** JSON Schema of `schema` with its `$defs` moved into `defs`, refs rewritten to components. */
const toJsonSchema = (schema: Schema.Schema.Any, defs: Json, target: "jsonSchema2020-12" | "openApi3.1" = "openApi3.1"): Json => {
  const js = JSONSchema.make(schema as Schema.Schema<unknown, unknown>, { target }) as unknown as Json
  const local = (js.$defs ?? {}) as Json
  for (const [k, v] of Object.entries(local)) defs[k] = v
  delete js.$defs
  delete js.$schema
  const rewrite = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(rewrite)
    if (v && typeof v === "object") {
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, k === "$ref" && typeof x === "string" ? x.replace("#/$defs/", "#/components/schemas/") : rewrite(x)]))
    }
    return v
  }
  for (const k of Object.keys(defs)) defs[k] = rewrite(defs[k])
  return rewrite(js) as Json
}

const paramsFrom = (schema: Schema.Schema.Any | undefined, where: "query" | "path", defs: Json): Array<Json> => {
  if (!schema) return []
  const js = toJsonSchema(schema, defs)
  const props = (js.properties ?? {}) as Record<string, Json>
  const required = new Set((js.required ?? []) as Array<string>)
  return Object.entries(props).map(([name, s]) => ({
    name,
    in: where,
    required: where === "path" || required.has(name),
    ...(typeof s.description === "string" ? { description: s.description } : {}),
    schema: s
  }))
}

/** Builds the OpenAPI document for one listener. */
export const makeOpenApi = (listener: string, routes: ReadonlyArray<MountedRoute>, info: { title: string; version: string }): Json => {
  const defs: Json = {}
  const paths: Record<string, Record<string, Json>> = {}
  for (const { plugin, route } of routes) {
    const p = route.path.replace(/:([A-Za-z0-9_]+)/g, "{$1}").replace(/\/\*$/, "/{path}")
    const op: Json = {
      operationId: `${plugin}.${route.method.toLowerCase()}${route.path.replace(/[^A-Za-z0-9]+/g, "_")}`,
      tags: route.tags ?? [plugin],
      ...(route.summary ? { summary: route.summary } : {}),
      ...(route.description ? { description: route.description } : {})
    }
    const parameters = [...paramsFrom(route.params, "path", defs), ...paramsFrom(route.query, "query", defs)]
    if (route.path.endsWith("/*") && !parameters.some((x) => x.in === "path")) {
      parameters.push({ name: "path", in: "path", required: true, schema: { type: "string" }, description: "rest of the path" })
    }
    if (parameters.length) op.parameters = parameters
    if (route.body) op.requestBody = { required: true, content: { "application/json": { schema: toJsonSchema(route.body, defs) } } }
    const responses: Json = {}
    for (const [status, doc] of Object.entries(route.responses ?? { 200: { description: "OK" } })) {
      responses[status] = {
        description: doc.description,
        ...(doc.schema ? { content: { [doc.contentType ?? "application/json"]: { schema: toJsonSchema(doc.schema, defs) } } } : {})
      }
    }
    if ((route.body || route.query || route.params) && !route.onInvalid && !responses["422"]) {
      responses["422"] = { description: "request failed its schema", content: { "application/json": { schema: toJsonSchema(ValidationErrorBody, defs) } } }
    }
    op.responses = responses
    if (route.security) op.security = route.security.map((s) => ({ [s]: [] }))
    Object.assign(op, route.openapi ?? {})
    ;(paths[p] ??= {})[route.method.toLowerCase()] = op
  }
  const usesBearer = routes.some(({ route }) => route.security?.includes("bearer"))
  return {
    openapi: "3.1.0",
    info: { title: `${info.title} — listener ${listener}`, version: info.version },
    paths,
    components: {
      schemas: defs,
      ...(usesBearer ? { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } } : {})
    }
  }
}
