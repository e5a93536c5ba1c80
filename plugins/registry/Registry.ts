/**
 * `Registry`: the builder registry (spec: chip-simulation.md, "Registry art", "Registry token",
 * "Registry reads", "Authentication") over a `RegistryStore`.
 *
 * Tokens are `rgt_<id>_<secret>`: the id (16 hex) is public and keys the row, the secret (32
 * random bytes, base64url) is kept only as its SHA-256. A presented token is always hashed and
 * compared in constant time, against a fixed dummy when the id is unknown, so unknown, malformed
 * and revoked tokens take the same path and get the same `Unauthorized`.
 *
 * Reads are rendered once per catalogue version and query, and cached in this process; the ETag
 * is a hash of the exact body, so `If-None-Match` is answered 304 from the cache without reading
 * anything but the version.
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import { CartridgeFormatError, pixelsToChr, TileFormatError, verifyCartridge } from "../chip-sim/Contract.ts"
import type { ArtInput, ClaimRequest, PublishRequest } from "./Api.ts"
import type { RegistryLimits } from "./Config.ts"
import { type CartridgeInput, type RegistryStoreService, RegistryStore, type RomRow, type StoredArt, StoreUnavailable, type TokenRow } from "./Store.ts"

/** No valid token (unknown, malformed, revoked or missing): one refusal for all (401). */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", { error: Schema.String }, HttpApiSchema.annotations({ status: 401 })) {}
/** A valid token that may not do this (not claimed yet, or another builder's handle) (403). */
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", { error: Schema.String }, HttpApiSchema.annotations({ status: 403 })) {}
/** No such builder, cartridge or art (404). */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", { error: Schema.String }, HttpApiSchema.annotations({ status: 404 })) {}
/** The token has claimed already, the handle or slug is taken (409). */
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", { error: Schema.String }, HttpApiSchema.annotations({ status: 409 })) {}
/** Input that is well-formed JSON but not acceptable: art that does not add up, a cartridge that is not one (422). */
export class Invalid extends Schema.TaggedError<Invalid>()("Invalid", { error: Schema.String }, HttpApiSchema.annotations({ status: 422 })) {}
/** A write limit (a key of `limits`) refused the write: 413 sizes, 422 counts and tiles, 429 rate. */
export class LimitExceeded extends Schema.TaggedError<LimitExceeded>()("LimitExceeded", {
  error: Schema.String,
  limit: Schema.String,
  max: Schema.Number,
  status: Schema.Int,
  retry_after_s: Schema.optional(Schema.Int)
}) {}

/** Every failure a registry operation can end in. */
export type RegistryError = Unauthorized | Forbidden | NotFound | Conflict | Invalid | LimitExceeded | StoreUnavailable

/** A rendered read: the JSON body and its ETag. */
export interface Rendered {
  readonly etag: string
  readonly body: string
}

/** `art` mode of the listings: `inline` keeps `chr`, `none` replaces it with the art's URL. */
export type ArtMode = "inline" | "none"

/** A token listed by `platform registry token list`: never the token itself. */
export interface TokenInfo {
  readonly id: string
  readonly state: TokenRow["state"]
  readonly label: string
  readonly handle: string | null
  readonly minted_at: string
  readonly claimed_at: string | null
  readonly revoked_at: string | null
}

/** The registry service. */
export interface RegistryService {
  readonly limits: RegistryLimits
  /** A new token: the only time it is seen. */
  readonly mintToken: (label: string) => Effect.Effect<{ id: string; token: string }, StoreUnavailable>
  /** True when it was live; false when unknown or revoked already. */
  readonly revokeToken: (id: string) => Effect.Effect<boolean, StoreUnavailable>
  readonly tokens: () => Effect.Effect<ReadonlyArray<TokenInfo>, StoreUnavailable>
  /** The token of an `Authorization: Bearer` header, counted against `writes_per_minute`. */
  readonly authorizeWrite: (authorization: string | undefined) => Effect.Effect<TokenRow, Unauthorized | LimitExceeded | StoreUnavailable>
  readonly claim: (token: TokenRow, body: typeof ClaimRequest.Type) => Effect.Effect<{ handle: string; name: string; claimed_at: string }, RegistryError>
  readonly setAvatar: (token: TokenRow, handle: string, art: typeof ArtInput.Type) => Effect.Effect<StoredArt, RegistryError>
  readonly publish: (token: TokenRow, handle: string, body: typeof PublishRequest.Type) => Effect.Effect<unknown, RegistryError>
  readonly update: (token: TokenRow, handle: string, slug: string, cartridge: string) => Effect.Effect<unknown, RegistryError>
  readonly setCover: (token: TokenRow, handle: string, slug: string, art: typeof ArtInput.Type) => Effect.Effect<StoredArt, RegistryError>
  readonly unpublish: (token: TokenRow, handle: string, slug: string) => Effect.Effect<void, RegistryError>
  readonly index: (q: { limit: number; offset: number; art: ArtMode }) => Effect.Effect<Rendered, StoreUnavailable>
  readonly roms: (q: { limit: number; offset: number; art: ArtMode; handle?: string; since?: string }) => Effect.Effect<Rendered, StoreUnavailable>
  readonly avatar: (handle: string) => Effect.Effect<Rendered, NotFound | StoreUnavailable>
  readonly cover: (handle: string, slug: string) => Effect.Effect<Rendered, NotFound | StoreUnavailable>
  readonly cartridge: (handle: string, slug: string) => Effect.Effect<{ bytes: Uint8Array; etag: string; name: string }, NotFound | StoreUnavailable>
}

