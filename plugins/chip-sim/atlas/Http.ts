/**
 * Atlas routes under `/api` (spec: chip-simulation.md, "Atlas queries"): `/v1/atlas`,
 * `/v1/atlas/full`, `/v1/groups`, `/v1/groups/{key}`, `/v1/tags`, `/v1/node/{ref}`,
 * `/v1/neighbors`. Every answer is `public, max-age=86400` with an ETag (a SHA-256 prefix of the
 * body) and honours `If-None-Match` with 304. Query values failing their Schema are 422 (the
 * kernel's `{error, detail}`); a reference naming nothing is 404 on a path and 400 in a query;
 * an unknown block or group filter is 422 (`{error}`).
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { HttpError } from "../../../core/HttpError.ts"
import * as Route from "../../../core/Route.ts"
import { type AtlasService, etagOf } from "./Atlas.ts"
import { type Atlas, KINDS, ROLES } from "./Derive.ts"
import { AtlasQueryError, groupDetail, listGroups, MAX_DEPTH, MAX_LIMIT, neighbors, nodeDetail, tags } from "./Query.ts"

const CACHE = "public, max-age=86400"
const errorBody = Schema.Struct({ error: Schema.String })

type Headers = { readonly headers: Record<string, string | undefined> }

/** 304 when the client holds this ETag, else the body with its ETag and cache lifetime. */
const cached = (request: Headers, body: string | Uint8Array, etag: string, extra: Record<string, string> = {}) =>
  request.headers["if-none-match"] === etag
    ? HttpServerResponse.empty({ status: 304, headers: { etag, "cache-control": CACHE, ...extra } })
    : typeof body === "string"
      ? HttpServerResponse.text(body, { contentType: "application/json", headers: { etag, "cache-control": CACHE, ...extra } })
      : HttpServerResponse.uint8Array(body, { contentType: "application/json", headers: { etag, "cache-control": CACHE, ...extra } })

/** The atlas, or 503 when the netlist cannot be derived (the files changed under a running server). */
const atlasOf = (service: AtlasService) =>
  Effect.try({ try: () => service.atlas(), catch: (e) => HttpError.of(503, `atlas unavailable: ${(e as Error).message}`) })

/**
 * Runs a query: its refusals become their 400/404/422 and bad percent-encoding 400; anything
 * else is a defect (500), never dressed up as a refusal.
 */
const answer = (service: AtlasService, request: Headers, f: (atlas: Atlas) => unknown) =>
  Effect.flatMap(atlasOf(service), (atlas) =>
    Effect.try({
      try: () => {
        const body = JSON.stringify(f(atlas))
        return cached(request, body, etagOf(body))
      },
      catch: (e) => e
    }).pipe(
      Effect.catchAll((e) =>
        e instanceof AtlasQueryError
          ? Effect.fail(HttpError.of(e.status, e.message, e.extra))
          : e instanceof URIError
            ? Effect.fail(HttpError.of(400, `the reference is not valid percent-encoding: ${e.message}`))
            : Effect.die(e)
      )
    ))

/** The rest of the path after `prefix`, percent-decoded (`%23` is `#`, `%2F` is `/`). @throws URIError */
const restOf = (url: string, prefix: string): string => decodeURIComponent(url.split("?")[0]!.slice(prefix.length))

/** A query integer in [min, max]; the description is on the string side so OpenAPI shows it. */
const Int = (min: number, max: number, what: string) =>
  Schema.String.annotations({ description: `${what}: an integer from ${min} to ${max}` }).pipe(
    Schema.compose(Schema.NumberFromString),
    Schema.int(),
    Schema.between(min, max, { message: () => `${what}: an integer from ${min} to ${max}` })
  )
const Bool = Schema.transform(Schema.Literal("true", "false", "1", "0"), Schema.Boolean, {
  strict: true,
  decode: (s) => s === "true" || s === "1",
  encode: (b) => (b ? "true" : "false")
})
const Kind = Schema.Literal(...KINDS)
const Layer = Schema.Literal("partition", "containers", "absorbed")

const GroupsQuery = Schema.Struct({
  layer: Schema.optional(Layer),
  kind: Schema.optional(Kind),
  parent: Schema.optional(Schema.String),
  block: Schema.optional(Schema.String),
  q: Schema.optional(Schema.String),
  min_nodes: Schema.optional(Int(0, 100000, "min_nodes")),
  members: Schema.optional(Bool)
})
const GroupQuery = Schema.Struct({ layer: Schema.optional(Layer) })
const TagsQuery = Schema.Struct({
  group: Schema.optional(Schema.String),
  kind: Schema.optional(Kind),
  block: Schema.optional(Schema.String),
  role: Schema.optional(Schema.Literal(...ROLES)),
  q: Schema.optional(Schema.String),
  named: Schema.optional(Bool),
  multi: Schema.optional(Bool),
  limit: Schema.optional(Int(1, MAX_LIMIT, "limit")),
  offset: Schema.optional(Int(0, 100000, "offset"))
})
const NeighborsQuery = Schema.Struct({
  node: Schema.String.annotations({ description: "die name or node number (#n accepted)" }),
  via: Schema.optional(Schema.Literal("all", "gate", "switch", "control")),
  direction: Schema.optional(Schema.Literal("both", "in", "out")),
  depth: Schema.optional(Int(1, MAX_DEPTH, "depth")),
  limit: Schema.optional(Int(1, MAX_LIMIT, "limit"))
})

