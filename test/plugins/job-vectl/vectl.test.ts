/**
 * vectl through the real kernel and Jobs API on both backends: embed texts into a named store,
 * search finds the chunk holding the answer; stores persist across a restart; misuse fails with
 * VALIDATION_ERROR (not retried) or 422.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import { jobsClient, platformYaml, startRedis, tempDir, type TestRedis } from "../jobs/support.ts"

const filler = (n: number, seed: string) =>
  Array.from({ length: n }, (_, i) => ["river", "stone", "market", "window", "garden", "engine", "letter", "cloud"][(i * 7 + seed.length) % 8] + (i % 13)).join(" ")

// A long report (1312 words: windows start at 0, 448, 800) whose second window alone holds the
// sentence about the lighthouse (words 600-611).
const report = `${filler(600, "a")} The old lighthouse keeper recorded forty seven storms in the winter logbook. ${filler(700, "b")}`
const recipes = "Knead the bread dough for ten minutes, then let it rise in a warm kitchen until doubled."
const finance = "Quarterly revenue grew eight percent while operating margins in the semiconductor division narrowed."

const vectlYaml = `  job-vectl:
    default_model: hashing-768
`

let redis: TestRedis
beforeAll(async () => {
  redis = await startRedis()
})
afterAll(async () => {
  await redis?.stop()
})

describe.each(["embedded", "redis"] as const)("vectl on the %s backend", (backend) => {
  const dataDir = tempDir()
  let platform: Awaited<ReturnType<typeof startPlatform>>
  let api: ReturnType<typeof jobsClient>

  beforeAll(async () => {
    platform = await startPlatform({ cwd: ROOT, yaml: platformYaml({ backend, dataDir, redisUrl: redis.url, prefix: `v${backend}`, extra: vectlYaml }) })
    api = jobsClient(platform.url("jobs"))
  })
  afterAll(async () => {
    await platform?.stop()
  })

  it("embeds texts (chunked 512/64) and search finds the chunk that answers", async () => {
    const e = await api.waitFor((await api.submit("vectl", { operation: "embed", texts: [recipes, report, finance], store: "notes" })).body.job_id)
    expect(e.status).toBe("COMPLETED")
    const r = e.result as any
    expect(r).toMatchObject({ operation: "embed", store: "notes", model: "hashing-768", dimensions: 768, chunk_words: 512, overlap_words: 64, chunks_total: 5, chunks_added: 5, store_size: 5 })
    expect(r.documents.map((d: any) => d.chunks.length)).toEqual([1, 3, 1])
    expect(r.documents[1].words).toBe(1312)
    const s = await api.waitFor((await api.submit("vectl", { operation: "search", query: "how many storms did the lighthouse keeper log", store: "notes", top_k: 3 })).body.job_id)
    expect(s.status).toBe("COMPLETED")
    const m = (s.result as any).matches
    expect((s.result as any).operation).toBe("search")
    expect(m).toHaveLength(3)
    expect(m[0].id).toBe(`${r.documents[1].id}#1`)
    expect(m[0].text).toContain("lighthouse keeper recorded forty seven storms")
    expect(m[0].score).toBeGreaterThan(m[1].score)
    const bread = await api.waitFor((await api.submit("vectl", { operation: "search", query: "bread dough rise", store: "notes", top_k: 1 })).body.job_id)
    expect((bread.result as any).matches[0].id).toBe(r.documents[0].chunks[0])
    // the same texts again add nothing (content-hash ids)
    const again = await api.waitFor((await api.submit("vectl", { operation: "embed", texts: [finance], store: "notes" })).body.job_id)
    expect(again.result).toMatchObject({ chunks_total: 1, chunks_added: 0, store_size: 5 })
  })

  it("refuses bad payloads with 422 and misuse with a VALIDATION_ERROR that is not retried", async () => {
    const bad = await api.submit("vectl", { operation: "search", store: "../etc" })
    expect(bad.status).toBe(422)
    expect(bad.body.error).toMatch(/store: /)
    const noTexts = await api.submit("vectl", { operation: "embed" })
    expect(noTexts.status).toBe(422)
    expect(noTexts.body.error).toMatch(/texts: is required when operation is embed/)
    const missing = await api.waitFor((await api.submit("vectl", { operation: "search", query: "x", store: "nowhere" })).body.job_id)
    expect(missing).toMatchObject({ status: "FAILED", attempts: 1, error_kind: "VALIDATION_ERROR" })
    const model = await api.waitFor((await api.submit("vectl", { operation: "embed", texts: ["x"], model: "gpt-9" })).body.job_id)
    expect(model.error).toMatch(/unknown model "gpt-9"/)
  })

  it("keeps stores across a restart", async () => {
    await platform.stop()
    platform = await startPlatform({ cwd: ROOT, yaml: platformYaml({ backend, dataDir, redisUrl: redis.url, prefix: `v${backend}`, extra: vectlYaml }) })
    api = jobsClient(platform.url("jobs"))
    const s = await api.waitFor((await api.submit("vectl", { operation: "search", query: "semiconductor margins", store: "notes", top_k: 1 })).body.job_id)
    expect((s.result as any).matches[0].text).toBe(finance)
  })
})
