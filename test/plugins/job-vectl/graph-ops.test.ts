/**
 * The vectl graph operations on the plugin's real embedders and stores: chunk windows, overlap
 * and per-source indexes; embed / embed_batch vectors, stable ids and batching by
 * EMBED_BATCH_SIZE; store_vector into a store that a `vectl` search job then finds them in;
 * semantic_filter ranking with the hashing embedder; vector_search over a stored store. The last block boots the real kernel and
 * checks the operations are registered with their types.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Schema from "effect/Schema"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import type { GraphOperation } from "../../../core/Contribution.ts"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import { type Embedder, hashingEmbedder } from "../../../plugins/job-vectl/Embedder.ts"
import { chunkOp, embedBatchOp, embedOp, semanticFilterOp, storeVectorOp, type VectlGraphOptions, vectorId, vectorSearchOp } from "../../../plugins/job-vectl/GraphOps.ts"
import { vectlJob } from "../../../plugins/job-vectl/Vectl.ts"
import { VectorStores } from "../../../plugins/job-vectl/VectorStore.ts"
import { platformYaml, tempDir } from "../jobs/support.ts"
import { expectJobFailure, jobContexts, type TestJobContext } from "../jobs/net/jobContext.ts"

/** The hashing embedder, counting the texts of each call. */
const counting = (name: string) => {
  const inner = hashingEmbedder(name)
  const calls: Array<number> = []
  const e: Embedder = { ...inner, embed: (texts, role, signal) => (calls.push(texts.length), inner.embed(texts, role, signal)) }
  return { e, calls }
}

const main = counting("hashing-768")
const other = counting("hashing-alt")
const opts: VectlGraphOptions = {
  models: new Map([["hashing-768", main.e], ["hashing-alt", other.e]]),
  defaultModel: "hashing-768",
  stores: new VectorStores(mkdtempSync(join(tmpdir(), "vectl-graph-"))),
  chunkWords: 512,
  overlapWords: 64
}

const contexts = jobContexts()
afterEach(() => {
  contexts.cleanup()
  main.calls.length = 0
})

/** Runs `op` the way the engine does: params and input decoded by the op's Schemas, output checked. */
const run = async <P, I, O>(op: GraphOperation<P, I, O>, params: unknown, input: unknown, ctx: TestJobContext = contexts.make()): Promise<O> => {
  const out = await op.handler(Schema.decodeUnknownSync(op.params)(params), Schema.decodeUnknownSync(op.input)(input), ctx)
  return Schema.decodeUnknownSync(op.output)(out)
}

/** `n` distinct words `<prefix>0 .. <prefix>(n-1)`. */
const numbered = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`).join(" ")

describe("chunk", () => {
  it("cuts overlapping windows (stride size - overlap, last window ends at the last word)", async () => {
    const chunks = await run(chunkOp(opts), { size: 400, overlap: 100 }, { url: "https://a.example/log", title: "Log", text: numbered("w", 1000) })
    expect(chunks.map((c) => [c.source, c.index])).toEqual([["https://a.example/log", 0], ["https://a.example/log", 1], ["https://a.example/log", 2]])
    const ws = chunks.map((c) => c.text.split(" "))
    expect(ws.map((w) => [w[0], w.at(-1), w.length])).toEqual([["w0", "w399", 400], ["w300", "w699", 400], ["w600", "w999", 400]])
    // Neighbours share exactly `overlap` words.
    expect(ws[0]!.slice(-100)).toEqual(ws[1]!.slice(0, 100))
  })

  it("keeps each text's source; index runs per source across texts; bare strings have source null", async () => {
    const chunks = await run(chunkOp(opts), { size: 10, overlap: 2 }, [
      { url: "https://a.example/1", title: null, text: numbered("a", 18) },
      "a bare string without any source",
      { url: "https://b.example/2", title: null, text: numbered("b", 5) },
      { url: "https://a.example/1", title: null, text: numbered("c", 10) },
      { url: "https://c.example/empty", title: null, text: "   " }
    ])
    expect(chunks.map((c) => `${c.source}#${c.index}:${c.text.split(" ")[0]}`)).toEqual([
      "https://a.example/1#0:a0", "https://a.example/1#1:a8",
      "null#0:a",
      "https://b.example/2#0:b0",
      "https://a.example/1#2:c0"
    ])
    expect(chunks.every((c) => c.score === undefined)).toBe(true)
  })

  it("defaults to the plugin's 512/64 and accepts a single Markdown text; overlap defaults to size/8 for small sizes", async () => {
    const one = await run(chunkOp(opts), {}, { url: "https://m.example/", title: "Doc", text: `# Heading\n\n${numbered("m", 958)}` })
    expect(one.map((c) => c.text.split(" ").length)).toEqual([512, 512])
    expect(one[1]!.text.split(" ")[0]).toBe("m446") // 960 words with "#" and "Heading"; stride 448
    const small = await run(chunkOp(opts), { size: 16 }, numbered("s", 30))
    expect(small.map((c) => c.text.split(" ")[0])).toEqual(["s0", "s14"]) // overlap 2 = 16/8
    expect(() => Schema.decodeUnknownSync(chunkOp(opts).params)({ size: 10, overlap: 10 })).toThrow(/smaller than size/)
  })
})

