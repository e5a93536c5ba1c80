/**
 * HTTP routes of the registry on the `chip` listener, under `/api` (spec: "Registry reads",
 * "Authentication"; the writes the spec leaves open are designed here, REST-style):
 * - reads: `GET /api/v1/registry`, `GET /api/v1/registry/roms`, the avatar and cover routes and
 *   the cartridge download, each with an ETag (hash of the body) and 304 on `If-None-Match`;
 * - writes (`Authorization: Bearer <token>`): `POST /api/v1/registry/claim`,
 *   `PUT /api/v1/registry/b/{handle}/avatar`, `POST /api/v1/registry/b/{handle}/roms` (publish),
 *   `PUT|DELETE /api/v1/registry/b/{handle}/roms/{slug}` (update, unpublish),
 *   `PUT /api/v1/registry/b/{handle}/roms/{slug}/cover`.
 *
 * Write bodies are read here, not by the kernel, so a body past `limits.body_bytes` is refused
 * with 413 before it is buffered; a refusal by a write limit names it: `{error, limit, max}`.
 * 401 (one body for every bad token), 403 (another builder's handle, or not claimed), 404, 409
 * (claimed already, taken), 422 (schema, art, not a cartridge), 429 (`Retry-After`), 503 (store).
 */
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as JSONSchema from "effect/JSONSchema"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { HttpError } from "../../core/HttpError.ts"
import * as Route from "../../core/Route.ts"
import { Art, ArtInput, ClaimRequest, ClaimResponse, Handle, PublishRequest, RegistryErrorBody, RegistryIndex, RomEntry, RomList, Slug, UpdateRequest } from "./Api.ts"
import { type ArtMode, matches, type RegistryError, type RegistryService, type Rendered } from "./Registry.ts"

const Limit = Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 200)).annotations({ description: "1 to 200 (default 50)" })
const Offset = Schema.NumberFromString.pipe(Schema.int(), Schema.between(0, 1_000_000_000)).annotations({ description: "0 to 1,000,000,000 (default 0)" })
const ArtParam = Schema.Literal("inline", "none").annotations({ description: "inline (default) keeps each CHR block; none replaces it with the art's URL and keeps w and h" })
const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/
const Since = Schema.String.pipe(
  Schema.filter((s) => (ISO_8601.test(s) && !Number.isNaN(Date.parse(s))) || "expected an ISO 8601 timestamp, e.g. 2026-01-31T12:00:00Z")
).annotations({ description: "ISO 8601 timestamp: cartridges updated after it" })

const IndexQuery = Schema.Struct({ limit: Schema.optional(Limit), offset: Schema.optional(Offset), art: Schema.optional(ArtParam) })
const RomsQuery = Schema.Struct({ ...IndexQuery.fields, handle: Schema.optional(Handle), since: Schema.optional(Since) })
const HandleParams = Schema.Struct({ handle: Handle })
const RomParams = Schema.Struct({ handle: Handle, slug: Slug })

/** A registry failure as its HTTP answer; 401 and 429 carry their headers. */
const toHttp = (e: RegistryError): HttpError => {
  switch (e._tag) {
    case "Unauthorized":
      return new HttpError({ status: 401, body: { error: e.error }, headers: { "www-authenticate": 'Bearer realm="registry"' } })
    case "LimitExceeded":
      return new HttpError({
        status: e.status,
        body: { error: e.error, limit: e.limit, max: e.max },
        ...(e.retry_after_s !== undefined ? { headers: { "retry-after": String(e.retry_after_s) } } : {})
      })
    case "StoreUnavailable":
      return HttpError.of(503, "the registry store is unavailable; try again shortly")
    case "Forbidden":
      return HttpError.of(403, e.error)
    case "NotFound":
      return HttpError.of(404, e.error)
    case "Conflict":
      return HttpError.of(409, e.error)
    case "Invalid":
      return HttpError.of(422, e.error)
  }
}

