/**
 * Wire resources of the registry (spec: chip-simulation.md, "Registry art", "Registry reads",
 * "Authentication"): request bodies of the writes, art in and out, builder and cartridge entries,
 * the two listings, and the error bodies. The handle, slug and name grammars are here.
 */
import * as Schema from "effect/Schema"
import { RegistryLimits } from "./Config.ts"

/** Handle grammar: 2-32 characters, lower-case letters, digits and single dashes, starting with a letter. */
export const HANDLE_PATTERN = /^[a-z](?:[a-z0-9]|-(?=[a-z0-9])){1,31}$/
/** Slug grammar: 1-48 characters, lower-case letters, digits and single dashes, starting with a letter or digit. */
export const SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,47}$/

/** A builder handle (see `HANDLE_PATTERN`). */
export const Handle = Schema.String.pipe(
  Schema.pattern(HANDLE_PATTERN, { message: () => "a handle is 2-32 characters: lower-case letters, digits and single dashes, starting with a letter" })
).annotations({ identifier: "RegistryHandle", description: "2-32 characters: a-z, 0-9 and single dashes, starting with a letter (e.g. `ada-l`)" })

/** A cartridge slug (see `SLUG_PATTERN`). */
export const Slug = Schema.String.pipe(
  Schema.pattern(SLUG_PATTERN, { message: () => "a slug is 1-48 characters: lower-case letters, digits and single dashes" })
).annotations({ identifier: "RegistrySlug", description: "1-48 characters: a-z, 0-9 and single dashes (e.g. `snake-2`)" })

/** A builder's display name: 1-64 characters, no control characters. */
export const BuilderName = Schema.String.pipe(
  Schema.filter((s) => (s.trim().length >= 1 && [...s].length <= 64 && !/[\u0000-\u001f\u007f]/.test(s)) || "a name is 1-64 characters without control characters")
).annotations({ identifier: "RegistryBuilderName" })

/** `POST /v1/registry/claim`. */
export const ClaimRequest = Schema.Struct({ handle: Handle, name: BuilderName }).annotations({ identifier: "RegistryClaimRequest" })

/** The claim's answer (201). */
export const ClaimResponse = Schema.Struct({ handle: Schema.String, name: Schema.String, claimed_at: Schema.String }).annotations({ identifier: "RegistryClaimResponse" })

const TileRow = Schema.String.pipe(Schema.pattern(/^[0-3]{8}$/, { message: () => "a tile row is eight characters 0 to 3" }))

/** Art as sent: `w` x `h` tiles, given row-major, each tile eight strings of eight `0`-`3`. */
export const ArtInput = Schema.Struct({
  w: Schema.Int.pipe(Schema.positive()).annotations({ description: "width in 8-pixel tiles" }),
  h: Schema.Int.pipe(Schema.positive()).annotations({ description: "height in 8-pixel tiles" }),
  tiles: Schema.Array(Schema.Array(TileRow).pipe(Schema.itemsCount(8))).annotations({ description: "w*h tiles in row-major order, each eight rows of eight characters 0-3" })
}).annotations({ identifier: "RegistryArtInput" })

/** Art as served inline: `chr` is the hex of its 16-byte tiles in row-major order. */
export const Art = Schema.Struct({ w: Schema.Int, h: Schema.Int, chr: Schema.String }).annotations({ identifier: "RegistryArt" })
/** Art with `art=none`: where to fetch it instead of `chr`. */
export const ArtLink = Schema.Struct({ w: Schema.Int, h: Schema.Int, url: Schema.String }).annotations({ identifier: "RegistryArtLink" })
const ArtOut = Schema.NullOr(Schema.Union(Art, ArtLink))

/** `POST /v1/registry/b/{handle}/roms`: a cartridge as minted by `POST /v1/cartridge` (gzip, base64). */
export const PublishRequest = Schema.Struct({
  slug: Slug,
  cartridge: Schema.String.annotations({ description: "the gzipped cartridge exactly as minted, base64" }),
  cover: Schema.optional(ArtInput)
}).annotations({ identifier: "RegistryPublishRequest" })

/** `PUT /v1/registry/b/{handle}/roms/{slug}`: a new cartridge for a published slug. */
export const UpdateRequest = Schema.Struct({
  cartridge: Schema.String.annotations({ description: "the gzipped cartridge exactly as minted, base64" })
}).annotations({ identifier: "RegistryUpdateRequest" })

/** A builder as listed: handle, name, avatar, and the count of published cartridges. */
export const BuilderEntry = Schema.Struct({ handle: Schema.String, name: Schema.String, avatar: ArtOut, count: Schema.Int }).annotations({ identifier: "RegistryBuilder" })

/** A published cartridge as listed. */
export const RomEntry = Schema.Struct({
  handle: Schema.String,
  slug: Schema.String,
  name: Schema.String,
  cover: ArtOut,
  size: Schema.Int.annotations({ description: "bytes of the gzipped cartridge" }),
  published_at: Schema.String,
  updated_at: Schema.String,
  cartridge_url: Schema.String
}).annotations({ identifier: "RegistryRom" })

/** `GET /v1/registry`. */
export const RegistryIndex = Schema.Struct({
  count: Schema.Int.annotations({ description: "builders in the registry" }),
  limit: Schema.Int,
  offset: Schema.Int,
  builders: Schema.Array(BuilderEntry),
  latest: Schema.Array(RomEntry).annotations({ description: "the ten most recently published cartridges" }),
  limits: RegistryLimits
}).annotations({ identifier: "RegistryIndex" })

/** `GET /v1/registry/roms`. */
export const RomList = Schema.Struct({
  count: Schema.Int.annotations({ description: "cartridges matching the filter (not the number returned)" }),
  limit: Schema.Int,
  offset: Schema.Int,
  roms: Schema.Array(RomEntry)
}).annotations({ identifier: "RegistryRomList" })

/** An error body; `limit` names the write limit a refusal enforces (a key of `limits`). */
export const RegistryErrorBody = Schema.Struct({
  error: Schema.String,
  limit: Schema.optional(Schema.String),
  max: Schema.optional(Schema.Number)
}).annotations({ identifier: "RegistryErrorBody" })
