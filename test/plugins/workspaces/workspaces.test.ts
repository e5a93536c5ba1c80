/**
 * Workspaces end to end on the real kernel (embedded jobs backend, local file store): the whole
 * lifecycle through the HTTP routes, the storage layout file by file, archive → unarchive
 * restoring every byte, search finding a run's indexed content (Markdown, synthesis, PDF), and
 * bad input answered 4xx with a clear body.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import { jobsClient, tempDir } from "../jobs/support.ts"
import { hashTree, PNG, pdfOf, workspaceGraph, workspaceYaml } from "./support.ts"

let platform: Awaited<ReturnType<typeof startPlatform>>
let api: ReturnType<typeof jobsClient>
let dataDir: string
const filesRoot = () => path.join(dataDir, "jobs", "files")

beforeAll(async () => {
  dataDir = tempDir("ws-test-")
  platform = await startPlatform({ cwd: ROOT, yaml: workspaceYaml({ dataDir }) })
  api = jobsClient(platform.url("jobs"))
})
afterAll(async () => {
  await platform?.stop()
})

const runGraph = async (workspaceId: string, graph: string) => {
  const r = await api.submit("graph", { graph, workspace_id: workspaceId })
  expect(r.status).toBe(202)
  return api.waitFor(r.body.job_id, undefined, 30_000)
}

describe("in the kernel", () => {
  it("boots with its routes and its graph run observer", () => {
    const p = platform.kernel.plugins.find((x) => x.name === "workspaces")!
    expect(p).toMatchObject({ status: "running", listener: "jobs", contributions: { routes: 11, graphRunObservers: ["workspaces"] }, details: { file_store: "local", locks: "in-process" } })
    expect(platform.kernel.plugins.find((x) => x.name === "jobs")!.contributions).toMatchObject({ jobsStorage: ["jobs"] })
  })
})

describe("workspace lifecycle", () => {
  it("created → active (runs filed, counts true) → archived → active → deleted", async () => {
    const created = await api.call("POST", "/api/v1/workspaces", { name: "Quasar study", description: "distant engines", tags: ["astro", "2026"], config: { index_enabled: true } })
    expect(created.status).toBe(201)
    const ws = created.body
    expect(ws).toMatchObject({ name: "Quasar study", description: "distant engines", tags: ["astro", "2026"], config: { index_enabled: true }, runs_count: 0, artifact_count: 0, total_size_bytes: 0, status: "created" })
    expect(ws.workspace_id).toMatch(/^ws_[0-9a-f]{16}$/)
    expect(ws.index_workspace_id).toBe(`idx_${ws.workspace_id.slice(3)}`)
    expect(Object.keys(ws).sort()).toEqual(["artifact_count", "config", "created_at", "description", "index_workspace_id", "name", "runs_count", "status", "tags", "total_size_bytes", "updated_at", "workspace_id"])
    expect((await api.call("GET", "/api/v1/workspaces")).body.map((w: { workspace_id: string }) => w.workspace_id)).toContain(ws.workspace_id)
    // Created cannot be archived: nothing to archive yet.
    const early = await api.call("POST", `/api/v1/workspaces/${ws.workspace_id}/archive`)
    expect(early.status).toBe(409)
    expect(early.body).toMatchObject({ _tag: "WorkspaceStateConflict", status: "created", error: expect.stringContaining("no runs yet") })

    const job1 = await runGraph(ws.workspace_id, workspaceGraph({ pdfText: "The blazar jet emits gamma photons", synthesis: "Quasars are powered by accreting supermassive black holes." }))
    expect(job1.status).toBe("COMPLETED")
    const job2 = await runGraph(ws.workspace_id, workspaceGraph({ name: "second", pdfText: "Second brief", synthesis: "Radio lobes extend for megaparsecs." }))
    expect(job2.status).toBe("COMPLETED")

    const active = (await api.call("GET", `/api/v1/workspaces/${ws.workspace_id}`)).body
    expect(active).toMatchObject({ status: "active", runs_count: 2, artifact_count: 13 })
    // total_size_bytes is every stored byte of the workspace but its manifest.
    const wsDir = path.join(filesRoot(), "workspaces", ws.workspace_id)
    const onDisk = Object.keys(hashTree(wsDir)).filter((k) => k !== "manifest.json").reduce((n, k) => n + fs.statSync(path.join(wsDir, k)).size, 0)
    expect(active.total_size_bytes).toBe(onDisk)

    const runs = (await api.call("GET", `/api/v1/workspaces/${ws.workspace_id}/runs`)).body
    expect(runs.map((r: { run_id: string }) => r.run_id).sort()).toEqual([job1.job_id, job2.job_id].sort())
    expect(runs[0]).toMatchObject({ status: "COMPLETED", graph_name: expect.any(String), duration_seconds: expect.any(Number) })
    const detail = (await api.call("GET", `/api/v1/workspaces/${ws.workspace_id}/runs/${job1.job_id}`)).body
    expect(detail.manifest).toMatchObject({ run_id: job1.job_id, status: "COMPLETED", graph_name: "ws_demo", workspace_id: ws.workspace_id, indexed_chunks: expect.any(Number) })
    expect(detail.manifest.indexed_chunks).toBeGreaterThanOrEqual(4)
    expect(detail.result).toMatchObject({ graph_name: "ws_demo", outputs: { synthesis: "Quasars are powered by accreting supermassive black holes." } })
    expect(detail.report).toContain("# ws_demo")
    expect(detail.report).toContain("Quasars are powered by accreting supermassive black holes.")

    const artifacts = (await api.call("GET", `/api/v1/workspaces/${ws.workspace_id}/artifacts`)).body
    expect(artifacts.filter((a: { artifact_type: string }) => a.artifact_type === "screenshot")).toHaveLength(2)
    expect(artifacts.filter((a: { artifact_type: string }) => a.artifact_type === "output").map((a: { path: string }) => a.path)).toEqual(["outputs/summary.md"])

    // Patch, then archive: metadata stays readable, results are in the archive.
    const patched = await api.call("PATCH", `/api/v1/workspaces/${ws.workspace_id}`, { description: "distant engines, revisited", tags: ["astro"] })
    expect(patched.body).toMatchObject({ description: "distant engines, revisited", tags: ["astro"], runs_count: 2 })
    const archived = await api.call("POST", `/api/v1/workspaces/${ws.workspace_id}/archive`)
    expect(archived.status).toBe(200)
    expect(archived.body).toMatchObject({ status: "archived", runs_count: 2, artifact_count: 13 })
    expect(archived.body.total_size_bytes).toBeLessThan(active.total_size_bytes)
    expect((await api.call("GET", `/api/v1/workspaces/${ws.workspace_id}/runs`)).body).toHaveLength(2)
    expect((await api.call("GET", `/api/v1/workspaces/${ws.workspace_id}/artifacts`)).body).toHaveLength(artifacts.length)

    const unarchived = await api.call("POST", `/api/v1/workspaces/${ws.workspace_id}/unarchive`)
    expect(unarchived.body).toMatchObject({ status: "active", runs_count: 2, artifact_count: 13, total_size_bytes: active.total_size_bytes })

    const del = await api.call("DELETE", `/api/v1/workspaces/${ws.workspace_id}`)
    expect(del.status).toBe(204)
    expect((await api.call("GET", `/api/v1/workspaces/${ws.workspace_id}`)).status).toBe(404)
    expect(fs.existsSync(wsDir)).toBe(false)
  }, 60_000)
})

describe("storage layout", () => {
  it("a run is filed exactly as specified, file by file", async () => {
    const ws = (await api.call("POST", "/api/v1/workspaces", { name: "Layout" })).body
    const job = await runGraph(ws.workspace_id, workspaceGraph({ pdfText: "layout pdf", synthesis: "layout synthesis" }))
    expect(job.status).toBe("COMPLETED")
    const r = job.job_id
    const tree = hashTree(path.join(filesRoot(), "workspaces", ws.workspace_id))
    expect(Object.keys(tree)).toEqual([
      "manifest.json",
      "outputs/summary.md",
      `runs/${r}/artifacts/data/brief.pdf`,
      `runs/${r}/artifacts/data/notes.md`,
      `runs/${r}/artifacts/data/rows.json`,
      `runs/${r}/artifacts/screenshots/page_one.png`,
      `runs/${r}/manifest.json`,
      `runs/${r}/report.md`,
      `runs/${r}/result.json`
    ])
    const dir = path.join(filesRoot(), "workspaces", ws.workspace_id)
    const read = (rel: string) => fs.readFileSync(path.join(dir, rel))
    expect(read(`runs/${r}/artifacts/screenshots/page_one.png`).equals(PNG)).toBe(true)
    expect(read(`runs/${r}/artifacts/data/brief.pdf`).equals(Buffer.from(pdfOf("layout pdf")))).toBe(true)
    expect(JSON.parse(read(`runs/${r}/artifacts/data/rows.json`).toString())).toEqual({ rows: [1, 2, 3] })
    expect(JSON.parse(read(`runs/${r}/result.json`).toString())).toEqual(job.result)
    expect(read(`runs/${r}/report.md`).toString()).toContain("layout synthesis")
    const manifest = JSON.parse(read("manifest.json").toString())
    expect(manifest).toEqual((await api.call("GET", `/api/v1/workspaces/${ws.workspace_id}`)).body)
    expect(manifest).toMatchObject({ runs_count: 1, artifact_count: 7, status: "active" })
    expect(manifest.index_workspace_id).toBeUndefined()
    const runManifest = JSON.parse(read(`runs/${r}/manifest.json`).toString())
    // Artifacts in the order the run's operations stored them (parallel: any order).
    expect(runManifest.files.map((f: { path: string; artifact_type: string; size_bytes: number }) => [f.path, f.artifact_type, f.size_bytes]).sort()).toEqual([
      [`runs/${r}/result.json`, "result", read(`runs/${r}/result.json`).length],
      [`runs/${r}/artifacts/screenshots/page_one.png`, "screenshot", PNG.length],
      [`runs/${r}/artifacts/data/rows.json`, "data", 16],
      [`runs/${r}/artifacts/data/brief.pdf`, "data", pdfOf("layout pdf").length],
      [`runs/${r}/artifacts/data/notes.md`, "data", read(`runs/${r}/artifacts/data/notes.md`).length],
      [`runs/${r}/report.md`, "report", read(`runs/${r}/report.md`).length]
    ].sort())
    expect(manifest.total_size_bytes).toBe(Object.keys(tree).filter((k) => k !== "manifest.json").reduce((n, k) => n + read(k).length, 0))
  }, 30_000)
})

describe("archive", () => {
  it("unarchive restores every byte; archived workspaces refuse writes and runs", async () => {
    const ws = (await api.call("POST", "/api/v1/workspaces", { name: "Archive me", config: { index_enabled: true } })).body
    for (let i = 0; i < 3; i++) expect((await runGraph(ws.workspace_id, workspaceGraph({ pdfText: `pdf ${i}`, synthesis: `synthesis ${i} `.repeat(200) }))).status).toBe("COMPLETED")
    const dir = path.join(filesRoot(), "workspaces", ws.workspace_id)
    const before = hashTree(dir)
    const sizeBefore = Object.keys(before).filter((k) => k !== "manifest.json").reduce((n, k) => n + fs.statSync(path.join(dir, k)).size, 0)
    const archived = (await api.call("POST", `/api/v1/workspaces/${ws.workspace_id}/archive`)).body
    const during = hashTree(dir)
    // Only the manifests, the outputs and the archive are left.
    expect(Object.keys(during).filter((k) => k.startsWith("runs/") && !k.endsWith("/manifest.json"))).toEqual([])
    expect(Object.keys(during)).toContain("archive/runs.tar.gz")
    expect(archived.total_size_bytes).toBeLessThan(sizeBefore / 2)

    const patch = await api.call("PATCH", `/api/v1/workspaces/${ws.workspace_id}`, { name: "renamed" })
    expect(patch.status).toBe(409)
    expect(patch.body).toMatchObject({ _tag: "WorkspaceStateConflict", status: "archived", error: expect.stringContaining("archived") })
    const search = await api.call("POST", `/api/v1/workspaces/${ws.workspace_id}/search`, { query: "pdf" })
    expect(search.status).toBe(409)
    const refused = await runGraph(ws.workspace_id, workspaceGraph({ pdfText: "x", synthesis: "y" }))
    expect(refused).toMatchObject({ status: "FAILED", error: expect.stringContaining("archived") })
    expect((await api.call("POST", `/api/v1/workspaces/${ws.workspace_id}/archive`)).status).toBe(409)

    expect((await api.call("POST", `/api/v1/workspaces/${ws.workspace_id}/unarchive`)).status).toBe(200)
    const after = hashTree(dir)
    const { "manifest.json": m1, ...restBefore } = before
    const { "manifest.json": m2, ...restAfter } = after
    expect(restAfter).toEqual(restBefore)
    expect(m1).toBeDefined()
    expect(m2).toBeDefined()
    expect((await api.call("POST", `/api/v1/workspaces/${ws.workspace_id}/unarchive`)).status).toBe(409)
  }, 60_000)
})

describe("search", () => {
  it("finds a run's indexed Markdown, synthesis and PDF text, naming the run", async () => {
    const ws = (await api.call("POST", "/api/v1/workspaces", { name: "Searchable", config: { index_enabled: true } })).body
    const a = await runGraph(ws.workspace_id, workspaceGraph({ pdfText: "Magnetars flare with enormous X-ray bursts", synthesis: "Pulsars spin with clockwork regularity", note: "# Notes\n\nNeutron star crusts quake" }))
    const b = await runGraph(ws.workspace_id, workspaceGraph({ pdfText: "Coral reefs bleach in warm water", synthesis: "Kelp forests shelter sea otters", note: "# Notes\n\nTides follow the moon" }))
    const find = async (query: string) => (await api.call("POST", `/api/v1/workspaces/${ws.workspace_id}/search`, { query, top_k: 3 })).body
    const pdf = await find("magnetars flare enormous x-ray bursts")
    expect(pdf.matches[0]).toMatchObject({ run_id: a.job_id, source: `runs/${a.job_id}/artifacts/data/brief.pdf`, text: expect.stringContaining("Magnetars flare") })
    const synthesis = await find("kelp forests shelter sea otters")
    expect(synthesis.matches.slice(0, 2).map((m: { run_id: string }) => m.run_id)).toEqual([b.job_id, b.job_id])
    expect(synthesis.matches.map((m: { source: string }) => m.source)).toContain(`runs/${b.job_id}/outputs/synthesis`)
    const md = await find("neutron star crusts quake")
    expect(md.matches[0]).toMatchObject({ run_id: a.job_id, source: `runs/${a.job_id}/artifacts/data/notes.md` })
    expect(synthesis).toMatchObject({ workspace_id: ws.workspace_id, index_workspace_id: ws.index_workspace_id })
  }, 60_000)
})

describe("bad input", () => {
  it("answers 4xx with a clear body", async () => {
    const unknown = await api.call("GET", "/api/v1/workspaces/ws_doesnotexist")
    expect(unknown).toMatchObject({ status: 404, body: { _tag: "WorkspaceNotFound", error: 'no workspace "ws_doesnotexist"', workspace_id: "ws_doesnotexist" } })
    for (const [method, p] of [["PATCH", "/x"], ["DELETE", ""], ["POST", "/archive"], ["POST", "/unarchive"], ["GET", "/runs"], ["GET", "/artifacts"]] as const) {
      const r = await api.call(method, `/api/v1/workspaces/ws_nope${p}`, method === "PATCH" ? {} : undefined)
      expect(r.status, `${method} ${p}`).toBe(404)
    }
    expect((await api.call("GET", "/api/v1/workspaces/..%2F..%2Fetc")).status).toBe(404)
    for (const name of ["", " leading space", "x".repeat(101), "slash/name", "new\nline"]) {
      const r = await api.call("POST", "/api/v1/workspaces", { name })
      expect(r.status, JSON.stringify(name)).toBe(422)
      expect(r.body.detail[0].loc).toEqual(["body", "name"])
    }
    expect((await api.call("POST", "/api/v1/workspaces", { description: "no name" })).status).toBe(422)
    expect((await api.call("POST", "/api/v1/workspaces", "{not json")).status).toBe(400)
    expect((await api.call("POST", "/api/v1/workspaces", { name: "ok", tags: "astro" })).status).toBe(422)
    const first = await api.call("POST", "/api/v1/workspaces", { name: "Unique name" })
    const dup = await api.call("POST", "/api/v1/workspaces", { name: "unique NAME" })
    expect(dup).toMatchObject({ status: 409, body: { _tag: "WorkspaceNameTaken", workspace_id: first.body.workspace_id, error: expect.stringContaining("exists") } })
    const run = await api.call("GET", `/api/v1/workspaces/${first.body.workspace_id}/runs/job_missing`)
    expect(run).toMatchObject({ status: 404, body: { _tag: "RunNotFound", run_id: "job_missing" } })
    const noIndex = await api.call("POST", `/api/v1/workspaces/${first.body.workspace_id}/search`, { query: "x" })
    expect(noIndex).toMatchObject({ status: 409, body: { error: expect.stringContaining("index_enabled") } })
    expect((await api.call("POST", `/api/v1/workspaces/${first.body.workspace_id}/search`, { query: "   " })).status).toBe(422)
    expect((await api.call("POST", `/api/v1/workspaces/${first.body.workspace_id}/search`, { query: "x", top_k: 0 })).status).toBe(422)
    const ghost = await runGraph("ws_ghost", workspaceGraph({ pdfText: "x", synthesis: "y" }))
    expect(ghost).toMatchObject({ status: "FAILED", error: expect.stringContaining('workspace_id "ws_ghost": no such workspace') })
  }, 30_000)

  it("documents every route in the OpenAPI document", async () => {
    const doc = await (await fetch(`${platform.url("jobs")}/openapi.json`)).json() as { paths: Record<string, Record<string, unknown>> }
    const paths = Object.entries(doc.paths).filter(([p]) => p.startsWith("/api/v1/workspaces")).map(([p, ops]) => `${Object.keys(ops).sort().join(",")} ${p}`).sort()
    expect(paths).toEqual([
      "delete,get,patch /api/v1/workspaces/{id}",
      "get /api/v1/workspaces/{id}/artifacts",
      "get /api/v1/workspaces/{id}/runs",
      "get /api/v1/workspaces/{id}/runs/{run_id}",
      "get,post /api/v1/workspaces",
      "post /api/v1/workspaces/{id}/archive",
      "post /api/v1/workspaces/{id}/search",
      "post /api/v1/workspaces/{id}/unarchive"
    ])
  })
})
