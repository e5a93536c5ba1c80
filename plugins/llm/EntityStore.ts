/**
 * Named, persisted entity stores: one JSON file per store in a directory (the `llm` plugin's
 * `<data_dir>/llm/entities/<name>.json`). Writing merges: an entity is its case-insensitive
 * name and type; mentions add up, sources are united, the first description stays.
 *
 * Writes go to a temporary file renamed over the store (readers never see half a file), under a
 * lock file, because graph operations of one store may run in several worker threads or
 * processes at once.
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import * as Schema from "effect/Schema"
import { Entity } from "../../core/GraphTypes.ts"

/** A store name: letters, digits, `.`, `_`, `-`, starting with a letter or digit, at most 64 characters. */
export const StoreName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/),
  Schema.filter((s) => !s.endsWith(".lock") && !s.includes("..") || "a store name may not contain `..` or end in `.lock`"),
  Schema.annotations({ identifier: "EntityStoreName", description: "letters, digits, `.`, `_`, `-`; at most 64 characters" })
)

/** A store file's content. `updated_at` is an ISO 8601 time. */
export const StoredEntities = Schema.Struct({
  store: Schema.String,
  updated_at: Schema.String,
  entities: Schema.Array(Entity)
}).annotations({ identifier: "EntityStoreFile" })
export type StoredEntities = typeof StoredEntities.Type

/** What `list` says of one store. */
export interface StoreSummary {
  readonly name: string
  readonly total: number
  readonly updated_at: string
}

/** The merge key of an entity: lower-cased, whitespace-collapsed name and type. */
export const entityKey = (e: { name: string; type: string }): string =>
  `${e.name.trim().replace(/\s+/g, " ").toLowerCase()}\u0000${e.type.trim().toLowerCase()}`

/**
 * Merges `incoming` into `base` (neither is modified): entities with one key become one, keeping
 * the first spelling and description, adding mentions, uniting sources in first-seen order.
 */
export const mergeEntities = (base: ReadonlyArray<Entity>, incoming: ReadonlyArray<Entity>): Array<Entity> => {
  const byKey = new Map<string, { name: string; type: string; mentions: number; sources: Array<string>; description?: string }>()
  for (const e of [...base, ...incoming]) {
    const k = entityKey(e)
    const have = byKey.get(k)
    if (!have) {
      byKey.set(k, { name: e.name.trim(), type: e.type.trim().toLowerCase(), mentions: e.mentions, sources: [...new Set(e.sources)], ...(e.description ? { description: e.description } : {}) })
      continue
    }
    have.mentions += e.mentions
    for (const s of e.sources) if (!have.sources.includes(s)) have.sources.push(s)
    if (!have.description && e.description) have.description = e.description
  }
  return [...byKey.values()]
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A lock older than this was left by a process that died while writing (a write takes milliseconds). */
const STALE_LOCK_MS = 30_000
const LOCK_WAIT_MS = 15_000

/** The entity stores kept in `dir` (created on first write). */
export class EntityStore {
  constructor(readonly dir: string) {}

  private file(name: string): string {
    // Decoding again here keeps a bad name from ever reaching the file system, whoever calls.
    return path.join(this.dir, `${Schema.decodeUnknownSync(StoreName)(name)}.json`)
  }

  /** The stores, by name, with their entity counts; [] when none was written yet. */
  async list(): Promise<Array<StoreSummary>> {
    const names = await fs.readdir(this.dir).catch((e: NodeJS.ErrnoException) => (e.code === "ENOENT" ? [] : Promise.reject(e)))
    const out: Array<StoreSummary> = []
    for (const f of names.filter((n) => n.endsWith(".json")).sort()) {
      const s = await this.get(f.slice(0, -5)).catch(() => undefined)
      if (s) out.push({ name: s.store, total: s.entities.length, updated_at: s.updated_at })
    }
    return out
  }

  /** A store's content, or undefined when it does not exist. Rejects on a bad name or an unreadable file. */
  async get(name: string): Promise<StoredEntities | undefined> {
    const file = this.file(name)
    let text: string
    try {
      text = await fs.readFile(file, "utf8")
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined
      throw e
    }
    return Schema.decodeUnknownSync(StoredEntities)(JSON.parse(text))
  }

  /**
   * Merges `entities` into store `name` (creating it) and resolves the count written and the
   * store's total afterwards. Waits for another writer's lock up to 15 s; `signal` stops waiting.
   */
  async merge(name: string, entities: ReadonlyArray<Entity>, signal?: AbortSignal): Promise<{ stored: number; total: number }> {
    const file = this.file(name)
    await fs.mkdir(this.dir, { recursive: true })
    const release = await this.lock(`${file}.lock`, signal)
    try {
      const current = (await this.get(name))?.entities ?? []
      const merged = mergeEntities(current, entities)
      const body: StoredEntities = { store: name, updated_at: new Date().toISOString(), entities: merged }
      const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`
      await fs.writeFile(tmp, JSON.stringify(body, null, 1))
      await fs.rename(tmp, file)
      return { stored: entities.length, total: merged.length }
    } finally {
      await release()
    }
  }

  /** Takes `lockFile` (exclusive create), breaking a stale one; resolves its release. */
  private async lock(lockFile: string, signal?: AbortSignal): Promise<() => Promise<void>> {
    const deadline = Date.now() + LOCK_WAIT_MS
    for (;;) {
      try {
        const h = await fs.open(lockFile, "wx")
        await h.writeFile(String(process.pid))
        await h.close()
        return () => fs.rm(lockFile, { force: true })
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e
      }
      const st = await fs.stat(lockFile).catch(() => undefined)
      if (st && Date.now() - st.mtimeMs > STALE_LOCK_MS) {
        await fs.rm(lockFile, { force: true })
        continue
      }
      if (signal?.aborted) throw signal.reason ?? new Error("aborted")
      if (Date.now() > deadline) throw new Error(`entity store ${path.basename(lockFile, ".json.lock")} is locked by another writer (${lockFile})`)
      await sleep(10 + Math.random() * 20)
    }
  }
}
