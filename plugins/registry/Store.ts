/**
 * `RegistryStore`: the registry's tables (tokens, builders, published cartridges, write-rate
 * windows, a catalogue version) behind one service, with two Layers over the same schema and
 * statements: `layerSqlite(file)` (embedded, one file) and `layerPostgres(url)` (several
 * instances on one database). `layerConfig` picks one from `plugins.registry`.
 *
 * Migrations (`migrations/NNNN_name.sql`) run when the layer is built, in one transaction
 * (PostgreSQL: under an advisory lock, so instances starting together apply them once).
 * Every catalogue write bumps `registry_state.version` in its transaction; readers cache
 * rendered bodies against it. Counts that limits depend on change inside the write's own
 * statement (`rom_count < max`), so concurrent writers on several instances never overshoot.
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"
import type { RegistryConfig } from "./Config.ts"
import { openPostgres, openSqlite, type Query, type SqlClient } from "./Sql.ts"

/** The database cannot be reached or refused a statement (HTTP 503; the reason is logged). */
export class StoreUnavailable extends Schema.TaggedError<StoreUnavailable>()("StoreUnavailable", {
  error: Schema.String
}, HttpApiSchema.annotations({ status: 503 })) {}

/** Art as stored: `w` x `h` tiles, `chr` hex of their 16-byte tiles in row-major order. */
export interface StoredArt {
  readonly w: number
  readonly h: number
  readonly chr: string
}

/** A token row: never the token, only the hash of its secret. */
export interface TokenRow {
  readonly id: string
  readonly secret_hash: string
  readonly state: "minted" | "bound" | "revoked"
  readonly label: string
  readonly handle: string | null
  readonly minted_at: string
  readonly claimed_at: string | null
  readonly revoked_at: string | null
}

/** A builder as listed. */
export interface BuilderRow {
  readonly handle: string
  readonly name: string
  readonly count: number
  readonly avatar: StoredArt | null
  readonly created_at: string
}

/** A published cartridge as listed (without its bytes). */
export interface RomRow {
  readonly handle: string
  readonly slug: string
  readonly name: string
  readonly size: number
  readonly digest: string
  readonly cover: StoredArt | null
  readonly published_at: string
  readonly updated_at: string
}

/** What publishing or updating stores of a verified cartridge. */
export interface CartridgeInput {
  readonly name: string
  readonly bytes: Uint8Array
  readonly digest: string
}

/** Filters of `GET /v1/registry/roms`. */
export interface RomQuery {
  readonly limit: number
  readonly offset: number
  readonly handle?: string
  /** ISO 8601 UTC with milliseconds: rows updated strictly after it. */
  readonly since?: string
}

/** Outcome of a claim. */
export type ClaimOutcome = "claimed" | "token_used" | "handle_taken"
/** Outcome of a publish. */
export type PublishOutcome = { readonly _tag: "published"; readonly rom: RomRow } | { readonly _tag: "exists" } | { readonly _tag: "limit" }

/** The registry's storage. Every method fails with `StoreUnavailable` only. */
export interface RegistryStoreService {
  readonly dialect: SqlClient["dialect"]
  readonly insertToken: (t: { id: string; secretHash: string; label: string; at: string }) => Effect.Effect<void, StoreUnavailable>
  readonly token: (id: string) => Effect.Effect<TokenRow | undefined, StoreUnavailable>
  readonly tokens: () => Effect.Effect<ReadonlyArray<TokenRow>, StoreUnavailable>
  /** True when the token existed and was not revoked already. */
  readonly revokeToken: (id: string, at: string) => Effect.Effect<boolean, StoreUnavailable>
  /** Binds a minted token to a new builder `handle`, atomically. */
  readonly claim: (tokenId: string, handle: string, name: string, at: string) => Effect.Effect<ClaimOutcome, StoreUnavailable>
  /** Counts one write of `tokenId` in the minute `window` (epoch minutes); returns the count so far. */
  readonly countWrite: (tokenId: string, window: number) => Effect.Effect<number, StoreUnavailable>
  /** The catalogue version: changes with every catalogue write. */
  readonly version: () => Effect.Effect<number, StoreUnavailable>
  readonly setAvatar: (handle: string, art: StoredArt, at: string) => Effect.Effect<boolean, StoreUnavailable>
  readonly publish: (handle: string, slug: string, cartridge: CartridgeInput, maxRoms: number, at: string) => Effect.Effect<PublishOutcome, StoreUnavailable>
  readonly update: (handle: string, slug: string, cartridge: CartridgeInput, at: string) => Effect.Effect<RomRow | undefined, StoreUnavailable>
  readonly setCover: (handle: string, slug: string, art: StoredArt, at: string) => Effect.Effect<boolean, StoreUnavailable>
  readonly unpublish: (handle: string, slug: string, at: string) => Effect.Effect<boolean, StoreUnavailable>
  readonly builders: (limit: number, offset: number) => Effect.Effect<{ count: number; builders: ReadonlyArray<BuilderRow> }, StoreUnavailable>
  readonly roms: (q: RomQuery) => Effect.Effect<{ count: number; roms: ReadonlyArray<RomRow> }, StoreUnavailable>
  readonly rom: (handle: string, slug: string) => Effect.Effect<RomRow | undefined, StoreUnavailable>
  readonly avatar: (handle: string) => Effect.Effect<StoredArt | null | undefined, StoreUnavailable>
  readonly cartridge: (handle: string, slug: string) => Effect.Effect<{ bytes: Uint8Array; digest: string; name: string } | undefined, StoreUnavailable>
}

