/**
 * Several instances on one PostgreSQL database: two platforms, each in its own process (two real
 * kernels, started together, so their migrations race too), serve the registry; 10 builders
 * publish 100 cartridges concurrently, half through each. Every cartridge is listed once, from
 * either instance, and every count is exact. The processes' logs (debug level) hold no token.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startPlatform, type RunningPlatform } from "../../../core/Kernel.ts"
import { withRegistry } from "../../../plugins/registry/commands/shared.ts"
import { call, type ChildPlatform, createDatabase, mint, NETLIST, serveChild, tempDir } from "./support.ts"

process.env.PLATFORM_LOG_LEVEL ??= "error"

const BUILDERS = 10
const PER_BUILDER = 10

describe("registry on PostgreSQL with two platform processes", () => {
  let db: Awaited<ReturnType<typeof createDatabase>>
  let minter: RunningPlatform
  let servers: Array<ChildPlatform> = []
  let dir: string
  let configFile: string

  beforeAll(async () => {
    dir = tempDir()
    db = await createDatabase()
    const yaml = (data: string) => `data_dir: ./${data}
listeners:
  - { name: chip, host: 127.0.0.1, port: 0 }
plugins:
  registry:
    store: postgres
    postgres: { url: "${db.url}", pool_size: 5 }
`
    configFile = path.join(dir, "platform.yaml")
    fs.writeFileSync(configFile, yaml("data-admin"))
    const [a, b, m] = await Promise.all([
      serveChild(dir, yaml("data-a")),
      serveChild(dir, yaml("data-b")),
      startPlatform({ cwd: dir, yaml: `listeners:\n  - { name: chip, port: 0 }\nplugins:\n  chip-sim: { netlist_dir: ${NETLIST}, workers: 0 }\n` })
    ])
    servers = [a, b]
    minter = m
  }, 180_000)
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()))
    await minter?.stop()
    await db?.drop()
  })

  it("100 concurrent publishes from 10 builders through both: all listed once, counts exact; no token in the logs", async () => {
    const bases = servers.map((s) => `${s.url}/api`)
    const chip = `${minter.url("chip")}/api`
    const carts: Array<string> = []
    for (let n = 0; n < BUILDERS * PER_BUILDER; n++) carts.push((await mint(chip, 1000 + n, `game ${n}`, 0)).toString("base64"))
    const tokens: Array<string> = []
    for (let i = 0; i < BUILDERS; i++) tokens.push((await withRegistry(configFile, (r) => r.mintToken(`b${i}`))).token)
    const claims = await Promise.all(tokens.map((token, i) => call(bases[i % 2]!, "POST", "/v1/registry/claim", { token, body: { handle: `builder-${i}`, name: `Builder ${i}` } })))
    expect(claims.map((c) => c.status)).toEqual(Array(BUILDERS).fill(201))

    const publishes = await Promise.all(Array.from({ length: BUILDERS * PER_BUILDER }, (_, n) => {
      const i = n % BUILDERS
      return call(bases[n % 2]!, "POST", `/v1/registry/b/builder-${i}/roms`, { token: tokens[i]!, body: { slug: `rom-${n}`, cartridge: carts[n]! } })
    }))
    expect(publishes.filter((p) => p.status !== 201).map((p) => p.text)).toEqual([])

    // The same slug published through both instances at once: one wins, the other is told.
    const race = await Promise.all(bases.map((b) => call(b, "POST", "/v1/registry/b/builder-0/roms", { token: tokens[0]!, body: { slug: "race", cartridge: carts[0]! } })))
    expect(race.map((r) => r.status).sort()).toEqual([201, 409])
    expect((await call(bases[0]!, "DELETE", "/v1/registry/b/builder-0/roms/race", { token: tokens[0]! })).status).toBe(204)

    for (const base of bases) {
      const seen: Array<string> = []
      let count = -1
      for (let offset = 0; ; offset += 30) {
        const page = await call(base, "GET", `/v1/registry/roms?limit=30&offset=${offset}&art=none`)
        expect(page.status).toBe(200)
        count = page.body.count
        seen.push(...page.body.roms.map((r: any) => `${r.handle}/${r.slug}`))
        if (page.body.roms.length < 30) break
      }
      expect(count).toBe(BUILDERS * PER_BUILDER)
      expect(seen).toHaveLength(BUILDERS * PER_BUILDER)
      expect(new Set(seen).size).toBe(BUILDERS * PER_BUILDER)
      const expected = Array.from({ length: BUILDERS * PER_BUILDER }, (_, n) => `builder-${n % BUILDERS}/rom-${n}`)
      expect([...seen].sort()).toEqual(expected.sort())
      const index = await call(base, "GET", "/v1/registry?limit=200")
      expect(index.body.count).toBe(BUILDERS)
      expect(index.body.builders.map((b: any) => b.count)).toEqual(Array(BUILDERS).fill(PER_BUILDER))
      for (let i = 0; i < BUILDERS; i++) {
        const mine = await call(base, "GET", `/v1/registry/roms?handle=builder-${i}&limit=1`)
        expect(mine.body.count).toBe(PER_BUILDER)
      }
    }
    // Both instances answer the same body, so the same ETag.
    const etags = await Promise.all(bases.map(async (b) => (await call(b, "GET", "/v1/registry/roms?limit=200")).headers.get("etag")))
    expect(etags[0]).toBe(etags[1])

    const logs = servers.map((s) => s.output()).join("\n")
    expect(logs).toMatch(/registry: postgres store ready/)
    expect(logs).toMatch(/\/api\/v1\/registry\/b\/builder-3\/roms/) // requests were logged (debug level)
    for (const token of tokens) {
      expect(logs.includes(token)).toBe(false)
      expect(logs.includes(token.split("_").slice(2).join("_"))).toBe(false)
    }
  }, 180_000)
})
