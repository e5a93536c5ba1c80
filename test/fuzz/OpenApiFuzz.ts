/**
 * Request generators for fuzzing a listener from the OpenAPI document it serves (fast-check).
 *
 * Each operation of the document yields an arbitrary of requests that are mostly wrong in
 * interesting ways: the operation's method or another, path parameters from plausible to
 * hostile (`..`, `%00`, 4 kB, unicode, bad %-escapes), query strings generated from the
 * declared parameter schemas and then mutated or replaced, headers (content types, garbage
 * authorization), and bodies that are schema-shaped (from the JSON Schema of the request body,
 * then mutated), arbitrary JSON, deeply nested JSON, or not JSON at all. Documented responses
 * are kept with each operation so a test can tell a documented 503 from a crash.
 */
import fc from "fast-check"

type Json = Record<string, any>

/** One operation of a document: what a fuzzer needs. */
export interface Operation {
  readonly listener: string
  readonly method: string
  /** The templated path, `/api/v1/jobs/{job_id}`. */
  readonly path: string
  readonly pathParams: ReadonlyArray<{ readonly name: string; readonly schema: Json }>
  readonly queryParams: ReadonlyArray<{ readonly name: string; readonly schema: Json }>
  readonly body: Json | undefined
  /** Documented status codes. */
  readonly statuses: ReadonlySet<number>
}

/** A generated request. `body` is the raw text sent (undefined: none). */
export interface FuzzRequest {
  readonly method: string
  readonly path: string
  readonly headers: Record<string, string>
  readonly body: string | undefined
}

/** The operations of `doc` (an OpenAPI 3.1 document as the kernel serves it). */
export const operationsOf = (listener: string, doc: Json): Array<Operation> =>
  Object.entries(doc.paths as Record<string, Record<string, Json>>).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => {
      const params = (op.parameters ?? []) as Array<Json>
      return {
        listener,
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === "path").map((p) => ({ name: p.name as string, schema: p.schema as Json })),
        queryParams: params.filter((p) => p.in === "query").map((p) => ({ name: p.name as string, schema: p.schema as Json })),
        body: op.requestBody?.content?.["application/json"]?.schema as Json | undefined,
        statuses: new Set(Object.keys(op.responses ?? {}).map(Number))
      }
    })
  )

/**
 * Values fitting a JSON Schema (the subset Effect's JSONSchema emits): `$ref` into
 * `components`, `anyOf`/`oneOf`, `enum`/`const`, the primitive types with their bounds, arrays
 * and objects. Depth-limited; patterns are not honoured (a mismatch is one more bad input).
 */
export const valueOf = (schema: Json | undefined, components: Json, depth = 0): fc.Arbitrary<unknown> => {
  if (!schema || depth > 6) return fc.jsonValue({ maxDepth: 2 })
  if (typeof schema.$ref === "string") return valueOf(components[schema.$ref.split("/").pop()!], components, depth + 1)
  const alts = (schema.anyOf ?? schema.oneOf) as Array<Json> | undefined
  if (alts) return fc.oneof(...alts.map((s) => valueOf(s, components, depth + 1)))
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as Array<unknown>))
  if ("const" in schema) return fc.constant(schema.const)
  switch (schema.type) {
    case "string":
      return fc.oneof(fc.string({ maxLength: schema.maxLength ?? 40 }), fc.constantFrom("", "http://127.0.0.1:1/", "2026-01-01T00:00:00Z", "us:ca", "tor", "a".repeat(300)))
    case "integer":
      return fc.integer({ min: schema.minimum ?? -1000, max: Math.min(schema.maximum ?? 100_000, 100_000) })
    case "number":
      return fc.double({ min: schema.minimum ?? -1e6, max: Math.min(schema.maximum ?? 1e6, 1e6), noNaN: true })
    case "boolean":
      return fc.boolean()
    case "null":
      return fc.constant(null)
    case "array":
      return fc.array(valueOf(schema.items as Json, components, depth + 1), { maxLength: Math.min(schema.maxItems ?? 4, 4) })
    case "object": {
      const props = Object.entries((schema.properties ?? {}) as Record<string, Json>)
      const required = new Set((schema.required ?? []) as Array<string>)
      return fc.record(
        Object.fromEntries(props.map(([k, s]) => [k, valueOf(s, components, depth + 1)])),
        { requiredKeys: props.map(([k]) => k).filter((k) => required.has(k)) }
      )
    }
    default:
      return fc.jsonValue({ maxDepth: 2 })
  }
}