/** The registry store service. */
export class RegistryStore extends Context.Tag("@platform/registry/RegistryStore")<RegistryStore, RegistryStoreService>() {}

const MIGRATIONS_DIR = path.join(path.dirname(new URL(import.meta.url).pathname), "migrations")

/** The migrations in order: `[version, name, sql]` from `migrations/NNNN_name.sql`. */
export const migrations = (): Array<readonly [number, string, string]> =>
  fs.readdirSync(MIGRATIONS_DIR).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort().map((f) => [Number(f.slice(0, 4)), f, fs.readFileSync(path.join(MIGRATIONS_DIR, f), "utf8")] as const)

/** Applies the migrations `sql` lacks, in one transaction; returns the versions applied. */
export const migrate = (sql: SqlClient): Promise<Array<number>> =>
  sql.transaction(async (query, exec) => {
    // Instances starting together on one PostgreSQL database wait here for each other.
    if (sql.dialect === "postgres") await query("SELECT pg_advisory_xact_lock(7263540012)")
    await exec("CREATE TABLE IF NOT EXISTS registry_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)")
    const done = new Set((await query<{ version: number }>("SELECT version FROM registry_migrations")).map((r) => Number(r.version)))
    const applied: Array<number> = []
    for (const [version, name, text] of migrations()) {
      if (done.has(version)) continue
      await exec(text.replaceAll("{{blob}}", sql.dialect === "postgres" ? "BYTEA" : "BLOB"))
      await query("INSERT INTO registry_migrations (version, name, applied_at) VALUES ($1, $2, $3)", [version, name, new Date().toISOString()])
      applied.push(version)
    }
    return applied
  })

const art = (w: unknown, h: unknown, chr: unknown): StoredArt | null =>
  chr === null || chr === undefined ? null : { w: Number(w), h: Number(h), chr: String(chr) }

const ROM_COLUMNS = "handle, slug, name, size, digest, cover_w, cover_h, cover_chr, published_at, updated_at"

const toRom = (r: Record<string, unknown>): RomRow => ({
  handle: r.handle as string,
  slug: r.slug as string,
  name: r.name as string,
  size: Number(r.size),
  digest: r.digest as string,
  cover: art(r.cover_w, r.cover_h, r.cover_chr),
  published_at: r.published_at as string,
  updated_at: r.updated_at as string
})

const bump = (query: Query) => query("UPDATE registry_state SET version = version + 1 WHERE id = 1")