/** A rendered read as its answer: 304 when `If-None-Match` matches, else the body with its ETag. */
const answer = (request: HttpServerRequest.HttpServerRequest, r: Rendered) =>
  matches(request.headers["if-none-match"], r.etag)
    ? HttpServerResponse.empty({ status: 304, headers: { etag: r.etag, "cache-control": "no-cache" } })
    : HttpServerResponse.text(r.body, { contentType: "application/json", headers: { etag: r.etag, "cache-control": "no-cache" } })

/** Reads a write's JSON body, at most `max` bytes, decoded by `schema` (413, 400, 422). */
const readBody = <A, I>(request: HttpServerRequest.HttpServerRequest, schema: Schema.Schema<A, I>, max: number) =>
  Effect.gen(function* () {
    const tooLarge = HttpError.of(413, `body_bytes: the request body is over ${max} bytes`, { limit: "body_bytes", max })
    const declared = Number(request.headers["content-length"])
    if (declared > max) return yield* Effect.fail(tooLarge)
    const text = yield* request.text.pipe(HttpIncomingMessage.withMaxBodySize(Option.some(max)), Effect.mapError(() => tooLarge))
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch (e) {
      return yield* Effect.fail(HttpError.of(400, `request body is not valid JSON: ${(e as Error).message}`))
    }
    const decoded = Schema.decodeUnknownEither(schema)(json, { errors: "all" })
    if (Either.isLeft(decoded)) {
      const detail = ParseResult.ArrayFormatter.formatErrorSync(decoded.left).map((i) => ({ loc: ["body", ...i.path.map((p) => (typeof p === "number" ? p : String(p)))], msg: i.message, type: i._tag }))
      return yield* Effect.fail(new HttpError({ status: 422, body: { error: "request body failed validation", detail } }))
    }
    return decoded.right
  })

const errors = (...statuses: Array<number>): Record<number, Route.ResponseDoc> =>
  Object.fromEntries(statuses.map((s) => [s, { description: ERROR_DOCS[s]!, schema: RegistryErrorBody }]))
const ERROR_DOCS: Record<number, string> = {
  400: "body is not JSON",
  401: "missing, unknown or revoked token (the same answer for each)",
  403: "the token is not claimed, or belongs to another builder",
  404: "no such builder or cartridge",
  409: "conflict: token claimed already, handle or slug taken",
  413: "a size limit (`limit`: body_bytes, cartridge_bytes, cartridge_json_bytes)",
  422: "schema, art or cartridge refused, or a count limit (`limit`: roms_per_builder, avatar_tiles, cover_tiles)",
  429: "writes_per_minute reached (Retry-After)",
  503: "the store is unavailable"
}
/**
 * The OpenAPI `requestBody` of a write whose body this module reads itself (see `readBody`):
 * the JSON Schema with its `$defs` inlined, since `#/$defs/...` refers to nothing in the document.
 */
const requestBody = (schema: Schema.Schema.Any) => {
  const js = JSONSchema.make(schema as Schema.Schema<unknown, unknown>, { target: "openApi3.1" }) as unknown as Record<string, unknown>
  const defs = (js.$defs ?? {}) as Record<string, unknown>
  const inline = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(inline)
      : v && typeof v === "object"
      ? typeof (v as { $ref?: unknown }).$ref === "string"
        ? inline(defs[((v as { $ref: string }).$ref).replace("#/$defs/", "")])
        : Object.fromEntries(Object.entries(v).filter(([k]) => k !== "$defs" && k !== "$schema").map(([k, x]) => [k, inline(x)]))
      : v
  return { requestBody: { required: true, content: { "application/json": { schema: inline(js) } } } }
}
const WRITE_ERRORS = [400, 401, 403, 404, 409, 413, 422, 429, 503]

