/**
 * Workspaces on the `s3` file-store backend (a real S3-compatible server, s3rver, checking every
 * SigV4 signature): the same layout object by object, counts true,
 * archive then unarchive restoring every byte, delete leaving nothing.
 */
import { createHash } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import { type S3Fixture, startS3 } from "../../fixtures/s3-server.ts"
import { jobsClient, tempDir } from "../jobs/support.ts"
import { PNG, workspaceGraph, workspaceYaml } from "./support.ts"

let s3: S3Fixture
let platform: Awaited<ReturnType<typeof startPlatform>>
let api: ReturnType<typeof jobsClient>

beforeAll(async () => {
  s3 = await startS3()
  const files = `      backend: s3
      s3: { endpoint: "${s3.endpoint}", bucket: ${s3.bucket}, access_key_id: ${s3.accessKeyId}, secret_access_key: ${s3.secretAccessKey}, prefix: "store/" }`
  platform = await startPlatform({ cwd: ROOT, yaml: workspaceYaml({ dataDir: tempDir("ws-s3-"), files }) })
  api = jobsClient(platform.url("jobs"))
})
afterAll(async () => {
  await platform?.stop()
  await s3?.close()
})

/** The workspace's objects in the bucket: key relative to the workspace → sha256. */
const objectsOf = (id: string): Record<string, string> => {
  const root = `store/workspaces/${id}/`
  return Object.fromEntries([...s3.objects].filter(([k]) => k.startsWith(root)).map(([k, o]) => [k.slice(root.length), createHash("sha256").update(o.body).digest("hex")] as const).sort(([a], [b]) => (a < b ? -1 : 1)))
}
const sizeOf = (id: string, rel: string) => s3.objects.get(`store/workspaces/${id}/${rel}`)!.body.length

describe("workspaces on the s3 file store", () => {
  it("layout object by object, counts true, archive/unarchive byte for byte, delete", async () => {
    const ws = (await api.call("POST", "/api/v1/workspaces", { name: "On S3", config: { index_enabled: true } })).body
    const jobs = []
    for (let i = 0; i < 2; i++) {
      const r = await api.submit("graph", { graph: workspaceGraph({ pdfText: `s3 pdf ${i}`, synthesis: `s3 synthesis ${i}` }), workspace_id: ws.workspace_id })
      jobs.push(await api.waitFor(r.body.job_id, undefined, 30_000))
    }
    expect(jobs.map((j) => j.status)).toEqual(["COMPLETED", "COMPLETED"])
    const tree = objectsOf(ws.workspace_id)
    const expected = ["manifest.json", "outputs/summary.md"]
    for (const j of jobs) {
      for (const f of ["artifacts/data/brief.pdf", "artifacts/data/notes.md", "artifacts/data/rows.json", "artifacts/screenshots/page_one.png", "manifest.json", "report.md", "result.json"]) expected.push(`runs/${j.job_id}/${f}`)
    }
    expect(Object.keys(tree)).toEqual(expected.sort())
    expect(s3.objects.get(`store/workspaces/${ws.workspace_id}/runs/${jobs[0]!.job_id}/artifacts/screenshots/page_one.png`)!.body.equals(PNG)).toBe(true)
    expect(JSON.parse(s3.objects.get(`store/workspaces/${ws.workspace_id}/runs/${jobs[1]!.job_id}/result.json`)!.body.toString())).toEqual(jobs[1]!.result)
    const m = (await api.call("GET", `/api/v1/workspaces/${ws.workspace_id}`)).body
    expect(JSON.parse(s3.objects.get(`store/workspaces/${ws.workspace_id}/manifest.json`)!.body.toString())).toEqual(m)
    const bytes = Object.keys(tree).filter((k) => k !== "manifest.json").reduce((n, k) => n + sizeOf(ws.workspace_id, k), 0)
    expect(m).toMatchObject({ status: "active", runs_count: 2, artifact_count: 13, total_size_bytes: bytes })

    const search = (await api.call("POST", `/api/v1/workspaces/${ws.workspace_id}/search`, { query: "s3 pdf 1", top_k: 1 })).body
    expect(search.matches[0]).toMatchObject({ run_id: jobs[1]!.job_id, source: `runs/${jobs[1]!.job_id}/artifacts/data/brief.pdf` })

    const archived = (await api.call("POST", `/api/v1/workspaces/${ws.workspace_id}/archive`)).body
    expect(archived).toMatchObject({ status: "archived", runs_count: 2, artifact_count: 13 })
    expect(Object.keys(objectsOf(ws.workspace_id))).toEqual(["archive/runs.tar.gz", "manifest.json", "outputs/summary.md", ...jobs.map((j) => `runs/${j.job_id}/manifest.json`).sort()])
    expect(archived.total_size_bytes).toBeLessThan(bytes)
    expect((await api.call("POST", `/api/v1/workspaces/${ws.workspace_id}/unarchive`)).body).toMatchObject({ status: "active", total_size_bytes: bytes })
    const { "manifest.json": _a, ...restored } = objectsOf(ws.workspace_id)
    const { "manifest.json": _b, ...original } = tree
    expect(restored).toEqual(original)

    expect((await api.call("DELETE", `/api/v1/workspaces/${ws.workspace_id}`)).status).toBe(204)
    expect(objectsOf(ws.workspace_id)).toEqual({})
  }, 60_000)
})