/** The store over an open client (not closed by this function). */
export const make = (sql: SqlClient): RegistryStoreService => {
  const attempt = <A>(what: string, f: () => Promise<A>): Effect.Effect<A, StoreUnavailable> =>
    Effect.tryPromise({ try: f, catch: (e) => new StoreUnavailable({ error: `registry store: ${what} failed: ${(e as Error).message}` }) })
  const { query } = sql
  return {
    dialect: sql.dialect,
    insertToken: (t) =>
      attempt("insert token", () => query("INSERT INTO registry_tokens (id, secret_hash, state, label, minted_at) VALUES ($1, $2, 'minted', $3, $4)", [t.id, t.secretHash, t.label, t.at]).then(() => undefined)),
    token: (id) => attempt("read token", async () => (await query<TokenRow>("SELECT * FROM registry_tokens WHERE id = $1", [id]))[0]),
    tokens: () => attempt("list tokens", () => query<TokenRow>("SELECT * FROM registry_tokens ORDER BY minted_at, id")),
    revokeToken: (id, at) =>
      attempt("revoke token", async () =>
        (await query("UPDATE registry_tokens SET state = 'revoked', revoked_at = $2 WHERE id = $1 AND state <> 'revoked' RETURNING id", [id, at])).length === 1),
    claim: (tokenId, handle, name, at) =>
      attempt("claim", () =>
        sql.transaction(async (q) => {
          const bound = await q("UPDATE registry_tokens SET state = 'bound', handle = $2, claimed_at = $3 WHERE id = $1 AND state = 'minted' RETURNING id", [tokenId, handle, at])
          if (bound.length === 0) return "token_used" as const
          const made = await q("INSERT INTO registry_builders (handle, name, token_id, created_at, updated_at) VALUES ($1, $2, $3, $4, $4) ON CONFLICT DO NOTHING RETURNING handle", [handle, name, tokenId, at])
          // The token stays minted when the handle is taken: the transaction is undone.
          if (made.length === 0) throw new HandleTaken()
          await bump(q)
          return "claimed" as const
        }).catch((e) => (e instanceof HandleTaken ? ("handle_taken" as const) : Promise.reject(e)))),
    countWrite: (tokenId, window) =>
      attempt("count write", async () => {
        const rows = await query<{ count: number }>(
          "INSERT INTO registry_rate (token_id, window_start, count) VALUES ($1, $2, 1) ON CONFLICT (token_id, window_start) DO UPDATE SET count = registry_rate.count + 1 RETURNING count",
          [tokenId, window]
        )
        if (Number(rows[0]!.count) === 1) await query("DELETE FROM registry_rate WHERE token_id = $1 AND window_start < $2", [tokenId, window])
        return Number(rows[0]!.count)
      }),
    version: () => attempt("read version", async () => Number((await query<{ version: number }>("SELECT version FROM registry_state WHERE id = 1"))[0]!.version)),
    setAvatar: (handle, a, at) =>
      attempt("set avatar", () =>
        sql.transaction(async (q) => {
          const r = await q("UPDATE registry_builders SET avatar_w = $2, avatar_h = $3, avatar_chr = $4, updated_at = $5 WHERE handle = $1 RETURNING handle", [handle, a.w, a.h, a.chr, at])
          if (r.length > 0) await bump(q)
          return r.length > 0
        })),
    publish: (handle, slug, c, maxRoms, at) =>
      attempt("publish", () =>
        sql.transaction(async (q): Promise<PublishOutcome> => {
          // The count and its check are one statement (a row lock on PostgreSQL): concurrent
          // publishes on several instances cannot pass the limit together.
          const counted = await q("UPDATE registry_builders SET rom_count = rom_count + 1, updated_at = $3 WHERE handle = $1 AND rom_count < $2 RETURNING rom_count", [handle, maxRoms, at])
          const inserted = await q<Record<string, unknown>>(
            `INSERT INTO registry_roms (handle, slug, name, cartridge, size, digest, published_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT DO NOTHING RETURNING ${ROM_COLUMNS}`,
            [handle, slug, c.name, Buffer.from(c.bytes), c.bytes.length, c.digest, at]
          )
          if (inserted.length === 0) throw new Undo({ _tag: "exists" })
          if (counted.length === 0) throw new Undo({ _tag: "limit" })
          await bump(q)
          return { _tag: "published", rom: toRom(inserted[0]!) }
        }).catch((e) => (e instanceof Undo ? e.outcome : Promise.reject(e)))),
    update: (handle, slug, c, at) =>
      attempt("update", () =>
        sql.transaction(async (q) => {
          const r = await q<Record<string, unknown>>(
            `UPDATE registry_roms SET name = $3, cartridge = $4, size = $5, digest = $6, updated_at = $7 WHERE handle = $1 AND slug = $2 RETURNING ${ROM_COLUMNS}`,
            [handle, slug, c.name, Buffer.from(c.bytes), c.bytes.length, c.digest, at]
          )
          if (r.length > 0) await bump(q)
          return r[0] ? toRom(r[0]) : undefined
        })),
    setCover: (handle, slug, a, at) =>
      attempt("set cover", () =>
        sql.transaction(async (q) => {
          const r = await q("UPDATE registry_roms SET cover_w = $3, cover_h = $4, cover_chr = $5, updated_at = $6 WHERE handle = $1 AND slug = $2 RETURNING slug", [handle, slug, a.w, a.h, a.chr, at])
          if (r.length > 0) await bump(q)
          return r.length > 0
        })),
    unpublish: (handle, slug, at) =>
      attempt("unpublish", () =>
        sql.transaction(async (q) => {
          const r = await q("DELETE FROM registry_roms WHERE handle = $1 AND slug = $2 RETURNING slug", [handle, slug])
          if (r.length === 0) return false
          await q("UPDATE registry_builders SET rom_count = rom_count - 1, updated_at = $2 WHERE handle = $1", [handle, at])
          await bump(q)
          return true
        })),
    builders: (limit, offset) =>
      attempt("list builders", async () => {
        const [count] = await query<{ n: number }>("SELECT CAST(COUNT(*) AS INTEGER) AS n FROM registry_builders")
        const rows = await query<Record<string, unknown>>(
          "SELECT handle, name, rom_count, avatar_w, avatar_h, avatar_chr, created_at FROM registry_builders ORDER BY created_at DESC, handle LIMIT $1 OFFSET $2",
          [limit, offset]
        )
        return {
          count: Number(count!.n),
          builders: rows.map((r) => ({ handle: r.handle as string, name: r.name as string, count: Number(r.rom_count), avatar: art(r.avatar_w, r.avatar_h, r.avatar_chr), created_at: r.created_at as string }))
        }
      }),
    roms: (q) =>
      attempt("list cartridges", async () => {
        const where: Array<string> = []
        const params: Array<unknown> = []
        if (q.handle !== undefined) where.push(`handle = $${params.push(q.handle)}`)
        if (q.since !== undefined) where.push(`updated_at > $${params.push(q.since)}`)
        const filter = where.length ? ` WHERE ${where.join(" AND ")}` : ""
        const [count] = await query<{ n: number }>(`SELECT CAST(COUNT(*) AS INTEGER) AS n FROM registry_roms${filter}`, params)
        const rows = await query<Record<string, unknown>>(
          `SELECT ${ROM_COLUMNS} FROM registry_roms${filter} ORDER BY published_at DESC, handle, slug LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
          [...params, q.limit, q.offset]
        )
        return { count: Number(count!.n), roms: rows.map(toRom) }
      }),
    rom: (handle, slug) =>
      attempt("read cartridge entry", async () => {
        const r = await query<Record<string, unknown>>(`SELECT ${ROM_COLUMNS} FROM registry_roms WHERE handle = $1 AND slug = $2`, [handle, slug])
        return r[0] ? toRom(r[0]) : undefined
      }),
    avatar: (handle) =>
      attempt("read avatar", async () => {
        const r = await query<Record<string, unknown>>("SELECT avatar_w, avatar_h, avatar_chr FROM registry_builders WHERE handle = $1", [handle])
        return r[0] ? art(r[0].avatar_w, r[0].avatar_h, r[0].avatar_chr) : undefined
      }),
    cartridge: (handle, slug) =>
      attempt("read cartridge", async () => {
        const r = await query<{ cartridge: Uint8Array; digest: string; name: string }>("SELECT cartridge, digest, name FROM registry_roms WHERE handle = $1 AND slug = $2", [handle, slug])
        return r[0] ? { bytes: new Uint8Array(r[0].cartridge), digest: r[0].digest, name: r[0].name } : undefined
      })
  }
}

/** Thrown inside a transaction to roll it back with a planned outcome. */
class Undo extends Error {
  constructor(readonly outcome: PublishOutcome) {
    super("undo")
  }
}
class HandleTaken extends Error {}

/** Opens `open()`, migrates (unless `migrateOnOpen` is false) and closes it with the layer. */
const layerOf = (open: () => SqlClient, what: string, migrateOnOpen: boolean): Layer.Layer<RegistryStore, StoreUnavailable> =>
  Layer.scoped(
    RegistryStore,
    Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const sql = open()
          try {
            if (migrateOnOpen) await migrate(sql)
          } catch (e) {
            await sql.close().catch(() => undefined)
            throw e
          }
          return sql
        },
        catch: (e) => new StoreUnavailable({ error: `registry store (${what}) could not be opened: ${(e as Error).message}` })
      }),
      (sql) => Effect.promise(() => sql.close().catch(() => undefined))
    ).pipe(Effect.map(make))
  )

/** The embedded store: the SQLite file `file` (created with its folder). */
export const layerSqlite = (file: string, options: { migrate?: boolean } = {}) => layerOf(() => openSqlite(file), `SQLite ${file}`, options.migrate ?? true)

/** The PostgreSQL store at `url` with a pool of `poolSize` connections. */
export const layerPostgres = (url: string, poolSize = 10, options: { migrate?: boolean } = {}) =>
  layerOf(() => openPostgres(url, poolSize), `PostgreSQL ${url.replace(/\/\/[^@/]*@/, "//***@")}`, options.migrate ?? true)

/** The store `config` names; the embedded file is `<dataDir>/registry.sqlite`. */
export const layerConfig = (config: RegistryConfig, dataDir: string, options: { migrate?: boolean } = {}) =>
  config.store === "postgres"
    ? layerPostgres(config.postgres.url, config.postgres.pool_size, options)
    : layerSqlite(path.join(dataDir, "registry.sqlite"), options)
