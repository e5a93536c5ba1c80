/**
 * The registry end to end on both stores (the same suite, `describe.each`): a real kernel serving
 * chip-sim (which mints the cartridges) and the registry on the `chip` listener, tokens minted
 * the way `platform registry token mint` does, every write and read over HTTP.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { gzipSync } from "node:zlib"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startPlatform, type RunningPlatform } from "../../../core/Kernel.ts"
import { withRegistry } from "../../../plugins/registry/commands/shared.ts"
import { art, call, createDatabase, mint, NETLIST, tempDir } from "./support.ts"

process.env.PLATFORM_LOG_LEVEL ??= "error"

const LIMITS = { body_bytes: 65536, cartridge_bytes: 16384, cartridge_json_bytes: 32768, roms_per_builder: 3, writes_per_minute: 25, avatar_tiles: { w: 2, h: 2 }, cover_tiles: { w: 4, h: 3 } }

const yamlFor = (store: string, pgUrl: string) => `data_dir: ./data
listeners:
  - { name: chip, host: 127.0.0.1, port: 0 }
plugins:
  chip-sim:
    netlist_dir: ${NETLIST}
    workers: 0
  registry:
    store: ${store}
    postgres: { url: "${pgUrl}" }
    limits: ${JSON.stringify(LIMITS)}
`

describe.each(["embedded", "postgres"] as const)("registry on the %s store", (store) => {
  let dir: string
  let platform: RunningPlatform
  let base: string
  let chip: string
  let configFile: string
  let db: Awaited<ReturnType<typeof createDatabase>> | undefined
  const seen: Array<string> = [] // every response body, grepped for tokens at the end
  const tokens: Array<string> = []
  const api = async (method: string, route: string, options: Parameters<typeof call>[3] = {}) => {
    const r = await call(base, method, route, options)
    seen.push(r.text, JSON.stringify([...r.headers]))
    return r
  }
  const mintToken = async (label = "") => {
    const t = await withRegistry(configFile, (r) => r.mintToken(label))
    tokens.push(t.token)
    return t
  }
  const claimed = async (handle: string) => {
    const t = await mintToken(handle)
    expect((await api("POST", "/v1/registry/claim", { token: t.token, body: { handle, name: `Builder ${handle}` } })).status).toBe(201)
    return t
  }
  const cartridges = new Map<number, Buffer>()
  const cart = async (n: number) => {
    if (!cartridges.has(n)) cartridges.set(n, await mint(chip, n))
    return cartridges.get(n)!.toString("base64")
  }

  beforeAll(async () => {
    dir = tempDir()
    if (store === "postgres") db = await createDatabase()
    configFile = path.join(dir, "platform.yaml")
    fs.writeFileSync(configFile, yamlFor(store, db?.url ?? "postgres://unused"))
    platform = await startPlatform({ file: configFile })
    chip = `${platform.url("chip")}/api`
    base = chip
  }, 120_000)
  afterAll(async () => {
    await platform?.stop()
    await db?.drop()
  })

  it("mint → claim → publish → list → ETag/304 → cover/avatar → update → unpublish", async () => {
    const t = await mintToken("ada")
    const claim = await api("POST", "/v1/registry/claim", { token: t.token, body: { handle: "ada", name: "Ada L." } })
    expect(claim.status).toBe(201)
    expect(claim.body).toMatchObject({ handle: "ada", name: "Ada L." })

    const gz = await cart(1)
    const pub = await api("POST", "/v1/registry/b/ada/roms", { token: t.token, body: { slug: "snake", cartridge: gz } })
    expect(pub.status, pub.text).toBe(201)
    expect(pub.body).toMatchObject({ handle: "ada", slug: "snake", name: "game 1", cover: null, size: Buffer.from(gz, "base64").length })

    const list = await api("GET", "/v1/registry/roms")
    expect(list.status).toBe(200)
    expect(list.body.count).toBe(1)
    expect(list.body.roms.map((r: any) => `${r.handle}/${r.slug}`)).toEqual(["ada/snake"])
    const etag = list.headers.get("etag")!
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/)
    const again = await api("GET", "/v1/registry/roms", { headers: { "if-none-match": etag } })
    expect(again.status).toBe(304)
    expect(again.text).toBe("")

    const index = await api("GET", "/v1/registry")
    expect(index.body).toMatchObject({ count: 1, builders: [{ handle: "ada", name: "Ada L.", avatar: null, count: 1 }], limits: LIMITS })
    expect(index.body.latest.map((r: any) => r.slug)).toEqual(["snake"])
    expect((await api("GET", "/v1/registry", { headers: { "if-none-match": index.headers.get("etag")! } })).status).toBe(304)

    // Art: stored as chr (16 bytes per tile, row-major), served inline or as links.
    const avatar = await api("PUT", "/v1/registry/b/ada/avatar", { token: t.token, body: art(2, 1) })
    expect(avatar.status, avatar.text).toBe(200)
    // Tile 0 rows "0y0y0y0y", tile 1 rows "1y1y1y1y": bit planes 0 then 1, MSB leftmost.
    expect(avatar.body.chr).toBe("0055005500550055" + "0000555500005555" + "aaffaaffaaffaaff" + "0000555500005555")
    const cover = await api("PUT", "/v1/registry/b/ada/roms/snake/cover", { token: t.token, body: art(4, 3) })
    expect(cover.status, cover.text).toBe(200)
    expect(await api("GET", "/v1/registry/b/ada/avatar")).toMatchObject({ status: 200, body: { w: 2, h: 1, chr: avatar.body.chr } })
    const coverGet = await api("GET", "/v1/registry/b/ada/roms/snake/cover")
    expect(coverGet.body).toEqual({ w: 4, h: 3, chr: cover.body.chr })
    expect((await api("GET", "/v1/registry/b/ada/roms/snake/cover", { headers: { "if-none-match": coverGet.headers.get("etag")! } })).status).toBe(304)
    // The index changed (ETag moves), and the two art modes are different bodies.
    const inline = await api("GET", "/v1/registry?art=inline")
    const none = await api("GET", "/v1/registry?art=none")
    expect(inline.headers.get("etag")).not.toBe(index.headers.get("etag"))
    expect(inline.headers.get("etag")).not.toBe(none.headers.get("etag"))
    expect(inline.body.builders[0].avatar).toEqual({ w: 2, h: 1, chr: avatar.body.chr })
    expect(none.body.builders[0].avatar).toEqual({ w: 2, h: 1, url: "/api/v1/registry/b/ada/avatar" })
    expect(none.body.latest[0].cover).toEqual({ w: 4, h: 3, url: "/api/v1/registry/b/ada/roms/snake/cover" })
    expect(none.text).not.toContain(cover.body.chr)

    // Download: the published bytes, with an ETag.
    const dl = await fetch(`${base}/v1/registry/b/ada/roms/snake/cartridge`)
    expect(dl.headers.get("content-type")).toBe("application/gzip")
    expect(Buffer.from(await dl.arrayBuffer()).toString("base64")).toBe(gz)
    expect((await fetch(`${base}/v1/registry/b/ada/roms/snake/cartridge`, { headers: { "if-none-match": dl.headers.get("etag")! } })).status).toBe(304)

    // Update: a new cartridge under the slug; updated_at moves, published_at stays.
    const upd = await api("PUT", "/v1/registry/b/ada/roms/snake", { token: t.token, body: { cartridge: await cart(2) } })
    expect(upd.status, upd.text).toBe(200)
    expect(upd.body).toMatchObject({ slug: "snake", name: "game 2", published_at: pub.body.published_at })
    expect(upd.body.updated_at > pub.body.updated_at).toBe(true)
    const dl2 = Buffer.from(await (await fetch(`${base}/v1/registry/b/ada/roms/snake/cartridge`)).arrayBuffer())
    expect(dl2.toString("base64")).toBe(await cart(2))

    // Unpublish.
    expect((await api("DELETE", "/v1/registry/b/ada/roms/snake", { token: t.token })).status).toBe(204)
    expect((await api("GET", "/v1/registry/roms")).body).toMatchObject({ count: 0, roms: [] })
    expect((await api("GET", "/v1/registry")).body.builders[0].count).toBe(0)
    expect((await api("GET", "/v1/registry/b/ada/roms/snake/cartridge")).status).toBe(404)
    expect((await api("DELETE", "/v1/registry/b/ada/roms/snake", { token: t.token })).status).toBe(404)
  }, 60_000)

  it("a token claims once; handles are unique; writes need the owner's token", async () => {
    const t = await mintToken()
    expect((await api("PUT", "/v1/registry/b/bob/avatar", { token: t.token, body: art(1, 1) })).status).toBe(403) // not claimed yet
    expect((await api("POST", "/v1/registry/claim", { token: t.token, body: { handle: "bob", name: "Bob" } })).status).toBe(201)
    const second = await api("POST", "/v1/registry/claim", { token: t.token, body: { handle: "bob-2", name: "Bob" } })
    expect(second.status).toBe(409)
    expect(second.body.error).toMatch(/claims once/)
    const other = await mintToken()
    const taken = await api("POST", "/v1/registry/claim", { token: other.token, body: { handle: "bob", name: "Not Bob" } })
    expect(taken.status).toBe(409)
    expect(taken.body.error).toMatch(/taken/)
    // The refused token is still unclaimed: it can claim another handle.
    expect((await api("POST", "/v1/registry/claim", { token: other.token, body: { handle: "carol", name: "Carol" } })).status).toBe(201)
    const foreign = await api("PUT", "/v1/registry/b/bob/avatar", { token: other.token, body: art(1, 1) })
    expect(foreign.status).toBe(403)
    expect(foreign.body.error).toMatch(/belongs to builder "carol"/)
  }, 60_000)

  it("unknown, malformed, missing and revoked tokens get the same answer", async () => {
    const t = await claimed("dave")
    expect(await withRegistry(configFile, (r) => r.revokeToken(t.id))).toBe(true)
    const fake = `rgt_${t.id}_${"A".repeat(43)}` // a real id with a wrong secret
    const unknown = `rgt_0123456789abcdef_${"b".repeat(43)}`
    const answers = await Promise.all([t.token, fake, unknown, "garbage", undefined].map((token) =>
      api("PUT", "/v1/registry/b/dave/avatar", { ...(token !== undefined ? { token } : {}), body: art(1, 1) })))
    for (const a of answers) {
      expect(a.status).toBe(401)
      expect(a.text).toBe(answers[0]!.text)
      expect(a.headers.get("www-authenticate")).toBe(answers[0]!.headers.get("www-authenticate"))
    }
    const claim = await api("POST", "/v1/registry/claim", { token: t.token, body: { handle: "dave-2", name: "Dave" } })
    expect(claim.status).toBe(401)
    expect(claim.text).toBe(answers[0]!.text)
    const listed = await withRegistry(configFile, (r) => r.tokens())
    expect(listed.find((x) => x.id === t.id)).toMatchObject({ state: "revoked", handle: "dave" })
  }, 60_000)

  it("enforces every write limit with a 4xx naming it", async () => {
    const t = await claimed("erin")
    const write = (method: string, route: string, body: unknown) => api(method, `/v1/registry/b/erin${route}`, { token: t.token, body })
    // roms_per_builder (3)
    for (const n of [10, 11, 12]) expect((await write("POST", "/roms", { slug: `g${n}`, cartridge: await cart(n) })).status).toBe(201)
    const fourth = await write("POST", "/roms", { slug: "g13", cartridge: await cart(13) })
    expect(fourth.status).toBe(422)
    expect(fourth.body).toMatchObject({ limit: "roms_per_builder", max: 3 })
    expect((await write("POST", "/roms", { slug: "g10", cartridge: await cart(13) })).status).toBe(409) // slug taken
    // body_bytes
    const big = await write("PUT", "/avatar", { ...art(1, 1), pad: "x".repeat(LIMITS.body_bytes) })
    expect(big.status).toBe(413)
    expect(big.body).toMatchObject({ limit: "body_bytes", max: LIMITS.body_bytes })
    // cartridge_bytes
    const heavy = await write("PUT", "/roms/g10", { cartridge: Buffer.alloc(LIMITS.cartridge_bytes + 1, 7).toString("base64") })
    expect(heavy.status).toBe(413)
    expect(heavy.body.limit).toBe("cartridge_bytes")
    // cartridge_json_bytes: a small gzip inflating past the limit
    const bomb = await write("PUT", "/roms/g10", { cartridge: gzipSync(Buffer.alloc(LIMITS.cartridge_json_bytes * 4, 32)).toString("base64") })
    expect(bomb.status).toBe(413)
    expect(bomb.body.limit).toBe("cartridge_json_bytes")
    // avatar_tiles, cover_tiles
    const wide = await write("PUT", "/avatar", art(3, 1))
    expect(wide.status).toBe(422)
    expect(wide.body).toMatchObject({ limit: "avatar_tiles" })
    const tall = await write("PUT", "/roms/g10/cover", art(1, 4))
    expect(tall.status).toBe(422)
    expect(tall.body).toMatchObject({ limit: "cover_tiles" })
    // writes_per_minute (25 per token, this minute): the rest of the allowance, then 429.
    const limitsRoute = (await api("GET", "/v1/registry")).body.limits
    expect(limitsRoute).toEqual(LIMITS)
    const r = await mintToken()
    const statuses: Array<number> = []
    for (let i = 0; i < LIMITS.writes_per_minute + 1; i++) {
      statuses.push((await api("PUT", "/v1/registry/b/nobody/avatar", { token: r.token, body: art(1, 1) })).status)
    }
    expect(statuses.slice(0, LIMITS.writes_per_minute).every((s) => s === 403)).toBe(true)
    const limited = await api("PUT", "/v1/registry/b/nobody/avatar", { token: r.token, body: art(1, 1) })
    expect(limited.status).toBe(429)
    expect(limited.body).toMatchObject({ limit: "writes_per_minute", max: LIMITS.writes_per_minute })
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0)
  }, 120_000)

  it("bad input is a 4xx with a body, never a 500", async () => {
    const t = await claimed("fay")
    const cases: Array<[string, string, Parameters<typeof call>[3], number]> = [
      ["POST", "/v1/registry/claim", { token: (await mintToken()).token, body: { handle: "Bad_Handle!", name: "x" } }, 422],
      ["POST", "/v1/registry/claim", { token: (await mintToken()).token, body: { handle: "x", name: "too short handle" } }, 422],
      ["POST", "/v1/registry/claim", { token: (await mintToken()).token, body: { handle: "ok-name", name: "" } }, 422],
      ["POST", "/v1/registry/claim", { token: (await mintToken()).token, raw: "{not json" }, 400],
      ["PUT", "/v1/registry/b/fay/avatar", { token: t.token, body: { w: 2, h: 1, tiles: art(1, 1).tiles } }, 422], // 1 tile for 2x1
      ["PUT", "/v1/registry/b/fay/avatar", { token: t.token, body: { w: 0, h: 1, tiles: [] } }, 422],
      ["PUT", "/v1/registry/b/fay/avatar", { token: t.token, body: { w: 1, h: 1, tiles: [Array(8).fill("01234567")] } }, 422],
      ["PUT", "/v1/registry/b/fay/avatar", { token: t.token, body: { w: 1, h: 1, tiles: [Array(7).fill("01230123")] } }, 422],
      ["POST", "/v1/registry/b/fay/roms", { token: t.token, body: { slug: "x", cartridge: "not base64!!" } }, 422],
      ["POST", "/v1/registry/b/fay/roms", { token: t.token, body: { slug: "x", cartridge: Buffer.from("plain bytes").toString("base64") } }, 422],
      ["POST", "/v1/registry/b/fay/roms", { token: t.token, body: { slug: "x", cartridge: gzipSync('{"format":"other"}').toString("base64") } }, 422],
      ["POST", "/v1/registry/b/fay/roms", { token: t.token, body: { slug: "Bad Slug", cartridge: await cart(20) } }, 422],
      ["PUT", "/v1/registry/b/fay/roms/none", { token: t.token, body: { cartridge: await cart(20) } }, 404],
      ["PUT", "/v1/registry/b/fay/roms/none/cover", { token: t.token, body: art(1, 1) }, 404],
      ["GET", "/v1/registry?limit=0", {}, 422],
      ["GET", "/v1/registry?limit=201", {}, 422],
      ["GET", "/v1/registry?offset=-1", {}, 422],
      ["GET", "/v1/registry?art=png", {}, 422],
      ["GET", "/v1/registry/roms?since=yesterday", {}, 422],
      ["GET", "/v1/registry/roms?handle=NO", {}, 422],
      ["GET", "/v1/registry/b/Bad_Handle/avatar", {}, 422],
      ["GET", "/v1/registry/b/fay/avatar", {}, 404],
      ["GET", "/v1/registry/b/nobody-here/roms/x/cover", {}, 404]
    ]
    for (const [method, route, options, status] of cases) {
      const r = await api(method, route, options)
      expect([r.status, `${method} ${route}`]).toEqual([status, `${method} ${route}`])
      expect(typeof r.body?.error).toBe("string")
    }
    // A cartridge edited after minting (name changed, re-gzipped) is refused.
    const { gunzipSync } = await import("node:zlib")
    const doc = JSON.parse(gunzipSync(Buffer.from(await cart(21), "base64")).toString())
    doc.rom.bytes = doc.rom.bytes.replace(/^a9/, "a2")
    const edited = await api("POST", "/v1/registry/b/fay/roms", { token: t.token, body: { slug: "edited", cartridge: gzipSync(JSON.stringify(doc)).toString("base64") } })
    expect(edited.status).toBe(422)
    expect(edited.body.error).toMatch(/not a cartridge/)
    doc.rom.bytes = JSON.parse(gunzipSync(Buffer.from(await cart(21), "base64")).toString()).rom.bytes
    doc.meta.name = "renamed"
    expect((await api("POST", "/v1/registry/b/fay/roms", { token: t.token, body: { slug: "renamed", cartridge: gzipSync(JSON.stringify(doc)).toString("base64") } })).status).toBe(201) // name is not part of the digest
  }, 60_000)

  it("filters by handle and since; count is the number matching", async () => {
    const g = await claimed("gus")
    const h = await claimed("hal")
    for (const n of [30, 31]) expect((await api("POST", "/v1/registry/b/gus/roms", { token: g.token, body: { slug: `s${n}`, cartridge: await cart(n) } })).status).toBe(201)
    expect((await api("POST", "/v1/registry/b/hal/roms", { token: h.token, body: { slug: "s32", cartridge: await cart(32) } })).status).toBe(201)
    const gus = await api("GET", "/v1/registry/roms?handle=gus&limit=1")
    expect(gus.body.count).toBe(2)
    expect(gus.body.roms).toHaveLength(1)
    expect(gus.body.roms[0].slug).toBe("s31") // newest first
    expect((await api("GET", "/v1/registry/roms?handle=gus&limit=1&offset=1")).body.roms[0].slug).toBe("s30")
    await new Promise((r) => setTimeout(r, 5))
    const mark = new Date().toISOString()
    await new Promise((r) => setTimeout(r, 5))
    expect((await api("PUT", "/v1/registry/b/gus/roms/s30", { token: g.token, body: { cartridge: await cart(33) } })).status).toBe(200)
    const since = await api("GET", `/v1/registry/roms?since=${encodeURIComponent(mark)}`)
    expect(since.body.count).toBe(1)
    expect(since.body.roms.map((r: any) => r.slug)).toEqual(["s30"])
    // An offset form of the same instant is the same filter.
    const offsetForm = mark.replace("Z", "+00:00")
    expect((await api("GET", `/v1/registry/roms?since=${encodeURIComponent(offsetForm)}`)).body.count).toBe(1)
    expect((await api("GET", `/v1/registry/roms?since=${encodeURIComponent(mark)}&handle=hal`)).body.count).toBe(0)
  }, 60_000)

  it("keeps no token in clear: not in the database, not in any response", async () => {
    expect(tokens.length).toBeGreaterThan(5)
    let stored: string
    if (store === "embedded") {
      const files = fs.readdirSync(path.join(dir, "data/registry")).map((f) => path.join(dir, "data/registry", f))
      stored = files.map((f) => fs.readFileSync(f).toString("latin1")).join("\n")
      expect(stored).toContain("registry_tokens")
    } else {
      const c = new pg.Client({ connectionString: db!.url })
      await c.connect()
      const tables = (await c.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")).rows.map((r) => r.tablename as string)
      const dumps: Array<string> = []
      for (const t of tables) dumps.push(JSON.stringify((await c.query(`SELECT * FROM ${t}`)).rows))
      await c.end()
      stored = dumps.join("\n")
      expect(tables).toContain("registry_tokens")
    }
    const responses = seen.join("\n")
    for (const token of tokens) {
      const secret = token.split("_").slice(2).join("_")
      expect(stored.includes(secret)).toBe(false)
      expect(responses.includes(secret)).toBe(false)
    }
    // The hashes are there, so the grep looked at the right place.
    expect(stored).toMatch(/[0-9a-f]{64}/)
  })
})
