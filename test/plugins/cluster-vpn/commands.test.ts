/**
 * `platform cluster health|devices` and `platform cluster banks list|create|idle|resume|delete`,
 * run as a user would (the compiled bin/platform.js) against a running Cluster API with the
 * `local` driver; `--json` equal to the API's answer; refusals and an unreachable API as one line
 * and exit 1.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import { runCli } from "../../support/cli.ts"
import { freePort, tempDir } from "../jobs/support.ts"
import { clusterClient, clusterYaml } from "./support.ts"

let platform: Awaited<ReturnType<typeof startPlatform>>
let url: string

beforeAll(async () => {
  platform = await startPlatform({ cwd: ROOT, yaml: clusterYaml({ dataDir: tempDir("cluster-cli-"), ports: { from: 19298, to: 19299 } }) })
  url = platform.url("cluster")
}, 60_000)
afterAll(async () => {
  await platform?.stop()
})

describe("platform cluster", () => {
  it("creates, lists, idles, resumes and deletes a bank; health and devices; --json is the API's answer", async () => {
    const created = await runCli(["cluster", "banks", "create", "Tex Bank", "--workers", "4,5", "--filter", "us:tx", "--api-url", url])
    expect(created.code, created.stderr).toBe(0)
    expect(created.stdout).toMatch(/^texbank {2}Tex Bank {2}\(active\)\n {2}geo us:tx, endpoint http:\/\/127\.0\.0\.1:1929[89]\n {2}workers 4, 5: 2\/2 up/)

    const listed = await runCli(["cluster", "banks", "list", "--json"], { CLUSTER_API_URL: url })
    // Health checks run every 0.2 s here: their time stamp moves between the two reads.
    const unstamped = (banks: Array<{ health: Record<string, unknown> }>) => banks.map((b) => ({ ...b, health: { ...b.health, checked_at: "-" } }))
    expect(unstamped(JSON.parse(listed.stdout))).toEqual(unstamped((await clusterClient(url).call("GET", "/api/v1/banks/")).body))
    const table = await runCli(["cluster", "banks", "list", "--api-url", url])
    expect(table.stdout).toMatch(/texbank\s+Tex Bank\s+us:tx\s+active\s+http:\/\/127\.0\.0\.1:\d+\s+4,5\s+2\/2/)

    const busy = await runCli(["cluster", "banks", "create", "Other", "--workers", "5", "--filter", "us", "--api-url", url])
    expect(busy.code).toBe(1)
    expect(busy.stderr).toMatch(/409 workers_busy: .*5/)

    const idled = await runCli(["cluster", "banks", "idle", "texbank", "--api-url", url])
    expect(idled.stdout).toContain("texbank  Tex Bank  (idle)")
    const resumed = await runCli(["cluster", "banks", "resume", "texbank", "--json", "--api-url", url])
    expect(JSON.parse(resumed.stdout)).toMatchObject({ tag: "texbank", status: "active" })

    const health = await runCli(["cluster", "health", "--api-url", url])
    expect(health.stdout).toMatch(/^healthy: local driver; devices 18\/18 online; workers 14\/16 free; banks 1 active, 0 idle/)
    const devices = await runCli(["cluster", "devices", "--api-url", url])
    expect(devices.stdout.trim().split("\n")).toHaveLength(19)

    const deleted = await runCli(["cluster", "banks", "delete", "texbank", "--api-url", url])
    expect(deleted.stdout.trim()).toBe("deleted texbank")
    expect((await clusterClient(url).call("GET", "/api/v1/banks/")).body).toEqual([])
  }, 60_000)

  it("an unknown bank and an API that does not answer: one line, exit 1", async () => {
    const missing = await runCli(["cluster", "banks", "idle", "nosuchbank", "--api-url", url])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toMatch(/404 .*nosuchbank/)
    const down = await runCli(["cluster", "health", "--api-url", `http://127.0.0.1:${await freePort()}`])
    expect(down.code).toBe(1)
    expect(down.stderr).toMatch(/cannot reach the Cluster API at http:\/\/127\.0\.0\.1:\d+/)
  })
})
