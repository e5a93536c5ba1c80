/**
 * `platform registry token mint|list|revoke`, run as a user would (bin/platform.js), on both
 * stores: the token is printed once, list shows ids and states but never a token, revoke moves a
 * token to revoked, and nothing the commands store or print later holds the token.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli } from "../../support/cli.ts"
import { createDatabase, tempDir } from "./support.ts"

describe.each(["embedded", "postgres"] as const)("platform registry token on the %s store", (store) => {
  let config: string
  let dir: string
  let db: Awaited<ReturnType<typeof createDatabase>> | undefined
  beforeAll(async () => {
    dir = tempDir()
    if (store === "postgres") db = await createDatabase()
    config = path.join(dir, "platform.yaml")
    fs.writeFileSync(config, `data_dir: ./data
listeners:
  - { name: chip, port: 0 }
plugins:
  registry:
    store: ${store}
    postgres: { url: "${db?.url ?? "postgres://unused"}" }
`)
  })
  afterAll(async () => {
    await db?.drop()
  })

  it("mint prints the token once; list shows ids and states only; revoke revokes", async () => {
    // The CLI takes seconds to start on a busy machine: independent commands run side by side.
    const [minted, json] = await Promise.all([
      runCli(["registry", "token", "mint", "--label", "ada", "--config", config]),
      runCli(["registry", "token", "mint", "--json", "--config", config])
    ])
    expect(minted.code, minted.stderr).toBe(0)
    const token = minted.stdout.trim()
    expect(token).toMatch(/^rgt_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/)
    const id = token.split("_")[1]!
    expect(minted.stderr).toMatch(/shown this once/)

    const second = JSON.parse(json.stdout) as { id: string; token: string }
    expect(second.token.split("_")[1]).toBe(second.id)

    const list = await runCli(["registry", "token", "list", "--json", "--config", config])
    expect(list.code, list.stderr).toBe(0)
    const rows = JSON.parse(list.stdout) as Array<Record<string, unknown>>
    expect(rows.map((r) => [r.id, r.state, r.label]).sort()).toEqual([[id, "minted", "ada"], [second.id, "minted", ""]].sort())
    expect(list.stdout).not.toContain(token.split("_")[2])

    const revoked = await runCli(["registry", "token", "revoke", id, "--config", config])
    expect(revoked.code, revoked.stderr).toBe(0)
    expect(revoked.stdout).toMatch(new RegExp(`token ${id} revoked`))
    const [again, table] = await Promise.all([
      runCli(["registry", "token", "revoke", id, "--config", config]),
      runCli(["registry", "token", "list", "--config", config])
    ])
    expect(again.code).toBe(1)
    expect(again.stderr).toMatch(/no live token/)

    expect(table.stdout).toMatch(new RegExp(`${id}\\s+revoked`))
    expect(table.stdout).toMatch(new RegExp(`${second.id}\\s+minted`))
    expect(table.stdout + table.stderr).not.toContain(token.split("_")[2])
    expect(table.stdout + table.stderr).not.toContain(second.token.split("_")[2])
  }, 600_000)
})