describe("embed and embed_batch", () => {
  it("embed: one 768-d unit vector with a stable id over model, source, index and text", async () => {
    const doc = { url: "https://a.example/", title: null, text: "The keeper logged forty seven storms." }
    const v = await run(embedOp(opts), {}, doc)
    expect(v).toMatchObject({ id: vectorId("hashing-768", "https://a.example/", 0, doc.text), model: "hashing-768", text: doc.text, source: "https://a.example/" })
    expect(v.vector).toHaveLength(768)
    expect(Math.hypot(...v.vector)).toBeCloseTo(1, 5)
    expect((await run(embedOp(opts), {}, doc)).id).toBe(v.id)
    const alt = await run(embedOp(opts), { model: "hashing-alt" }, doc)
    expect(alt.model).toBe("hashing-alt")
    expect(alt.id).not.toBe(v.id)
    expect(v.id).toMatch(/^vec_[0-9a-f]{16}$/)
    const c = await run(embedOp(opts), {}, { text: doc.text, source: "https://a.example/", index: 3 })
    expect(c.id).toBe(vectorId("hashing-768", "https://a.example/", 3, doc.text))
    expect(c.vector).toEqual(v.vector)
  })

  it("embed_batch: batches of EMBED_BATCH_SIZE with progress per batch, vectors in chunk order", async () => {
    const chunks = Array.from({ length: 70 }, (_, i) => ({ text: `chunk number ${i} about ${["tides", "storms", "lenses"][i % 3]}`, source: `https://s.example/${i % 4}`, index: i }))
    const ctx = contexts.make()
    const vectors = await run(embedBatchOp(opts), {}, chunks, ctx)
    expect(main.calls).toEqual([32, 32, 6])
    expect(ctx.progressLog.map((p) => [p.percent, p.message])).toEqual([
      [33, "embed_batch: embedded 32 of 70 texts (batch 1 of 3)"],
      [66, "embed_batch: embedded 64 of 70 texts (batch 2 of 3)"],
      [100, "embed_batch: embedded 70 of 70 texts (batch 3 of 3)"]
    ])
    expect(vectors.map((v) => v.text)).toEqual(chunks.map((c) => c.text))
    expect(vectors[5]!.id).toBe(vectorId("hashing-768", "https://s.example/1", 5, chunks[5]!.text))
    expect(new Set(vectors.map((v) => v.id)).size).toBe(70)
    // A smaller EMBED_BATCH_SIZE from the graph limits gives more calls.
    main.calls.length = 0
    const small = contexts.make()
    await run(embedBatchOp(opts), {}, chunks.slice(0, 25), { ...small, limits: { ...small.limits, embedBatchSize: 10 } })
    expect(main.calls).toEqual([10, 10, 5])
  })

  it("unknown model: VALIDATION_ERROR naming the configured ones; a cancel stops between batches", async () => {
    const f = await expectJobFailure(run(embedBatchOp(opts), { model: "nomic" }, [{ text: "x", source: null, index: 0 }]))
    expect(f).toMatchObject({ kind: "VALIDATION_ERROR", message: 'embed_batch: unknown model "nomic" (configured: hashing-768, hashing-alt)' })
    const ctx = contexts.make()
    ctx.controller.abort()
    expect((await expectJobFailure(run(embedBatchOp(opts), {}, [{ text: "x", source: null, index: 0 }], ctx))).kind).toBe("CANCELLED")
  })
})