const ok = (description: string) => ({ 200: { description, schema: Schema.Unknown } })
const refused = {
  304: { description: "the client's copy (If-None-Match) is current" },
  422: { description: "a query value out of its range or vocabulary", schema: Schema.Union(Route.ValidationErrorBody, errorBody) }
}

/** The atlas routes over `service` (derived on first request). */
export const atlasRoutes = (service: AtlasService): ReadonlyArray<Route.Route> => [
  Route.make({
    method: "GET",
    path: "/api/v1/atlas",
    summary: "What the die atlas holds: container kinds with sizes, blocks, node roles, walk bounds, counts",
    tags: ["chip", "atlas"],
    responses: { ...ok("atlas summary"), 304: refused[304] },
    handler: ({ request }) =>
      Effect.try({ try: () => service.summary(), catch: (e) => HttpError.of(503, `atlas unavailable: ${(e as Error).message}`) }).pipe(
        Effect.map((s) => cached(request, s.body, s.etag))
      )
  }),
  Route.make({
    method: "GET",
    path: "/api/v1/atlas/full",
    summary: "The whole atlas in one document (gzip-served when the client accepts gzip)",
    description: "Nodes, containers, gate legs `[gate, out, transistors]`, switches `[transistor, control, a, b]` and bundles. The alias table is in GET /api/v1/nodes.",
    tags: ["chip", "atlas"],
    responses: { ...ok("the atlas document"), 304: refused[304] },
    handler: ({ request }) =>
      Effect.try({ try: () => service.full(), catch: (e) => HttpError.of(503, `atlas unavailable: ${(e as Error).message}`) }).pipe(
        Effect.map((full) =>
          /\bgzip\b/.test(request.headers["accept-encoding"] ?? "")
            ? cached(request, full.gzip.body, full.gzip.etag, { "content-encoding": "gzip", vary: "accept-encoding" })
            : cached(request, full.json.body, full.json.etag, { vary: "accept-encoding" })
        )
      )
  }),
  Route.make({
    method: "GET",
    path: "/api/v1/groups",
    summary: "Containers, filtered: layer (partition 132 / containers 138 / absorbed 6), kind, parent, block, q, min_nodes, members",
    tags: ["chip", "atlas"],
    query: GroupsQuery,
    responses: { ...ok("{layer, total, groups}"), ...refused },
    handler: ({ query, request }) => answer(service, request, (atlas) => listGroups(atlas, query))
  }),
  Route.make({
    method: "GET",
    path: "/api/v1/groups/*",
    summary: "One container in full: parent, children, blocks, containers sharing nodes, bundles, members (the key is the rest of the path: alat:ADL/ABL)",
    tags: ["chip", "atlas"],
    query: GroupQuery,
    responses: { ...ok("the group"), ...refused, 404: { description: "no such key, or an absorbed key outside layer=containers", schema: errorBody } },
    handler: ({ query, request }) => answer(service, request, (atlas) => groupDetail(atlas, restOf(request.url, "/api/v1/groups/"), query.layer))
  }),
  Route.make({
    method: "GET",
    path: "/api/v1/tags",
    summary: "Partition nodes with their tags (group, containers, block, role, pull-up, centroid, degree), filtered and paged; total counts matches",
    tags: ["chip", "atlas"],
    query: TagsQuery,
    responses: { ...ok("{total, limit, offset, nodes}"), ...refused },
    handler: ({ query, request }) => answer(service, request, (atlas) => tags(atlas, query))
  }),
  Route.make({
    method: "GET",
    path: "/api/v1/node/*",
    summary: "One node by any die name or number (#n, %23n); the reference is the rest of the path",
    tags: ["chip", "atlas"],
    responses: { ...ok("the node"), 304: refused[304], 400: { description: "bad percent-encoding", schema: errorBody }, 404: { description: "no node by that name or number", schema: errorBody } },
    handler: ({ request }) => answer(service, request, (atlas) => nodeDetail(atlas, restOf(request.url, "/api/v1/node/")))
  }),
  Route.make({
    method: "GET",
    path: "/api/v1/neighbors",
    summary: "What a node reaches: drives, driven_by, channel, opens; via, direction, depth 1-4, limit up to 2000 (truncated when reached)",
    description: "Rails are reported (rail: true) and never walked; control and clock lines reached from elsewhere are reported with `stop` and never followed as signal paths.",
    tags: ["chip", "atlas"],
    query: NeighborsQuery,
    responses: { ...ok("{node, via, direction, depth, limit, count, truncated, relations}"), ...refused, 400: { description: "the node does not resolve", schema: errorBody } },
    handler: ({ query, request }) => answer(service, request, (atlas) => neighbors(atlas, query))
  })
]
