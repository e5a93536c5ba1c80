/**
 * `platform workspaces list|get|create|archive|unarchive|delete`, run as a user would
 * (bin/platform.js) against a running platform's Jobs API. (Each CLI start costs seconds: the
 * test keeps to one call per behaviour.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import { runCli } from "../../support/cli.ts"
import { freePort, jobsClient, tempDir } from "../jobs/support.ts"
import { workspaceGraph, workspaceYaml } from "./support.ts"

let platform: Awaited<ReturnType<typeof startPlatform>>
let url: string

beforeAll(async () => {
  platform = await startPlatform({ cwd: ROOT, yaml: workspaceYaml({ dataDir: tempDir("ws-cli-") }) })
  url = platform.url("jobs")
})
afterAll(async () => {
  await platform?.stop()
})

describe("platform workspaces", () => {
  it("create, list, get, archive, delete; --json; API errors as one line and exit 1", async () => {
    const created = await runCli(["workspaces", "create", "From the CLI", "--description", "made here", "--tag", "a", "--tag", "b", "--index", "--json", "--api-url", url])
    expect(created.code).toBe(0)
    const ws = JSON.parse(created.stdout)
    expect(ws).toMatchObject({ name: "From the CLI", description: "made here", tags: ["a", "b"], config: { index_enabled: true }, status: "created" })

    const list = await runCli(["workspaces", "list"], { PLATFORM_API_URL: url })
    expect(list.code).toBe(0)
    expect(list.stdout).toMatch(new RegExp(`${ws.workspace_id}\\s+From the CLI\\s+created\\s+0\\s+0\\s+0 B\\s+a,b`))

    const api = jobsClient(url)
    const job = await api.waitFor((await api.submit("graph", { graph: workspaceGraph({ pdfText: "cli", synthesis: "cli" }), workspace_id: ws.workspace_id })).body.job_id, undefined, 30_000)
    expect(job.status).toBe("COMPLETED")
    const got = await runCli(["workspaces", "get", ws.workspace_id, "--api-url", url])
    expect(got.stdout).toContain(`${ws.workspace_id}  From the CLI  (active)`)
    expect(got.stdout).toContain("runs 1, artifacts 7")

    expect(JSON.parse((await runCli(["workspaces", "archive", ws.workspace_id, "--json", "--api-url", url])).stdout)).toMatchObject({ status: "archived" })
    const again = await runCli(["workspaces", "archive", ws.workspace_id, "--api-url", url])
    expect(again.code).toBe(1)
    expect(again.stderr).toContain(`409: workspace ${ws.workspace_id} is archived already`)
    expect((await runCli(["workspaces", "delete", ws.workspace_id, "--api-url", url])).stdout).toContain(`deleted ${ws.workspace_id}`)
    const gone = await runCli(["workspaces", "get", ws.workspace_id, "--api-url", url])
    expect(gone.code).toBe(1)
    expect(gone.stderr).toContain(`404: no workspace "${ws.workspace_id}"`)
    const closed = `http://127.0.0.1:${await freePort()}`
    const down = await runCli(["workspaces", "list", "--api-url", closed])
    expect(down.code).toBe(1)
    expect(down.stderr).toContain(`cannot reach the Jobs API at ${closed}`)
  }, 300_000)
})