/** The registry's routes over `registry`. */
export const routes = (registry: RegistryService): ReadonlyArray<Route.Route> => {
  const max = registry.limits.body_bytes
  /** An authenticated, counted write with a JSON body decoded by `schema`. */
  const write = <A, I, R>(request: HttpServerRequest.HttpServerRequest, schema: Schema.Schema<A, I> | undefined, f: (token: Parameters<RegistryService["claim"]>[0], body: A) => Effect.Effect<R, RegistryError | HttpError>) =>
    Effect.gen(function* () {
      const token = yield* registry.authorizeWrite(request.headers.authorization).pipe(Effect.mapError(toHttp))
      const body = schema ? yield* readBody(request, schema, max) : (undefined as A)
      return yield* f(token, body).pipe(Effect.mapError((e) => (e instanceof HttpError ? e : toHttp(e))))
    })
  const read = (request: HttpServerRequest.HttpServerRequest, r: Effect.Effect<Rendered, RegistryError>) =>
    r.pipe(Effect.map((x) => answer(request, x)), Effect.mapError(toHttp))
  const listing = (q: { limit?: number; offset?: number; art?: ArtMode }) => ({ limit: q.limit ?? 50, offset: q.offset ?? 0, art: q.art ?? "inline" })

  return [
    Route.make({
      method: "GET",
      path: "/api/v1/registry",
      summary: "Builders (newest first), the latest published cartridges, and the write limits",
      description: "ETag is a hash of the body (the two art modes differ); If-None-Match answers 304.",
      tags: ["registry"],
      query: IndexQuery,
      responses: { 200: { description: "the registry", schema: RegistryIndex }, 304: { description: "not modified" }, ...errors(503) },
      handler: ({ query, request }) => read(request, registry.index(listing(query)))
    }),
    Route.make({
      method: "GET",
      path: "/api/v1/registry/roms",
      summary: "Every published cartridge, newest first; filtered by handle and since",
      description: "`count` is the number matching the filter, not the number returned. ETag and If-None-Match as for GET /v1/registry.",
      tags: ["registry"],
      query: RomsQuery,
      responses: { 200: { description: "cartridges", schema: RomList }, 304: { description: "not modified" }, ...errors(503) },
      handler: ({ query, request }) =>
        read(request, registry.roms({ ...listing(query), ...(query.handle ? { handle: query.handle } : {}), ...(query.since ? { since: new Date(query.since).toISOString() } : {}) }))
    }),
    Route.make({
      method: "GET",
      path: "/api/v1/registry/b/:handle/avatar",
      summary: "One builder's avatar as {w, h, chr}",
      tags: ["registry"],
      params: HandleParams,
      responses: { 200: { description: "the avatar", schema: Art }, 304: { description: "not modified" }, ...errors(404, 503) },
      handler: ({ params, request }) => read(request, registry.avatar(params.handle))
    }),
    Route.make({
      method: "GET",
      path: "/api/v1/registry/b/:handle/roms/:slug/cover",
      summary: "One cartridge's cover as {w, h, chr}",
      tags: ["registry"],
      params: RomParams,
      responses: { 200: { description: "the cover", schema: Art }, 304: { description: "not modified" }, ...errors(404, 503) },
      handler: ({ params, request }) => read(request, registry.cover(params.handle, params.slug))
    }),
    Route.make({
      method: "GET",
      path: "/api/v1/registry/b/:handle/roms/:slug/cartridge",
      summary: "Download a published cartridge (gzip, byte for byte as published)",
      tags: ["registry"],
      params: RomParams,
      responses: { 200: { description: "the cartridge", contentType: "application/gzip" }, 304: { description: "not modified" }, ...errors(404, 503) },
      handler: ({ params, request }) =>
        registry.cartridge(params.handle, params.slug).pipe(
          Effect.map((c) =>
            matches(request.headers["if-none-match"], c.etag)
              ? HttpServerResponse.empty({ status: 304, headers: { etag: c.etag } })
              : HttpServerResponse.uint8Array(c.bytes, {
                  contentType: "application/gzip",
                  headers: { etag: c.etag, "content-disposition": `attachment; filename="${params.handle}-${params.slug}.cart.gz"` }
                })
          ),
          Effect.mapError(toHttp)
        )
    }),
    Route.make({
      method: "POST",
      path: "/api/v1/registry/claim",
      summary: "Claim a handle: binds this bearer token to a new builder (once per token)",
      description: "Handle grammar: 2-32 characters, a-z, 0-9 and single dashes, starting with a letter. Name: 1-64 characters.",
      tags: ["registry"],
      security: ["bearer"],
      openapi: requestBody(ClaimRequest),
      responses: { 201: { description: "claimed", schema: ClaimResponse }, ...errors(...WRITE_ERRORS.filter((s) => s !== 403 && s !== 404)) },
      handler: ({ request }) => write(request, ClaimRequest, (token, body) => Effect.map(registry.claim(token, body), (r) => Route.reply(201, r)))
    }),
    Route.make({
      method: "PUT",
      path: "/api/v1/registry/b/:handle/avatar",
      summary: "Set the builder's avatar: {w, h, tiles} (tiles row-major, each eight strings of 0-3); stored as chr",
      tags: ["registry"],
      security: ["bearer"],
      params: HandleParams,
      openapi: requestBody(ArtInput),
      responses: { 200: { description: "the avatar as stored", schema: Art }, ...errors(...WRITE_ERRORS) },
      handler: ({ params, request }) => write(request, ArtInput, (token, art) => registry.setAvatar(token, params.handle, art))
    }),
    Route.make({
      method: "POST",
      path: "/api/v1/registry/b/:handle/roms",
      summary: "Publish a cartridge under a slug: {slug, cartridge (base64 of the minted gzip), cover?}",
      description: "The cartridge is verified again on arrival (format, version, source assembles to its bytes, layout, tiles, minted digest).",
      tags: ["registry"],
      security: ["bearer"],
      params: HandleParams,
      openapi: requestBody(PublishRequest),
      responses: { 201: { description: "published", schema: RomEntry }, ...errors(...WRITE_ERRORS) },
      handler: ({ params, request }) => write(request, PublishRequest, (token, body) => Effect.map(registry.publish(token, params.handle, body), (r) => Route.reply(201, r)))
    }),
    Route.make({
      method: "PUT",
      path: "/api/v1/registry/b/:handle/roms/:slug",
      summary: "Replace a published cartridge: {cartridge}",
      tags: ["registry"],
      security: ["bearer"],
      params: RomParams,
      openapi: requestBody(UpdateRequest),
      responses: { 200: { description: "updated", schema: RomEntry }, ...errors(...WRITE_ERRORS) },
      handler: ({ params, request }) => write(request, UpdateRequest, (token, body) => registry.update(token, params.handle, params.slug, body.cartridge))
    }),
    Route.make({
      method: "DELETE",
      path: "/api/v1/registry/b/:handle/roms/:slug",
      summary: "Unpublish a cartridge",
      tags: ["registry"],
      security: ["bearer"],
      params: RomParams,
      responses: { 204: { description: "unpublished" }, ...errors(401, 403, 404, 429, 503) },
      handler: ({ params, request }) => write(request, undefined, (token) => Effect.as(registry.unpublish(token, params.handle, params.slug), HttpServerResponse.empty({ status: 204 })))
    }),
    Route.make({
      method: "PUT",
      path: "/api/v1/registry/b/:handle/roms/:slug/cover",
      summary: "Set a cartridge's cover: {w, h, tiles}; stored as chr",
      tags: ["registry"],
      security: ["bearer"],
      params: RomParams,
      openapi: requestBody(ArtInput),
      responses: { 200: { description: "the cover as stored", schema: Art }, ...errors(...WRITE_ERRORS) },
      handler: ({ params, request }) => write(request, ArtInput, (token, art) => registry.setCover(token, params.handle, params.slug, art))
    })
  ]
}
