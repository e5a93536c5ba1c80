/**
 * Config of `plugins.registry`: which store (the embedded SQLite file in the data directory, or
 * PostgreSQL for several instances on one database) and the write limits every builder is held
 * to (returned by `GET /v1/registry` as `limits`).
 */
import * as Schema from "effect/Schema"
import { configOption } from "../../core/Plugin.ts"

const opt = configOption
const Tiles = (w: number, h: number, what: string) =>
  opt(Schema.Struct({ w: Schema.Int.pipe(Schema.between(1, 64)), h: Schema.Int.pipe(Schema.between(1, 64)) }), { w, h }, `largest ${what}, in 8-pixel tiles`)

/** The write limits (units in the names: bytes, tiles, counts, per minute). */
export const RegistryLimits = Schema.Struct({
  body_bytes: opt(Schema.Int.pipe(Schema.between(1024, 64 * 1024 * 1024)), 512 * 1024, "largest request body of a write, bytes (413)"),
  cartridge_bytes: opt(Schema.Int.pipe(Schema.between(64, 16 * 1024 * 1024)), 256 * 1024, "largest cartridge as sent (gzip), bytes (413)"),
  cartridge_json_bytes: opt(Schema.Int.pipe(Schema.between(1024, 64 * 1024 * 1024)), 4 * 1024 * 1024, "largest cartridge document once inflated, bytes (413)"),
  roms_per_builder: opt(Schema.Int.pipe(Schema.between(1, 100_000)), 50, "published cartridges one builder may hold (422)"),
  writes_per_minute: opt(Schema.Int.pipe(Schema.between(1, 1_000_000)), 60, "writes one token may make per minute, claim included (429)"),
  avatar_tiles: Tiles(8, 8, "avatar"),
  cover_tiles: Tiles(32, 30, "cover")
}).annotations({ identifier: "RegistryLimits" })
export type RegistryLimits = typeof RegistryLimits.Type

/** Config of `plugins.registry`. */
export const RegistryConfig = Schema.Struct({
  store: opt(Schema.Literal("embedded", "postgres"), "embedded", "embedded: one SQLite file in the data directory (registry.sqlite); postgres: the database at postgres.url, shared by every instance"),
  postgres: opt(
    Schema.Struct({
      url: Schema.String.annotations({ description: "connection string, postgres://user@host:port/database" }),
      pool_size: opt(Schema.Int.pipe(Schema.between(1, 100)), 10, "connections per instance")
    }),
    { url: "postgres://127.0.0.1:5432/registry", pool_size: 10 },
    "PostgreSQL connection (store: postgres)"
  ),
  limits: opt(RegistryLimits, Schema.decodeSync(RegistryLimits)({}), "write limits")
}).annotations({ identifier: "RegistryConfig" })
export type RegistryConfig = typeof RegistryConfig.Type
