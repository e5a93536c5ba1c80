/**
 * Named vector stores, embedded and persisted: `<dir>/<name>/chunks.jsonl`, one JSON line per
 * chunk `{id, doc, text, v}` where `v` is the base64 of the 768 little-endian float32s, and
 * `<dir>/<name>/meta.json` `{model, dimensions, created_at}`. One line per chunk, written by a
 * single append, keeps id, text and vector together even when several worker processes on one
 * machine append to the same store; a reader picks up lines appended by others before each
 * operation. Search is exact: the dot product of the (unit) query with every stored (unit) vector,
 * top-k by a bounded selection.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { DIMENSIONS } from "./Embedder.ts"

/** Store names: a safe single path segment. */
export const STORE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/

/** What a store knows about itself. */
export interface StoreMeta {
  readonly model: string
  readonly dimensions: number
  readonly created_at: string
}

/** A chunk to add. */
export interface NewChunk {
  readonly id: string
  readonly doc: string
  readonly text: string
  readonly vector: Float32Array
}

/** A search hit: the chunk id, cosine similarity (-1..1), its text and (when stored) its document. */
export interface Match {
  readonly id: string
  readonly score: number
  readonly text: string
  readonly doc?: string
}

/** One named store, loaded in memory. */
export class VectorStore {
  private vectors = new Float32Array(DIMENSIONS * 64)
  private readonly ids: Array<string> = []
  private readonly texts: Array<string> = []
  private readonly docs: Array<string> = []
  private readonly known = new Set<string>()
  private readonly file: string
  private offset = 0
  private partial = ""

  private constructor(readonly name: string, dir: string, readonly meta: StoreMeta) {
    this.file = path.join(dir, "chunks.jsonl")
  }

  /** Number of chunks. */
  get size(): number {
    return this.ids.length
  }

  /** Opens an existing store; undefined when `<root>/<name>` has none. */
  static open(root: string, name: string): VectorStore | undefined {
    const dir = path.join(root, name)
    const metaFile = path.join(dir, "meta.json")
    if (!fs.existsSync(metaFile)) return undefined
    const s = new VectorStore(name, dir, JSON.parse(fs.readFileSync(metaFile, "utf8")) as StoreMeta)
    s.refresh()
    return s
  }

  /** Creates a store for `model` (or opens it if another process just did). */
  static create(root: string, name: string, model: string): VectorStore {
    const dir = path.join(root, name)
    fs.mkdirSync(dir, { recursive: true })
    const meta: StoreMeta = { model, dimensions: DIMENSIONS, created_at: new Date().toISOString() }
    try {
      fs.writeFileSync(path.join(dir, "meta.json"), JSON.stringify(meta), { flag: "wx" })
    } catch {
      return VectorStore.open(root, name)!
    }
    fs.writeFileSync(path.join(dir, "chunks.jsonl"), "", { flag: "a" })
    return new VectorStore(name, dir, meta)
  }

  /** Reads lines appended since the last read (by this or another process). */
  refresh(): void {
    let st: fs.Stats
    try {
      st = fs.statSync(this.file)
    } catch {
      return
    }
    if (st.size <= this.offset) return
    const fd = fs.openSync(this.file, "r")
    try {
      const buf = Buffer.alloc(st.size - this.offset)
      fs.readSync(fd, buf, 0, buf.length, this.offset)
      this.offset = st.size
      const text = this.partial + buf.toString("utf8")
      const lines = text.split("\n")
      // A line still being written by another process stays pending until its newline arrives.
      this.partial = lines.pop() ?? ""
      for (const line of lines) {
        if (!line) continue
        try {
          const r = JSON.parse(line) as { id: string; doc?: string; text: string; v: string }
          // Copy: a pooled Buffer's offset need not be 4-byte aligned for a Float32Array view.
          const b = Uint8Array.from(Buffer.from(r.v, "base64"))
          this.push(r.id, r.doc ?? "", r.text, new Float32Array(b.buffer))
        } catch {
          // a torn line from a killed writer: skip it
        }
      }
    } finally {
      fs.closeSync(fd)
    }
  }

  private push(id: string, doc: string, text: string, v: Float32Array): void {
    if (this.known.has(id) || v.length !== DIMENSIONS) return
    const n = this.ids.length
    if ((n + 1) * DIMENSIONS > this.vectors.length) {
      const next = new Float32Array(this.vectors.length * 2)
      next.set(this.vectors)
      this.vectors = next
    }
    this.vectors.set(v, n * DIMENSIONS)
    this.ids.push(id)
    this.texts.push(text)
    this.docs.push(doc)
    this.known.add(id)
  }

  /** True when a chunk with this id is stored. */
  has(id: string): boolean {
    return this.known.has(id)
  }

  /** Appends chunks whose id is new (re-embedding the same text is a no-op); returns how many were added. */
  add(chunks: ReadonlyArray<NewChunk>): number {
    this.refresh()
    let added = 0
    for (const c of chunks) {
      if (this.known.has(c.id)) continue
      const v = Buffer.from(c.vector.buffer, c.vector.byteOffset, c.vector.byteLength).toString("base64")
      fs.appendFileSync(this.file, JSON.stringify({ id: c.id, doc: c.doc, text: c.text, v }) + "\n")
      this.push(c.id, c.doc, c.text, c.vector)
      added++
    }
    // Our own appends are in memory already; skip re-reading them.
    this.offset = fs.statSync(this.file).size
    return added
  }

  /** The `k` chunks most similar to the unit vector `q`, best first (exact cosine). */
  search(q: Float32Array, k: number): Array<Match> {
    this.refresh()
    const n = this.ids.length
    const top: Array<{ i: number; s: number }> = []
    const V = this.vectors
    for (let i = 0; i < n; i++) {
      let s = 0
      const o = i * DIMENSIONS
      for (let d = 0; d < DIMENSIONS; d++) s += q[d]! * V[o + d]!
      if (top.length < k) {
        top.push({ i, s })
        if (top.length === k) top.sort((a, b) => b.s - a.s)
      } else if (s > top[k - 1]!.s) {
        // insertion into the sorted top-k: k is small next to n
        let j = k - 1
        while (j > 0 && top[j - 1]!.s < s) {
          top[j] = top[j - 1]!
          j--
        }
        top[j] = { i, s }
      }
    }
    top.sort((a, b) => b.s - a.s)
    return top.map(({ i, s }) => ({ id: this.ids[i]!, score: Math.round(s * 1e6) / 1e6, text: this.texts[i]!, ...(this.docs[i] ? { doc: this.docs[i] } : {}) }))
  }
}

/** The stores under one root, opened once per process. */
export class VectorStores {
  private readonly open = new Map<string, VectorStore>()
  constructor(readonly root: string) {
    fs.mkdirSync(root, { recursive: true })
  }

  /** The store `name`, or undefined when it was never created. */
  get(name: string): VectorStore | undefined {
    let s = this.open.get(name)
    if (!s) {
      s = VectorStore.open(this.root, name)
      if (s) this.open.set(name, s)
    }
    return s
  }

  /** The store `name`, created for `model` when missing. */
  getOrCreate(name: string, model: string): VectorStore {
    let s = this.get(name)
    if (!s) {
      s = VectorStore.create(this.root, name, model)
      this.open.set(name, s)
    }
    return s
  }
}