/** The registry service tag. */
export class Registry extends Context.Tag("@platform/registry/Registry")<Registry, RegistryService>() {}

const TOKEN = /^rgt_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/
const sha256 = (s: string | Uint8Array) => createHash("sha256").update(s).digest("hex")
// Compared against when the id is unknown, so that path costs what a known id costs.
const DUMMY_HASH = sha256("registry: no such token")
const REFUSED = "missing, unknown or revoked registry token (Authorization: Bearer <token>)"

/** The ETag of a body: a quoted hash of its bytes. */
export const etagOf = (body: string | Uint8Array) => `"${sha256(body).slice(0, 32)}"`

/** True when an `If-None-Match` header value matches `etag` (lists, weak tags and `*`). */
export const matches = (ifNoneMatch: string | undefined, etag: string): boolean =>
  ifNoneMatch !== undefined && ifNoneMatch.split(",").some((t) => {
    const tag = t.trim()
    return tag === "*" || tag === etag || tag === `W/${etag}`
  })

/** `/api/v1/registry/b/...` paths of art and downloads (what `art=none` links to). */
export const paths = {
  avatar: (handle: string) => `/api/v1/registry/b/${handle}/avatar`,
  cover: (handle: string, slug: string) => `/api/v1/registry/b/${handle}/roms/${slug}/cover`,
  cartridge: (handle: string, slug: string) => `/api/v1/registry/b/${handle}/roms/${slug}/cartridge`
}

const now = () => new Date().toISOString()
const MAX_CACHED = 1024

