/**
 * The `files` service: where jobs (and authorised uploaders) store large outputs. Every file gets
 * an unguessable id (192 random bits) and is addressed as `<id>/<name>`; its download URL is
 * `{files_url}/<id>/<name>`, served by the jobs listener for both backends, so results carry
 * absolute URLs that do not change with the storage backend.
 *
 * Backends: `local` (a folder, by default `<data dir>/jobs/files`) and `s3` (any S3-compatible
 * bucket, see `S3.ts`). Names are reduced to one safe path segment and every resolved path is
 * checked to stay under the store's root, so no request can reach outside it.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import { Readable } from "node:stream"
import * as Schema from "effect/Schema"
import { S3Client } from "./S3.ts"

/** A stored file. `key` is `<id>/<name>`; `url` is absolute. */
export interface StoredFile {
  readonly id: string
  readonly name: string
  readonly key: string
  readonly url: string
  readonly size: number
  readonly content_type: string
}

/** A file opened for download: a byte stream plus its type and (when known) length. */
export interface OpenedFile {
  readonly body: AsyncIterable<Uint8Array>
  readonly contentType: string
  readonly size?: number
}

/** Storage of job outputs. */
export interface FileStore {
  /** Stores `data` under `name` (made safe); resolves the stored file with its absolute URL. */
  readonly put: (name: string, data: Uint8Array | string, contentType?: string) => Promise<StoredFile>
  /** Opens `<id>/<name>`; undefined when absent or when id/name are not valid (never escapes the root). */
  readonly open: (id: string, name: string) => Promise<OpenedFile | undefined>
  /** Deletes files by key; unknown keys are ignored. */
  readonly delete: (keys: ReadonlyArray<string>) => Promise<void>
  /** The absolute URL of `<id>/<name>`. */
  readonly urlOf: (id: string, name: string) => string
}

/** Config of the file store (the `files` member of the `jobs` plugin config). */
export const FilesSettings = Schema.Struct({
  backend: Schema.optionalWith(Schema.Literal("local", "s3").annotations({ description: "local: a folder under the data directory; s3: an S3-compatible bucket" }), { default: () => "local" as const }),
  dir: Schema.optionalWith(Schema.String.annotations({ description: "folder of the local backend, relative to <data_dir>/jobs" }), { default: () => "files" }),
  url: Schema.optional(Schema.String.annotations({ description: "public base URL of downloads (default: <jobs listener url>/files); set it for `platform worker` processes" })),
  api_key: Schema.optional(Schema.String.annotations({ description: "FILES_API_KEY for uploads (PUT /files/<name>); default: the environment variable named by api_key_env; none disables uploads" })),
  api_key_env: Schema.optionalWith(Schema.String.annotations({ description: "environment variable holding the upload key" }), { default: () => "FILES_API_KEY" }),
  max_upload_bytes: Schema.optionalWith(Schema.Int.pipe(Schema.positive()).annotations({ description: "largest accepted upload, bytes" }), { default: () => 100 * 1024 * 1024 }),
  s3: Schema.optional(Schema.Struct({
    endpoint: Schema.String.annotations({ description: "base URL, e.g. https://s3.eu-west-1.amazonaws.com or http://127.0.0.1:9000 (path-style requests)" }),
    bucket: Schema.String,
    region: Schema.optionalWith(Schema.String, { default: () => "us-east-1" }),
    access_key_id: Schema.String,
    secret_access_key: Schema.String,
    prefix: Schema.optionalWith(Schema.String.annotations({ description: "key prefix inside the bucket" }), { default: () => "files/" })
  }).annotations({ description: "bucket of the s3 backend (SigV4-signed requests)" }))
}).annotations({ description: "the files store: job outputs and uploads, downloaded at {files_url}/<id>/<name>" })
export type FilesSettings = typeof FilesSettings.Type

const ID_RE = /^[A-Za-z0-9_-]{32}$/

/** A new file id: 24 random bytes, base64url (32 chars). */
export const newFileId = (): string => randomBytes(24).toString("base64url")

/**
 * Reduces a name to one safe path segment: path separators, control characters and other
 * troublesome characters become `_`, leading dots are dropped, length is capped at 200.
 * Returns `file` for a name with nothing left.
 */
