import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { JobFailure } from "../../../plugins/jobs/Contract.ts"
import { DIMENSIONS, hashingVector, llamaCppEmbedder, openaiEmbedder } from "../../../plugins/job-vectl/Embedder.ts"
import { writeTinyGguf } from "../../../scripts/make-tiny-gguf.ts"

const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0)
const norm = (a: Float32Array) => Math.sqrt(dot(a, a))
const signal = new AbortController().signal

describe("hashing embedder", () => {
  it("is deterministic, 768-d, unit length, and scores shared words above unrelated text", () => {
    const a = hashingVector("The quick brown fox jumps over the lazy dog")
    expect(a).toHaveLength(DIMENSIONS)
    expect(norm(a)).toBeCloseTo(1, 5)
    expect(Array.from(hashingVector("the QUICK brown fox jumps over the lazy dog!"))).toEqual(Array.from(a))
    const near = hashingVector("a brown fox jumps")
    const far = hashingVector("quarterly revenue of the semiconductor division")
    expect(dot(a, near)).toBeGreaterThan(0.4)
    expect(dot(a, near)).toBeGreaterThan(dot(a, far) + 0.3)
  })
})

describe("openai embedder", () => {
  it("posts batches to /embeddings with dimensions 768 and normalises the answers; other lengths and HTTP errors are failures", async () => {
    const seen: Array<{ model: string; input: Array<string>; dimensions?: number; auth?: string }> = []
    let dims = 768
    let status = 200
    const server = http.createServer(async (req, res) => {
      let body = ""
      for await (const c of req) body += c
      const b = JSON.parse(body)
      seen.push({ ...b, auth: req.headers.authorization })
      res.writeHead(status, { "content-type": "application/json" })
      // answer in reverse order: the client must sort by index
      res.end(JSON.stringify({ data: b.input.map((t: string, index: number) => ({ index, embedding: Array.from(hashingVector(t).slice(0, dims), (x) => x * 3).concat(Array(Math.max(0, dims - 768)).fill(0)) })).reverse() }))
    })
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
    try {
      const e = openaiEmbedder("nomic", { kind: "openai", base_url: base, api_key: "k", send_dimensions: true, timeout_s: 5 }, 2)
      const texts = ["alpha beta", "gamma delta", "epsilon"]
      const v = await e.embed(texts, "document", signal)
      expect(seen.map((s) => s.input)).toEqual([["alpha beta", "gamma delta"], ["epsilon"]])
      expect(seen[0]).toMatchObject({ model: "nomic", dimensions: 768, auth: "Bearer k" })
      v.forEach((x, i) => {
        expect(norm(x)).toBeCloseTo(1, 5)
        expect(dot(x, hashingVector(texts[i]!))).toBeCloseTo(1, 5)
      })
      dims = 1024
      const wrong = await e.embed(["x"], "query", signal).catch((err) => err)
      expect(wrong).toBeInstanceOf(JobFailure)
      expect(wrong.message).toMatch(/1024-dimensional/)
      dims = 768
      status = 503
      const down = await e.embed(["x"], "query", signal).catch((err) => err)
      expect(down).toMatchObject({ kind: "REMOTE_ERROR", retryable: true })
    } finally {
      server.close()
    }
  })
})

describe("llama-cpp embedder", () => {
  it("embeds through node-llama-cpp with a 768-d GGUF; identical texts give identical unit vectors", async () => {
    const file = path.join(os.tmpdir(), `vectl-tiny-768-${process.pid}.gguf`)
    writeTinyGguf(file, { embd: 768, layers: 1, heads: 4, ff: 64, contextLength: 512 })
    const e = llamaCppEmbedder("tiny", { kind: "llama-cpp", model_path: file, document_prefix: "", query_prefix: "", threads: 1, context_size: 512 }, file)
    try {
      const [a, b, c] = await e.embed(["hello world", "hello world", "something else entirely"], "document", signal)
      expect(a).toHaveLength(768)
      expect(norm(a!)).toBeCloseTo(1, 4)
      expect(dot(a!, b!)).toBeCloseTo(1, 5)
      expect(dot(a!, c!)).toBeLessThan(0.9999)
    } finally {
      await e.close?.()
    }
  }, 60_000)
})
