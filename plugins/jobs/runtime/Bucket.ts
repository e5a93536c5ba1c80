/**
 * The file store seen as a bucket of keyed objects (`workspaces/ws_1/manifest.json`), for
 * plugins that keep a layout of their own in it (workspaces). Same backends and roots as the
 * `files` store: `local` files under its folder, `s3` objects under its prefix. Keys are
 * `/`-separated safe segments whose first segment never looks like a stored file's id, so the
 * two never collide and `/files/<id>/<name>` never serves a bucket object.
 */
import * as Schema from "effect/Schema"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import { contentTypeOf, type FilesSettings } from "./FileStore.ts"
import { S3Client } from "./S3.ts"

/** A stored object: its key and size in bytes. */
export interface BucketObject {
  readonly key: string
  readonly size: number
}

/** Keyed objects. Every method rejects with `InvalidKey` for a bad key, else with storage errors. */
export interface ObjectBucket {
  /** Stores `data` at `key`, replacing what was there (readers never see a partial object). */
  readonly put: (key: string, data: Uint8Array | string, contentType?: string) => Promise<BucketObject>
  /** The object's bytes, or undefined when absent. */
  readonly get: (key: string) => Promise<Uint8Array | undefined>
  /** Every object whose key starts with `prefix` (a folder: end it with `/`), sorted by key. */
  readonly list: (prefix: string) => Promise<ReadonlyArray<BucketObject>>
  /** Deletes the objects; absent keys are ignored. */
  readonly delete: (keys: ReadonlyArray<string>) => Promise<void>
}

/** A key (or prefix) the bucket refuses. */
export class InvalidKey extends Schema.TaggedError<InvalidKey>()("InvalidKey", { message: Schema.String }) {
  constructor(message: string) {
    super({ message })
  }
}

const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}$/
const FILE_ID = /^[A-Za-z0-9_-]{32}$/

/** Throws `InvalidKey` unless `key` is safe segments; a prefix may end with `/`. */
export const checkKey = (key: string, prefix = false): string => {
  const body = prefix && key.endsWith("/") ? key.slice(0, -1) : key
  const parts = body.split("/")
  if (body === "" && prefix) return key
  if (!parts.every((p) => SEGMENT.test(p) && p !== "." && p !== "..") || FILE_ID.test(parts[0]!)) {
    throw new InvalidKey(`bad object key "${key}": segments of A-Z a-z 0-9 _ . - (not starting with a dot), the first not a 32-character file id`)
  }
  return key
}

const toBytes = (data: Uint8Array | string): Uint8Array => (typeof data === "string" ? Buffer.from(data, "utf8") : data)

/** Objects as files under `root` (the local file store's folder). */
export class LocalBucket implements ObjectBucket {
  private readonly root: string
  constructor(root: string) {
    this.root = path.resolve(root)
    fs.mkdirSync(this.root, { recursive: true })
  }

  private file(key: string): string {
    const p = path.resolve(this.root, checkKey(key))
    if (!p.startsWith(this.root + path.sep)) throw new InvalidKey(`bad object key "${key}"`)
    return p
  }

  put = async (key: string, data: Uint8Array | string): Promise<BucketObject> => {
    const p = this.file(key)
    const bytes = toBytes(data)
    await fsp.mkdir(path.dirname(p), { recursive: true })
    // Write-then-rename: a concurrent reader (another worker process) sees the old or the new bytes.
    const tmp = `${p}.${randomBytes(6).toString("hex")}.tmp`
    await fsp.writeFile(tmp, bytes)
    await fsp.rename(tmp, p)
    return { key, size: bytes.byteLength }
  }

  get = async (key: string): Promise<Uint8Array | undefined> => {
    try {
      return new Uint8Array(await fsp.readFile(this.file(key)))
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT" || (e as NodeJS.ErrnoException).code === "EISDIR") return undefined
      throw e
    }
  }

  list = async (prefix: string): Promise<ReadonlyArray<BucketObject>> => {
    checkKey(prefix, true)
    // Walk the deepest folder the prefix names, then filter by the full prefix.
    const dir = prefix.includes("/") ? prefix.slice(0, prefix.lastIndexOf("/")) : ""
    const out: Array<BucketObject> = []
    const walk = async (rel: string): Promise<void> => {
      let entries: Array<fs.Dirent>
      try {
        entries = await fsp.readdir(path.join(this.root, rel), { withFileTypes: true })
      } catch {
        return
      }
      for (const e of entries) {
        const key = rel ? `${rel}/${e.name}` : e.name
        if (e.isDirectory()) {
          if (!rel && FILE_ID.test(e.name)) continue // the files store's own `<id>/` folders
          if (key.startsWith(prefix) || prefix.startsWith(`${key}/`)) await walk(key)
        } else if (e.isFile() && key.startsWith(prefix) && !e.name.endsWith(".tmp") && SEGMENT.test(e.name)) {
          out.push({ key, size: (await fsp.stat(path.join(this.root, key))).size })
        }
      }
    }
    await walk(dir)
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  }

  delete = async (keys: ReadonlyArray<string>): Promise<void> => {
    const dirs = new Set<string>()
    for (const key of keys) {
      const p = this.file(key)
      await fsp.rm(p, { force: true })
      dirs.add(path.dirname(p))
    }
    // Empty folders left behind are removed, deepest first, so a deleted tree leaves nothing.
    for (const d of [...dirs].sort((a, b) => b.length - a.length)) {
      for (let dir = d; dir.startsWith(this.root + path.sep); dir = path.dirname(dir)) {
        try {
          await fsp.rmdir(dir)
        } catch {
          break
        }
      }
    }
  }
}

/** Objects in an S3-compatible bucket under the file store's prefix. */
export class S3Bucket implements ObjectBucket {
  constructor(private readonly client: S3Client, private readonly prefix: string) {}

  put = async (key: string, data: Uint8Array | string, contentType?: string): Promise<BucketObject> => {
    const bytes = toBytes(data)
    await this.client.put(this.prefix + checkKey(key), bytes, contentType ?? contentTypeOf(key))
    return { key, size: bytes.byteLength }
  }

  get = async (key: string): Promise<Uint8Array | undefined> => {
    const r = await this.client.get(this.prefix + checkKey(key))
    return r ? new Uint8Array(await r.arrayBuffer()) : undefined
  }

  list = async (prefix: string): Promise<ReadonlyArray<BucketObject>> => {
    const found = await this.client.list(this.prefix + checkKey(prefix, true))
    return found.map((o) => ({ key: o.key.slice(this.prefix.length), size: o.size })).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  }

  delete = async (keys: ReadonlyArray<string>): Promise<void> => {
    for (const key of keys) await this.client.delete(this.prefix + checkKey(key))
  }
}

/** The bucket over the configured file store (same folder or bucket and prefix as `makeFileStore`). */
export const makeBucket = (settings: FilesSettings, dataDir: string): ObjectBucket => {
  if (settings.backend === "s3") {
    if (!settings.s3) throw new Error("files.backend is s3 but files.s3 is missing")
    return new S3Bucket(new S3Client(settings.s3), settings.s3.prefix)
  }
  return new LocalBucket(path.resolve(dataDir, settings.dir))
}