export const safeName = (name: string): string => {
  const s = name
    .replace(/[\u0000-\u001f\u007f/\\:*?"<>|#%]/g, "_")
    .replace(/^\.+/, "")
    .slice(0, 200)
  return s.length === 0 ? "file" : s
}

/** True when `id`/`name` are exactly what `put` could have produced. */
export const validKey = (id: string, name: string): boolean => ID_RE.test(id) && name.length > 0 && safeName(name) === name

const TYPES: Record<string, string> = {
  ".json": "application/json",
  ".md": "text/markdown; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
  ".html": "text/html; charset=utf-8",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".webp": "image/webp",
  ".pdf": "application/pdf",
  ".csv": "text/csv; charset=utf-8",
  ".jsonl": "application/x-ndjson"
}

/** Content type guessed from the extension; `application/octet-stream` otherwise. */
export const contentTypeOf = (name: string): string => TYPES[path.extname(name).toLowerCase()] ?? "application/octet-stream"

const toBytes = (data: Uint8Array | string): Uint8Array => (typeof data === "string" ? Buffer.from(data, "utf8") : data)

/** Files in a local folder: `<root>/<id>/<name>` plus `<root>/<id>/.type` holding the content type. */
export class LocalFileStore implements FileStore {
  private readonly root: string

  /** `root` is created if missing; `baseUrl()` is read at each `put` (listeners bind after setup). */
  constructor(root: string, private readonly baseUrl: () => string) {
    this.root = path.resolve(root)
    fs.mkdirSync(this.root, { recursive: true })
  }

  private resolve(id: string, name?: string): string | undefined {
    const p = path.resolve(this.root, id, ...(name === undefined ? [] : [name]))
    // Defence in depth behind validKey: the resolved path must stay inside the root.
    return p.startsWith(this.root + path.sep) ? p : undefined
  }

  urlOf = (id: string, name: string): string => `${this.baseUrl().replace(/\/+$/, "")}/${id}/${encodeURIComponent(name)}`

  put = async (name: string, data: Uint8Array | string, contentType?: string): Promise<StoredFile> => {
    const id = newFileId()
    const n = safeName(name)
    const dir = this.resolve(id)!
    await fsp.mkdir(dir, { recursive: true })
    const bytes = toBytes(data)
    const type = contentType ?? contentTypeOf(n)
    await fsp.writeFile(path.join(dir, n), bytes)
    await fsp.writeFile(path.join(dir, ".type"), type)
    return { id, name: n, key: `${id}/${n}`, url: this.urlOf(id, n), size: bytes.byteLength, content_type: type }
  }

  open = async (id: string, name: string): Promise<OpenedFile | undefined> => {
    if (!validKey(id, name)) return undefined
    const p = this.resolve(id, name)
    if (!p) return undefined
    try {
      const st = await fsp.stat(p)
      if (!st.isFile()) return undefined
      const type = await fsp.readFile(path.join(path.dirname(p), ".type"), "utf8").catch(() => contentTypeOf(name))
      return { body: fs.createReadStream(p), contentType: type, size: st.size }
    } catch {
      return undefined
    }
  }

  delete = async (keys: ReadonlyArray<string>): Promise<void> => {
    for (const key of keys) {
      const [id, name] = key.split("/")
      if (!id || !name || !validKey(id, name)) continue
      const dir = this.resolve(id)
      if (dir) await fsp.rm(dir, { recursive: true, force: true })
    }
  }
}

/** Files in an S3-compatible bucket under `prefix`; downloads are proxied by the jobs listener. */
export class S3FileStore implements FileStore {
  constructor(
    private readonly client: S3Client,
    private readonly prefix: string,
    private readonly baseUrl: () => string
  ) {}

  urlOf = (id: string, name: string): string => `${this.baseUrl().replace(/\/+$/, "")}/${id}/${encodeURIComponent(name)}`

  put = async (name: string, data: Uint8Array | string, contentType?: string): Promise<StoredFile> => {
    const id = newFileId()
    const n = safeName(name)
    const bytes = toBytes(data)
    const type = contentType ?? contentTypeOf(n)
    await this.client.put(`${this.prefix}${id}/${n}`, bytes, type)
    return { id, name: n, key: `${id}/${n}`, url: this.urlOf(id, n), size: bytes.byteLength, content_type: type }
  }

  open = async (id: string, name: string): Promise<OpenedFile | undefined> => {
    if (!validKey(id, name)) return undefined
    const r = await this.client.get(`${this.prefix}${id}/${name}`)
    if (!r || !r.body) return undefined
    const len = r.headers.get("content-length")
    return {
      body: Readable.fromWeb(r.body as import("node:stream/web").ReadableStream<Uint8Array>),
      contentType: r.headers.get("content-type") ?? contentTypeOf(name),
      ...(len ? { size: Number(len) } : {})
    }
  }

  delete = async (keys: ReadonlyArray<string>): Promise<void> => {
    for (const key of keys) {
      const [id, name] = key.split("/")
      if (id && name && validKey(id, name)) await this.client.delete(`${this.prefix}${id}/${name}`)
    }
  }
}

/**
 * Builds the configured file store. `dataDir` anchors a relative local `dir`; `baseUrl()` gives
 * the download base (`files.url` or the jobs listener's `/files`). Throws when `backend: s3`
 * lacks its `s3` block.
 */
export const makeFileStore = (settings: FilesSettings, dataDir: string, baseUrl: () => string): FileStore => {
  const base = settings.url ? () => settings.url! : baseUrl
  if (settings.backend === "s3") {
    if (!settings.s3) throw new Error("files.backend is s3 but files.s3 is missing")
    return new S3FileStore(new S3Client(settings.s3), settings.s3.prefix, base)
  }
  return new LocalFileStore(path.resolve(dataDir, settings.dir), base)
}

/** The upload key: `files.api_key`, else the environment variable named by `api_key_env`; undefined disables uploads. */
export const uploadKey = (settings: FilesSettings): string | undefined =>
  settings.api_key ?? (process.env[settings.api_key_env] || undefined)