/** The registry over `store`, held to `limits`. */
export const make = (store: RegistryStoreService, limits: RegistryLimits): RegistryService => {
  const cache = new Map<string, { version: number; rendered: Rendered }>()
  /** The body of `key` at the current catalogue version, rendered by `render` when stale. */
  const cached = <E>(key: string, render: () => Effect.Effect<unknown, E>) =>
    Effect.gen(function* () {
      const version = yield* store.version()
      const hit = cache.get(key)
      if (hit && hit.version === version) return hit.rendered
      const body = JSON.stringify(yield* render())
      const rendered = { etag: etagOf(body), body }
      if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!)
      cache.set(key, { version, rendered })
      return rendered
    })

  const owner = (token: TokenRow, handle: string) =>
    token.state !== "bound"
      ? Effect.fail(new Forbidden({ error: "this token has not claimed a handle yet: POST /api/v1/registry/claim first" }))
      : token.handle !== handle
      ? Effect.fail(new Forbidden({ error: `this token belongs to builder "${token.handle}", not "${handle}"` }))
      : Effect.void

  const toArt = (input: typeof ArtInput.Type, limit: "avatar_tiles" | "cover_tiles"): Effect.Effect<StoredArt, Invalid | LimitExceeded> => {
    const max = limits[limit]
    if (input.w > max.w || input.h > max.h) {
      return Effect.fail(new LimitExceeded({ error: `${limit}: art is ${input.w}x${input.h} tiles; at most ${max.w}x${max.h}`, limit, max: max.w * max.h, status: 422 }))
    }
    if (input.tiles.length !== input.w * input.h) {
      return Effect.fail(new Invalid({ error: `art is ${input.w}x${input.h} tiles, so ${input.w * input.h} tiles in row-major order; got ${input.tiles.length}` }))
    }
    return Effect.try({
      try: () => ({ w: input.w, h: input.h, chr: Buffer.from(pixelsToChr(input.tiles)).toString("hex") }),
      catch: (e) => new Invalid({ error: e instanceof TileFormatError ? e.message.replace("tiles.pixels", "tiles") : String(e) })
    })
  }

  /** A sent cartridge (base64 of gzip) checked against the limits and the cartridge format. */
  const toCartridge = (base64: string): Effect.Effect<CartridgeInput, Invalid | LimitExceeded> => {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(base64) || base64.length % 4 === 1) return Effect.fail(new Invalid({ error: "cartridge: expected base64 of the gzipped cartridge" }))
    const bytes = Buffer.from(base64, "base64")
    if (bytes.length > limits.cartridge_bytes) {
      return Effect.fail(new LimitExceeded({ error: `cartridge_bytes: the cartridge is ${bytes.length} bytes; at most ${limits.cartridge_bytes}`, limit: "cartridge_bytes", max: limits.cartridge_bytes, status: 413 }))
    }
    return Effect.try({
      try: () => ({ name: verifyCartridge(bytes, limits.cartridge_json_bytes).meta.name, bytes, digest: sha256(bytes) }),
      catch: (e) =>
        e instanceof CartridgeFormatError && e.reason.startsWith("inflates past")
          ? new LimitExceeded({ error: `cartridge_json_bytes: the cartridge ${e.reason}`, limit: "cartridge_json_bytes", max: limits.cartridge_json_bytes, status: 413 })
          : new Invalid({ error: e instanceof CartridgeFormatError ? e.message : `not a cartridge: ${String(e)}` })
    })
  }

  const artOut = (a: StoredArt | null, mode: ArtMode, url: string) => (a === null ? null : mode === "inline" ? a : { w: a.w, h: a.h, url })
  const romOut = (r: RomRow, mode: ArtMode) => ({
    handle: r.handle,
    slug: r.slug,
    name: r.name,
    cover: artOut(r.cover, mode, paths.cover(r.handle, r.slug)),
    size: r.size,
    published_at: r.published_at,
    updated_at: r.updated_at,
    cartridge_url: paths.cartridge(r.handle, r.slug)
  })

  return {
    limits,
    mintToken: (label) =>
      Effect.gen(function* () {
        const id = randomBytes(8).toString("hex")
        const secret = randomBytes(32).toString("base64url")
        yield* store.insertToken({ id, secretHash: sha256(secret), label, at: now() })
        return { id, token: `rgt_${id}_${secret}` }
      }),
    revokeToken: (id) => store.revokeToken(id, now()),
    tokens: () => Effect.map(store.tokens(), (rows) => rows.map(({ secret_hash: _, ...info }) => info)),
    authorizeWrite: (authorization) =>
      Effect.gen(function* () {
        const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")
        const parts = m ? TOKEN.exec(m[1]!) : null
        const row = parts ? yield* store.token(parts[1]!) : undefined
        const presented = Buffer.from(sha256(parts ? parts[2]! : "-"), "hex")
        const equal = timingSafeEqual(presented, Buffer.from(row?.secret_hash ?? DUMMY_HASH, "hex"))
        if (!row || !equal || row.state === "revoked") return yield* Effect.fail(new Unauthorized({ error: REFUSED }))
        const window = Math.floor(Date.now() / 60_000)
        const count = yield* store.countWrite(row.id, window)
        if (count > limits.writes_per_minute) {
          return yield* Effect.fail(new LimitExceeded({
            error: `writes_per_minute: this token made ${limits.writes_per_minute} writes this minute; at most ${limits.writes_per_minute}`,
            limit: "writes_per_minute",
            max: limits.writes_per_minute,
            status: 429,
            retry_after_s: Math.max(1, Math.ceil(((window + 1) * 60_000 - Date.now()) / 1000))
          }))
        }
        return row
      }),
    claim: (token, body) =>
      Effect.gen(function* () {
        if (token.state !== "minted") return yield* Effect.fail(new Conflict({ error: `this token has already claimed the handle "${token.handle}"; a token claims once` }))
        const at = now()
        const outcome = yield* store.claim(token.id, body.handle, body.name, at)
        if (outcome === "token_used") return yield* Effect.fail(new Conflict({ error: "this token has already claimed a handle; a token claims once" }))
        if (outcome === "handle_taken") return yield* Effect.fail(new Conflict({ error: `the handle "${body.handle}" is taken` }))
        return { handle: body.handle, name: body.name, claimed_at: at }
      }),
    setAvatar: (token, handle, input) =>
      Effect.gen(function* () {
        yield* owner(token, handle)
        const a = yield* toArt(input, "avatar_tiles")
        if (!(yield* store.setAvatar(handle, a, now()))) return yield* Effect.fail(new NotFound({ error: `no builder "${handle}"` }))
        return a
      }),
    publish: (token, handle, body) =>
      Effect.gen(function* () {
        yield* owner(token, handle)
        const cartridge = yield* toCartridge(body.cartridge)
        const cover = body.cover ? yield* toArt(body.cover, "cover_tiles") : undefined
        const at = now()
        const out = yield* store.publish(handle, body.slug, cartridge, limits.roms_per_builder, at)
        if (out._tag === "exists") return yield* Effect.fail(new Conflict({ error: `"${body.slug}" is published already; PUT ${paths.cartridge(handle, body.slug).replace(/\/cartridge$/, "")} updates it` }))
        if (out._tag === "limit") {
          return yield* Effect.fail(new LimitExceeded({ error: `roms_per_builder: "${handle}" holds ${limits.roms_per_builder} cartridges; at most ${limits.roms_per_builder}`, limit: "roms_per_builder", max: limits.roms_per_builder, status: 422 }))
        }
        if (cover) yield* store.setCover(handle, body.slug, cover, at)
        return romOut({ ...out.rom, cover: cover ?? null }, "inline")
      }),
    update: (token, handle, slug, base64) =>
      Effect.gen(function* () {
        yield* owner(token, handle)
        const cartridge = yield* toCartridge(base64)
        const r = yield* store.update(handle, slug, cartridge, now())
        if (!r) return yield* Effect.fail(new NotFound({ error: `"${handle}" has no cartridge "${slug}"` }))
        return romOut(r, "inline")
      }),
    setCover: (token, handle, slug, input) =>
      Effect.gen(function* () {
        yield* owner(token, handle)
        const a = yield* toArt(input, "cover_tiles")
        if (!(yield* store.setCover(handle, slug, a, now()))) return yield* Effect.fail(new NotFound({ error: `"${handle}" has no cartridge "${slug}"` }))
        return a
      }),
    unpublish: (token, handle, slug) =>
      Effect.gen(function* () {
        yield* owner(token, handle)
        if (!(yield* store.unpublish(handle, slug, now()))) return yield* Effect.fail(new NotFound({ error: `"${handle}" has no cartridge "${slug}"` }))
      }),
    index: (q) =>
      cached(`index ${q.limit} ${q.offset} ${q.art}`, () =>
        Effect.gen(function* () {
          const { count, builders } = yield* store.builders(q.limit, q.offset)
          const latest = yield* store.roms({ limit: 10, offset: 0 })
          return {
            count,
            limit: q.limit,
            offset: q.offset,
            builders: builders.map((b) => ({ handle: b.handle, name: b.name, avatar: artOut(b.avatar, q.art, paths.avatar(b.handle)), count: b.count })),
            latest: latest.roms.map((r) => romOut(r, q.art)),
            limits
          }
        })),
    roms: (q) =>
      cached(`roms ${q.limit} ${q.offset} ${q.art} ${q.handle ?? ""} ${q.since ?? ""}`, () =>
        Effect.map(store.roms(q), ({ count, roms }) => ({ count, limit: q.limit, offset: q.offset, roms: roms.map((r) => romOut(r, q.art)) }))),
    avatar: (handle) =>
      cached(`avatar ${handle}`, () =>
        Effect.flatMap(store.avatar(handle), (a) =>
          a ? Effect.succeed(a) : Effect.fail(new NotFound({ error: a === null ? `"${handle}" has no avatar` : `no builder "${handle}"` })))),
    cover: (handle, slug) =>
      cached(`cover ${handle} ${slug}`, () =>
        Effect.flatMap(store.rom(handle, slug), (r) =>
          r?.cover ? Effect.succeed(r.cover) : Effect.fail(new NotFound({ error: r ? `"${handle}/${slug}" has no cover` : `"${handle}" has no cartridge "${slug}"` })))),
    cartridge: (handle, slug) =>
      Effect.flatMap(store.cartridge(handle, slug), (c) =>
        c ? Effect.succeed({ bytes: c.bytes, etag: `"${c.digest.slice(0, 32)}"`, name: c.name }) : Effect.fail(new NotFound({ error: `"${handle}" has no cartridge "${slug}"` })))
  }
}

/** The registry over the `RegistryStore` in context. */
export const layer = (limits: RegistryLimits): Layer.Layer<Registry, never, RegistryStore> =>
  Layer.effect(Registry, Effect.map(RegistryStore, (store) => make(store, limits)))