const corpus = [
  { url: "https://news.example/lighthouse", title: null, text: "The old lighthouse keeper recorded forty seven storms in the winter logbook before the lamp was automated." },
  { url: "https://food.example/bread", title: null, text: "Knead the bread dough for ten minutes, then let it rise in a warm kitchen until doubled in size." },
  { url: "https://money.example/q3", title: null, text: "Quarterly revenue grew eight percent while operating margins in the semiconductor division narrowed." },
  { url: "https://garden.example/roses", title: null, text: "Prune climbing roses in late winter, cutting back to a healthy outward facing bud." }
]

describe("store_vector", () => {
  it("stores vectors that a vectl search job then finds; storing again adds nothing", async () => {
    const chunks = await run(chunkOp(opts), {}, corpus)
    const vectors = await run(embedBatchOp(opts), {}, chunks)
    const ctx = contexts.make()
    expect(await run(storeVectorOp(opts), { store: "harbour" }, vectors, ctx)).toEqual({ store: "harbour", model: "hashing-768", stored: 4, total: 4 })
    expect(ctx.progressLog.at(-1)!.message).toBe('store_vector: added 4 of 4 vectors to "harbour" (4 in all)')
    expect(await run(storeVectorOp(opts), { store: "harbour" }, vectors)).toEqual({ store: "harbour", model: "hashing-768", stored: 0, total: 4 })
    const job = vectlJob({ ...opts, batchSize: 32 })
    const search = contexts.make()
    const r = await job.handler(Schema.decodeUnknownSync(job.payload)({ operation: "search", query: "how many storms did the lighthouse keeper log", store: "harbour", top_k: 2 }), search) as { model: string; matches: ReadonlyArray<{ id: string; score: number; text: string }> }
    expect(r.model).toBe("hashing-768")
    expect(r.matches[0]).toMatchObject({ id: vectors[0]!.id, text: corpus[0]!.text })
    expect(r.matches[0]!.score).toBeGreaterThan(r.matches[1]!.score)
  })

  it("refuses vectors of another model than the store's, of several models, or of the wrong length", async () => {
    const v = await run(embedOp(opts), {}, "A vector of the default model.")
    await run(storeVectorOp(opts), { store: "one-model" }, [v])
    const alt = await run(embedOp(opts), { model: "hashing-alt" }, "A vector of another model.")
    const f = await expectJobFailure(run(storeVectorOp(opts), { store: "one-model" }, [alt]))
    expect(f).toMatchObject({ kind: "VALIDATION_ERROR", message: 'store_vector: store "one-model" holds hashing-768 vectors; cannot add hashing-alt vectors' })
    expect((await expectJobFailure(run(storeVectorOp(opts), { store: "fresh" }, [v, alt]))).message).toMatch(/several models \(hashing-768, hashing-alt\)/)
    expect((await expectJobFailure(run(storeVectorOp(opts), { store: "fresh" }, [{ ...v, vector: [1, 0, 0] }]))).message).toBe(`store_vector: vector ${v.id} has 3 dimensions; vectl stores 768`)
    expect(opts.stores.get("fresh")).toBeUndefined()
    expect(() => Schema.decodeUnknownSync(storeVectorOp(opts).params)({ store: "../etc" })).toThrow()
    expect(await run(storeVectorOp(opts), { store: "never-made" }, [])).toEqual({ store: "never-made", model: null, stored: 0, total: 0 })
  })
})

describe("vector_search", () => {
  it("finds the stored chunks most like the query, best first, with score and source; unknown stores fail unless missing_ok", async () => {
    const chunks = await run(chunkOp(opts), { size: 8, overlap: 0 }, [
      { url: "runs/a/report.md", title: null, text: "comets shed icy tails near the sun" },
      { url: "runs/b/report.md", title: null, text: "bakers proof sourdough overnight in cool kitchens" }
    ])
    await run(storeVectorOp(opts), { store: "searchable" }, await run(embedBatchOp(opts), {}, chunks))
    const hits = await run(vectorSearchOp(opts), { store: "searchable", query: "sourdough bakers", top_k: 2 }, null)
    expect(hits.map((h) => [h.source, h.index])).toEqual([["runs/b/report.md", 0], ["runs/a/report.md", 1]])
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score!)
    expect(hits[0]!.text).toBe("bakers proof sourdough overnight in cool kitchens")
    expect(await run(vectorSearchOp(opts), { store: "never-made", query: "x", missing_ok: true }, null)).toEqual([])
    expect((await expectJobFailure(run(vectorSearchOp(opts), { store: "never-made", query: "x" }, null))).message).toBe('vector_search: no store named "never-made" (store vectors into it first)')
  })
})

