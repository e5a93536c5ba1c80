/**
 * Request limits of a listener, and per route: what the kernel refuses before any handler (or
 * store) sees a request, so that a hostile or careless client cannot grow the process.
 *
 * | limit               | default   | over it                                              |
 * |---------------------|-----------|------------------------------------------------------|
 * | `body_bytes`        | 8 MiB     | 413, before the body is read when Content-Length says so |
 * | `json_depth`        | 64        | 400, before the body is parsed                        |
 * | `header_bytes`      | 16 KiB    | 431 (Node's `maxHeaderSize`)                          |
 * | `request_timeout_s` | 120       | 408 when the whole request has not arrived in time   |
 * | `max_connections`   | 1024      | 503 with `Retry-After: 1` for requests beyond it in flight |
 *
 * A listener's `limits` in platform.yaml set its defaults; `limits.routes` overrides
 * `body_bytes`/`json_depth` for one route, keyed `"METHOD /path"` as the route declares it
 * (`"PUT /files/*"`). A route may also declare its own (`Route.limits`, e.g. file uploads);
 * platform.yaml wins over the route, the route over the listener.
 *
 * Every refusal is JSON `{error, limit, max}`: `limit` names the setting, `max` its value.
 */
import * as Schema from "effect/Schema"

/** Limits a route can carry (and platform.yaml override per route). */
export const RouteLimits = Schema.Struct({
  body_bytes: Schema.optional(Schema.Int.pipe(Schema.between(0, 4 * 1024 ** 3))).annotations({ description: "largest request body, bytes (413 over it)" }),
  json_depth: Schema.optional(Schema.Int.pipe(Schema.between(1, 10_000))).annotations({ description: "deepest nesting of a JSON body, levels (400 over it)" })
}).annotations({ identifier: "RouteLimits" })
export type RouteLimits = Schema.Schema.Type<typeof RouteLimits>

/** A listener's `limits` section. */
export const ListenerLimits = Schema.Struct({
  body_bytes: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 4 * 1024 ** 3)), { default: () => 8 * 1024 * 1024 }).annotations({ description: "largest request body, bytes (413 over it)" }),
  json_depth: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 10_000)), { default: () => 64 }).annotations({ description: "deepest nesting of a JSON body, levels (400 over it)" }),
  header_bytes: Schema.optionalWith(Schema.Int.pipe(Schema.between(1024, 1024 * 1024)), { default: () => 16 * 1024 }).annotations({ description: "largest request head (request line and headers), bytes (431 over it)" }),
  request_timeout_s: Schema.optionalWith(Schema.Number.pipe(Schema.between(1, 86_400)), { default: () => 120 }).annotations({ description: "time for a whole request to arrive, seconds (408 past it); responses and streams are not bounded by it" }),
  max_connections: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 1_000_000)), { default: () => 1024 }).annotations({ description: "requests in flight at once on the listener (503 beyond)" }),
  routes: Schema.optionalWith(Schema.Record({ key: Schema.String, value: RouteLimits }), { default: () => ({}) }).annotations({ description: "per-route overrides keyed \"METHOD /path\" as the route declares its path" })
}).annotations({ identifier: "ListenerLimits", description: "What the listener refuses before a handler sees the request" })
export type ListenerLimits = Schema.Schema.Type<typeof ListenerLimits>

/** The defaults, as a listener without `limits` gets them. */
export const defaultLimits: ListenerLimits = Schema.decodeUnknownSync(ListenerLimits)({})

/** The limits in force on one route: platform.yaml's per-route entry, the route's own, the listener's. */
export const limitsFor = (listener: ListenerLimits, method: string, path: string, declared?: RouteLimits): { readonly bodyBytes: number; readonly jsonDepth: number } => {
  const configured = listener.routes[`${method} ${path}`]
  return {
    bodyBytes: configured?.body_bytes ?? declared?.body_bytes ?? listener.body_bytes,
    jsonDepth: configured?.json_depth ?? declared?.json_depth ?? listener.json_depth
  }
}

/** A refusal: what was refused, the setting that refused it, its value. */
export interface LimitError {
  readonly error: string
  readonly limit: string
  readonly max: number
}

/** The refusal of a JSON body nested deeper than `max` (the raw and the Effect path both send it). */
export const tooDeep = (max: number): LimitError => ({ error: `request body nests deeper than ${max} levels`, limit: "json_depth", max })

/** The JSON body of a refusal. */
export const limitBody = (error: string, limit: string, max: number): string => JSON.stringify({ error, limit, max } satisfies LimitError)

/** Schema of a refusal body, for OpenAPI documents. */
export const LimitErrorBody = Schema.Struct({ error: Schema.String, limit: Schema.String, max: Schema.Number }).annotations({ identifier: "LimitErrorBody", description: "A request refused by a listener limit" })

/**
 * True when the JSON text nests arrays/objects deeper than `max` levels. A linear scan of the
 * text (strings skipped, escapes honoured), so a hostile body is refused before `JSON.parse` and
 * before any recursive walk (Schema decoding, structured clone, a store's serialiser) could
 * overflow the stack. Works on text that is not valid JSON too (it then fails parsing later).
 */
export const jsonDeeperThan = (text: string, max: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92 /* \ */) i++
      else if (c === 34 /* " */) inString = false
    } else if (c === 34) inString = true
    else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > max) return true
    } else if (c === 93 /* ] */ || c === 125 /* } */) depth--
  }
  return false
}
