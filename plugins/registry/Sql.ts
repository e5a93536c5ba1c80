/**
 * The two SQL drivers of the registry behind one small interface: an embedded single-file SQLite
 * database (better-sqlite3) and PostgreSQL (pg). Statements are written once with PostgreSQL's
 * `$1` placeholders (bound by name on SQLite: `@p1`) and portable SQL (`RETURNING`, `ON CONFLICT`).
 *
 * SQLite's driver is synchronous over one connection: every statement and transaction goes
 * through one queue, so a transaction never interleaves with another request's statements.
 * PostgreSQL transactions hold one pooled client each.
 */
import Database from "better-sqlite3"
import * as fs from "node:fs"
import * as path from "node:path"
import pg from "pg"

/** Which SQL engine a client speaks. */
export type Dialect = "sqlite" | "postgres"

/** Runs statements: rows for queries and for `RETURNING`, `[]` otherwise. */
export interface Query {
  <T = Record<string, unknown>>(text: string, params?: ReadonlyArray<unknown>): Promise<Array<T>>
}

/** A connection (pool) to one registry database. */
export interface SqlClient {
  readonly dialect: Dialect
  readonly query: Query
  /** Runs `f` in one transaction (SQLite: `BEGIN IMMEDIATE`); rolls back when it rejects. */
  transaction<A>(f: (query: Query, exec: (script: string) => Promise<void>) => Promise<A>): Promise<A>
  close(): Promise<void>
}

/**
 * Opens (creating it and its folder) the SQLite file `file`: WAL journal, 5 s busy timeout, so
 * a CLI command writing tokens beside a serving platform waits instead of failing.
 */
export const openSqlite = (file: string): SqlClient => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const db = new Database(file)
  db.pragma("journal_mode = WAL")
  db.pragma("busy_timeout = 5000")
  db.pragma("foreign_keys = ON")
  const statements = new Map<string, Database.Statement>()
  const run = <T>(text: string, params: ReadonlyArray<unknown> = []): Array<T> => {
    let st = statements.get(text)
    if (!st) {
      st = db.prepare(text.replace(/\$(\d+)/g, "@p$1"))
      statements.set(text, st)
    }
    // Named parameters: better-sqlite3 has no numbered `?NNN` binding, and `$n` may repeat.
    const args = Object.fromEntries(params.map((p, i) => [`p${i + 1}`, typeof p === "boolean" ? (p ? 1 : 0) : p]))
    return st.reader ? (st.all(args) as Array<T>) : (st.run(args), [])
  }
  // One queue for statements and transactions: see the module comment.
  let queue: Promise<unknown> = Promise.resolve()
  const serial = <A>(f: () => Promise<A> | A): Promise<A> => {
    const next = queue.then(f, f)
    queue = next.catch(() => undefined)
    return next
  }
  const query: Query = <T>(text: string, params?: ReadonlyArray<unknown>) => serial(() => run<T>(text, params))
  return {
    dialect: "sqlite",
    query,
    transaction: (f) =>
      serial(async () => {
        db.exec("BEGIN IMMEDIATE")
        try {
          const out = await f(async <T>(text: string, params?: ReadonlyArray<unknown>) => run<T>(text, params), async (script) => void db.exec(script))
          db.exec("COMMIT")
          return out
        } catch (e) {
          if (db.inTransaction) db.exec("ROLLBACK")
          throw e
        }
      }),
    close: async () => {
      await queue
      db.close()
    }
  }
}

/** A pool of `size` connections to the PostgreSQL database at `url` (connects on first use). */
export const openPostgres = (url: string, size: number): SqlClient => {
  const pool = new pg.Pool({ connectionString: url, max: size })
  // An idle client's socket error (server restart) must not crash the process: the next query reconnects.
  pool.on("error", () => {})
  const query: Query = async <T>(text: string, params?: ReadonlyArray<unknown>) =>
    (await pool.query(text, params as Array<unknown>)).rows as Array<T>
  return {
    dialect: "postgres",
    query,
    transaction: async (f) => {
      const client = await pool.connect()
      try {
        await client.query("BEGIN")
        const out = await f(
          async <T>(text: string, params?: ReadonlyArray<unknown>) => (await client.query(text, params as Array<unknown>)).rows as Array<T>,
          async (script) => void await client.query(script)
        )
        await client.query("COMMIT")
        return out
      } catch (e) {
        await client.query("ROLLBACK").catch(() => undefined)
        throw e
      } finally {
        client.release()
      }
    },
    close: () => pool.end()
  }
}