describe("semantic_filter", () => {
  it("ranks the relevant chunk first, scores set and sorted, top_k and min_score applied", async () => {
    const chunks = await run(chunkOp(opts), {}, corpus)
    const ranked = await run(semanticFilterOp(opts), { query: "lighthouse keeper storms logbook", top_k: 3 }, chunks)
    expect(ranked).toHaveLength(3)
    expect(ranked[0]).toMatchObject({ source: "https://news.example/lighthouse", index: 0, text: corpus[0]!.text })
    expect(ranked[0]!.score).toBeGreaterThan(0.3)
    const scores = ranked.map((c) => c.score!)
    expect([...scores].sort((a, b) => b - a)).toEqual(scores)
    const strict = await run(semanticFilterOp(opts), { query: "lighthouse keeper storms logbook", min_score: 0.2 }, chunks)
    expect(strict.map((c) => c.source)).toEqual(["https://news.example/lighthouse"])
    const bread = await run(semanticFilterOp(opts), { query: "how long to knead bread dough", top_k: 1 }, chunks)
    expect(bread.map((c) => c.source)).toEqual(["https://food.example/bread"])
  })

  it("embeds chunks in batches with progress and needs a query", async () => {
    const chunks = Array.from({ length: 40 }, (_, i) => ({ text: i === 37 ? "the lamp of the lighthouse turns every thirty seconds" : `filler text number ${i} about gardens`, source: null, index: i }))
    const ctx = contexts.make()
    const kept = await run(semanticFilterOp(opts), { query: "lighthouse lamp", top_k: 5 }, chunks, ctx)
    expect(kept[0]!.index).toBe(37)
    expect(main.calls).toEqual([1, 32, 8])
    expect(ctx.progressLog.map((p) => p.message)).toEqual([
      "semantic_filter: embedded 32 of 40 texts (batch 1 of 2)",
      "semantic_filter: embedded 40 of 40 texts (batch 2 of 2)",
      "semantic_filter: kept 5 of 40 chunks (top_k 5, min_score 0)"
    ])
    expect(() => Schema.decodeUnknownSync(semanticFilterOp(opts).params)({ top_k: 3 })).toThrow(/query/)
    expect(() => Schema.decodeUnknownSync(semanticFilterOp(opts).params)({ query: "  " })).toThrow(/must contain a word/)
  })
})

describe("in the kernel", () => {
  let platform: Awaited<ReturnType<typeof startPlatform>>
  beforeAll(async () => {
    platform = await startPlatform({ cwd: ROOT, yaml: platformYaml({ backend: "embedded", dataDir: tempDir(), extra: "  job-vectl:\n    default_model: hashing-768\n" }) })
  })
  afterAll(async () => {
    await platform?.stop()
  })

  it("job-vectl registers its graph operations with their types", () => {
    const p = platform.kernel.plugins.find((x) => x.name === "job-vectl")!
    expect(p.status).toBe("running")
    expect([...p.contributions.graphOps].sort()).toEqual(["chunk", "embed", "embed_batch", "semantic_filter", "store_vector", "vector_search"])
    const types = Object.fromEntries(p.contributions.graphOps.map((n) => {
      const e = platform.kernel.graphOps.entry(n)!
      return [n, [e.plugin, e.value.category, e.value.inputTypes, e.value.outputType]]
    }))
    expect(types).toEqual({
      chunk: ["job-vectl", "transform", ["text", "text[]"], "chunk[]"],
      embed: ["job-vectl", "process", ["text", "chunk"], "vector"],
      embed_batch: ["job-vectl", "process", ["chunk[]"], "vector[]"],
      store_vector: ["job-vectl", "store", ["vector[]"], "json"],
      semantic_filter: ["job-vectl", "filter", ["chunk[]"], "chunk[]"],
      vector_search: ["job-vectl", "discover", [], "chunk[]"]
    })
  })
})