/** A value and small mutations of it: a key dropped, a value swapped for another type, an extra key. */
const mutated = (arb: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> =>
  fc.tuple(arb, fc.nat(), fc.jsonValue({ maxDepth: 1 }), fc.constantFrom("keep", "drop", "swap", "extra")).map(([v, n, other, how]) => {
    if (how === "keep" || v === null || typeof v !== "object" || Array.isArray(v)) return how === "swap" ? other : v
    const o = { ...(v as Record<string, unknown>) }
    const keys = Object.keys(o)
    if (keys.length > 0 && how !== "extra") {
      const k = keys[n % keys.length]!
      if (how === "drop") delete o[k]
      else o[k] = other
    } else o[`x${n % 7}`] = other
    return o
  })

const hostileSegment = fc.oneof(
  fc.string({ minLength: 1, maxLength: 12 }),
  fc.constantFrom("..", ".", "%2e%2e", "%00", "%ZZ", "%", "a%2Fb", "job_00000000000000000000000000", "ws_x", "ü", "😀", "x".repeat(4000), "echo", "vectl", "graph", "basic_research")
)

/**
 * The requests of one operation (see the module comment). `extraBodies` adds bodies known to
 * matter (e.g. job payload shapes); `tokens` are bearer tokens the platform accepts.
 */
export const requestsOf = (op: Operation, components: Json, extraBodies: ReadonlyArray<unknown> = [], tokens: ReadonlyArray<string> = []): fc.Arbitrary<FuzzRequest> => {
  const path = fc.tuple(...op.pathParams.map((p) => fc.oneof(valueOf(p.schema, components).map(String), hostileSegment))).map((values) => {
    let i = 0
    return op.path.replace(/\{[^}]+\}/g, () => encodeSegment(values[i++] as string))
  })
  const query = fc.oneof(
    fc.record(Object.fromEntries(op.queryParams.map((p) => [p.name, fc.oneof(valueOf(p.schema, components).map(String), fc.string({ maxLength: 20 }), fc.constantFrom("-1", "0", "1e309", "NaN", "[]", "%"))])), { requiredKeys: [] }),
    fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ maxLength: 20 }), { maxKeys: 3 })
  ).map((q) => {
    const s = Object.entries(q as Record<string, string>).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&")
    return s ? `?${s}` : ""
  })
  const shaped = op.body ? mutated(valueOf(op.body, components)) : fc.jsonValue({ maxDepth: 3 })
  const body = fc.oneof(
    { weight: 4, arbitrary: shaped.map((v) => JSON.stringify(v) ?? "null") },
    { weight: extraBodies.length > 0 ? 4 : 0, arbitrary: extraBodies.length > 0 ? mutated(fc.constantFrom(...extraBodies)).map((v) => JSON.stringify(v) ?? "null") : fc.constant("{}") },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v) ?? "null") },
    { weight: 1, arbitrary: fc.integer({ min: 50, max: 20_000 }).map((n) => "[".repeat(n) + "]".repeat(n)) },
    { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
    { weight: 1, arbitrary: fc.constant(undefined) }
  )
  const headers = fc.record({
    "content-type": fc.constantFrom("application/json", "text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1", ""),
    // Valid tokens too, so guarded routes are fuzzed past their authentication.
    authorization: fc.constantFrom("", "Bearer ", "Bearer x", "Basic Zm9vOmJhcg==", "Bearer " + "t".repeat(2000), ...tokens.flatMap((t) => [`Bearer ${t}`, `Bearer ${t}`, `Bearer ${t}`])),
    accept: fc.constantFrom("", "application/json", "application/json, text/event-stream", "*/*")
  }).map((h) => Object.fromEntries(Object.entries(h).filter(([, v]) => v !== "")))
  const method = fc.oneof({ weight: 6, arbitrary: fc.constant(op.method) }, { weight: 1, arbitrary: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS") })
  return fc.record({ method, path, query, headers, body }).map((r) => ({
    method: r.method,
    path: r.path + r.query,
    headers: r.headers,
    body: r.method === "GET" || r.method === "HEAD" ? undefined : r.body
  }))
}

/** A path segment as a client would send it: `%` sequences kept (hostile ones on purpose), the rest escaped. */
const encodeSegment = (s: string): string => (/%[0-9A-Za-z]{0,2}/.test(s) ? s.replace(/[/?#\s]/g, encodeURIComponent) : encodeURIComponent(s))
