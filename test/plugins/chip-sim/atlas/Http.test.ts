import * as http from "node:http"
import * as path from "node:path"
import { gunzipSync } from "node:zlib"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform, type RunningPlatform } from "../../../../core/Kernel.ts"

process.env.PLATFORM_LOG_LEVEL ??= "error"

const NETLIST = path.resolve(ROOT, "../shared/chip-sim/netlist")

// One kernel for the file; `workers: 0` because the atlas never touches the simulator threads.
let platform: RunningPlatform
let base: string
beforeAll(async () => {
  platform = await startPlatform({ cwd: ROOT, yaml: `listeners:\n  - { name: chip, port: 0 }\nplugins:\n  chip-sim:\n    netlist_dir: ${NETLIST}\n    workers: 0\n` })
  base = `${platform.url("chip")}/api`
})
afterAll(() => platform?.stop())

const get = async (route: string, headers: Record<string, string> = {}) => {
  const res = await fetch(`${base}${route}`, { headers })
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: text === "" ? undefined : (JSON.parse(text) as any) }
}
/** Asserts a refusal: the status, a JSON body with a non-empty `error` matching `why`. */
const refused = async (route: string, status: number, why?: RegExp) => {
  const r = await get(route)
  expect(r.status, route).toBe(status)
  expect(typeof r.body.error, route).toBe("string")
  if (why) expect(JSON.stringify(r.body), route).toMatch(why)
}

describe("atlas routes", () => {
  it("GET /v1/atlas: kinds with sizes, blocks, roles, walk bounds and counts; cacheable with an ETag", async () => {
    const r = await get("/v1/atlas")
    expect(r.status).toBe(200)
    expect(r.headers.get("cache-control")).toBe("public, max-age=86400")
    expect(r.body.layers).toEqual({ partition: 132, containers: 138, absorbed: 6 })
    expect(r.body.kinds).toHaveLength(23)
    expect(r.body.kinds.reduce((s: number, k: any) => s + k.containers, 0)).toBe(138)
    expect(r.body.blocks).toHaveLength(14)
    expect(Object.fromEntries(r.body.roles.map((x: any) => [x.role, x.nodes]))).toEqual({ signal: 1546 - 122 - 46, decode: 122, control: 46 })
    expect(r.body.walk).toMatchObject({ depth: { min: 1, max: 4 }, limit: { max: 2000 } })
    expect(r.body.counts).toMatchObject({ resolvable_names: 832, multi_name_nodes: 125, slash_name_nodes: 47, named: 705 })
    const again = await get("/v1/atlas", { "if-none-match": r.headers.get("etag")! })
    expect(again.status).toBe(304)
  })

  it("GET /v1/atlas/full: one document, gzip-served to a client accepting gzip, plain JSON otherwise, same content", async () => {
    const raw = (encoding?: string) =>
      new Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
        http.get(`${base}/v1/atlas/full`, { headers: encoding ? { "accept-encoding": encoding } : {} }, (res) => {
          const chunks: Array<Buffer> = []
          res.on("data", (c) => chunks.push(c))
          res.on("end", () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }))
        }).on("error", reject)
      })
    const gz = await raw("gzip, deflate")
    expect(gz.headers["content-encoding"]).toBe("gzip")
    expect(gz.headers["cache-control"]).toBe("public, max-age=86400")
    const plain = await raw()
    expect(plain.headers["content-encoding"]).toBeUndefined()
    expect(gunzipSync(gz.body).equals(plain.body)).toBe(true)
    expect(gz.body.length).toBeLessThan(plain.body.length / 4)
    const doc = JSON.parse(plain.body.toString("utf8"))
    expect(doc).toMatchObject({ format: "chip-sim-atlas", version: 1 })
    expect(doc.nodes).toHaveLength(1704)
    // No alias table (spec): one display name per node, the count of the others.
    expect(doc.nodes.find((n: any) => n.name === "p4")).toMatchObject({ aliases: 1 })
    expect(doc.nodes.some((n: any) => "names" in n)).toBe(false)
    expect(doc.containers).toHaveLength(138)
    expect(doc.bundles).toHaveLength(doc.counts.bundles)
    expect((await get("/v1/atlas/full", { "if-none-match": gz.headers.etag as string, "accept-encoding": "gzip" })).status).toBe(304)
  })

  it("GET /v1/groups: layer, kind, parent, block (id or name), q, min_nodes, members", async () => {
    expect((await get("/v1/groups")).body).toMatchObject({ layer: "partition", total: 132 })
    expect((await get("/v1/groups?layer=containers")).body.total).toBe(138)
    const absorbed = (await get("/v1/groups?layer=absorbed")).body
    expect(absorbed.groups.map((g: any) => g.key).sort()).toEqual(["clock:delay", "clock:phi1", "clock:phi2", "sbus:link", "sdp:sd1", "sdp:sd2"])
    expect(absorbed.groups.every((g: any) => typeof g.absorbed_by === "string")).toBe(true)
    const regs = (await get("/v1/groups?kind=regs")).body
    expect(regs.groups.every((g: any) => g.kind === "regs")).toBe(true)
    expect(regs.groups.map((g: any) => g.key)).toEqual(expect.arrayContaining(["regs:A", "regs:X", "regs:Y", "regs:S"]))
    const children = (await get("/v1/groups?parent=regs:A")).body
    // The accumulator's load and read lines.
    expect(children.groups.map((g: any) => g.key).sort()).toEqual(["dbus:ACDB", "regs:SBAC", "sbus:ACSB"])
    expect(children.groups.every((g: any) => g.parent === "regs:A")).toBe(true)
    const byId = (await get("/v1/groups?block=3")).body
    const byName = (await get("/v1/groups?block=registers")).body
    expect(byId).toEqual(byName)
    expect(byId.groups.every((g: any) => g.block === "registers")).toBe(true)
    const q = (await get("/v1/groups?q=adl/")).body
    expect(q.groups.map((g: any) => g.key)).toEqual(expect.arrayContaining(["alat:ADL/ABL"]))
    const big = (await get("/v1/groups?min_nodes=40")).body
    expect(big.total).toBeGreaterThan(0)
    expect(big.groups.every((g: any) => g.nodes >= 40)).toBe(true)
    const withMembers = (await get("/v1/groups?kind=regs&q=regs:A&members=true")).body
    const a = withMembers.groups.find((g: any) => g.key === "regs:A")
    expect(a.members.map((m: any) => m.name)).toEqual(expect.arrayContaining(["a0", "a7"]))
    expect((await get("/v1/groups?members=false")).body.groups[0].members).toBeUndefined()
    await refused("/v1/groups?layer=bogus", 422, /layer/)
    await refused("/v1/groups?kind=cpu", 422, /kind/)
    await refused("/v1/groups?block=99", 422, /unknown block/)
    await refused("/v1/groups?parent=regs:Q", 422, /unknown group key/)
    await refused("/v1/groups?min_nodes=-1", 422, /min_nodes/)
    await refused("/v1/groups?members=yes", 422, /members/)
  })

  it("GET /v1/groups/{key}: parent, children, blocks, sharing containers, bundles and members; slash keys; layer=containers", async () => {
    const latch = await get("/v1/groups/alat:ADL/ABL")
    expect(latch.status).toBe(200)
    expect(latch.body).toMatchObject({ key: "alat:ADL/ABL", kind: "alat", layer: "partition", block: "address-latch" })
    expect(latch.body.members.map((m: any) => m.name)).toEqual(expect.arrayContaining(["abl0", "ADL/ABL"]))
    expect(latch.body.bundles.length).toBeGreaterThan(0)
    for (const b of latch.body.bundles) expect(b.gate_legs_out + b.gate_legs_in + b.switches).toBeGreaterThan(0)
    expect(latch.body.shares.length).toBeGreaterThan(0)
    expect((await get("/v1/groups/alat%3AADL%2FABL")).body.key).toBe("alat:ADL/ABL")
    const regs = (await get("/v1/groups/regs:A")).body
    expect(regs.children).toEqual(expect.arrayContaining([expect.stringMatching(/:/)]))
    // A bundle's gate direction is reported from the asking group's side.
    const other = regs.bundles[0]
    const back = (await get(`/v1/groups/${other.group}`)).body.bundles.find((b: any) => b.group === "regs:A")
    expect([back.gate_legs_out, back.gate_legs_in, back.switches]).toEqual([other.gate_legs_in, other.gate_legs_out, other.switches])
    const link = await get("/v1/groups/sbus:link?layer=containers")
    expect(link.status).toBe(200)
    expect(link.body).toMatchObject({ layer: "absorbed", owned: [] })
    expect(link.body.claimed_elsewhere.length).toBe(link.body.nodes.length)
    expect(link.body.nodes.map((n: any) => n.name)).toEqual(expect.arrayContaining(["dpc25_SBDB", "dpc27_SBADH"]))
    await refused("/v1/groups/sbus:link", 404, /absorbed whole by/)
    await refused("/v1/groups/regs:Q", 404, /unknown group key/)
    await refused("/v1/groups/regs:A?layer=all", 422)
  })

  it("GET /v1/tags: group, kind, block, role, q, named, multi, limit/offset paging with total", async () => {
    const all = (await get("/v1/tags")).body
    expect(all).toMatchObject({ total: 1546, limit: 100, offset: 0 })
    expect(all.nodes[0]).toEqual(expect.objectContaining({ id: expect.any(Number), group: expect.any(String), containers: expect.any(Array), block: expect.any(String), role: expect.any(String), pullup: expect.any(Boolean), degree: expect.any(Number) }))
    expect(all.nodes[0].centroid).toHaveLength(2)
    expect((await get("/v1/tags?named=true")).body.total).toBe(705)
    expect((await get("/v1/tags?named=false")).body.total).toBe(841)
    expect((await get("/v1/tags?role=decode")).body.total).toBe(122)
    expect((await get("/v1/tags?role=control")).body.total).toBe(46)
    expect((await get("/v1/tags?multi=true&limit=1")).body.total).toBe(404)
    const group = (await get("/v1/tags?group=regs:A&limit=2000")).body
    expect(group.nodes.every((n: any) => n.group === "regs:A")).toBe(true)
    expect(group.total).toBe(group.nodes.length)
    const kind = (await get("/v1/tags?kind=pcr&limit=2000")).body
    expect(kind.nodes.every((n: any) => n.containers.some((k: string) => k.startsWith("pcr:")))).toBe(true)
    expect((await get("/v1/tags?block=2")).body).toEqual((await get("/v1/tags?block=status")).body)
    const q = (await get("/v1/tags?q=pclp")).body
    expect(q.total).toBe(17) // pclp0-7, #pclp0-7 (= ~pclp0-7) and dpc39_PCLPCL: q ignores case
    expect(q.nodes.every((n: any) => n.names.some((name: string) => name.toLowerCase().includes("pclp")))).toBe(true)
    // Pages: offset/limit slice the same ordering; total is what matched.
    const p1 = (await get("/v1/tags?named=true&limit=5&offset=0")).body
    const p2 = (await get("/v1/tags?named=true&limit=5&offset=5")).body
    const both = (await get("/v1/tags?named=true&limit=10")).body
    expect([...p1.nodes, ...p2.nodes]).toEqual(both.nodes)
    expect(p2).toMatchObject({ total: 705, limit: 5, offset: 5 })
    expect((await get("/v1/tags?offset=1546")).body.nodes).toEqual([])
    await refused("/v1/tags?limit=0", 422, /limit/)
    await refused("/v1/tags?limit=2001", 422, /limit/)
    await refused("/v1/tags?offset=x", 422, /offset/)
    await refused("/v1/tags?role=wire", 422, /role/)
    await refused("/v1/tags?named=maybe", 422, /named/)
    await refused("/v1/tags?group=nope:x", 422, /unknown group key/)
    await refused("/v1/tags?block=cpu", 422, /unknown block/)
  })

  it("GET /v1/node/{ref}: by name, number, #n (%23n), slash names, rails, folded nodes; unknown and sentinel names 404", async () => {
    const a0 = (await get("/v1/node/a0")).body
    expect(a0).toMatchObject({ name: "a0", group: "regs:A", role: "signal", in_partition: true, walk: "walked" })
    const byNumber = (await get(`/v1/node/${a0.id}`)).body
    const byHash = (await get(`/v1/node/%23${a0.id}`)).body
    expect({ ...byNumber, ref: "" }).toEqual({ ...a0, ref: "" })
    expect({ ...byHash, ref: "" }).toEqual({ ...a0, ref: "" })
    const unnamed = (await get("/v1/tags?named=false&limit=1")).body.nodes[0]
    const u = (await get(`/v1/node/%23${unnamed.id}`)).body
    expect(u).toMatchObject({ id: unnamed.id, name: null, names: [], group: unnamed.group })
    const slash = (await get("/v1/node/op-T0-ldx/tax/tsx")).body
    expect(slash).toMatchObject({ name: "op-T0-ldx/tax/tsx", role: "decode", group: "logic:decode" })
    const alias = (await get("/v1/node/dpc-1_ADL/ABL")).body
    expect(alias).toMatchObject({ name: "ADL/ABL", role: "control", names: ["ADL/ABL", "dpc-1_ADL/ABL"] })
    expect((await get("/v1/node/p4")).body.names).toEqual(["p4", "Pout4"])
    const vss = (await get("/v1/node/vss")).body
    expect(vss).toMatchObject({ rail: true, in_partition: false, group: null })
    expect(vss.walk).toMatch(/never walked/)
    const folded = (await get("/v1/node/12")).body
    expect(folded.in_partition).toBe(false)
    expect(folded.folded_into.id).toEqual(expect.any(Number))
    await refused("/v1/node/p5", 404, /sentinel/)
    await refused("/v1/node/nosuchnode", 404, /unknown node/)
    await refused("/v1/node/%239999", 404, /no node numbered 9999/)
    // A path that is not valid percent-encoding is refused by the kernel's router before the route (4xx, never 500).
    const bad = await get("/v1/node/%E0%A4%A")
    expect(bad.status).toBeGreaterThanOrEqual(400)
    expect(bad.status).toBeLessThan(500)
  })

  it("GET /v1/neighbors: via, direction, depth 1-4, limit with truncated; rails reported never walked; control lines never followed", async () => {
    const one = (await get("/v1/neighbors?node=a0")).body
    expect(one).toMatchObject({ node: { name: "a0" }, via: "all", direction: "both", depth: 1, truncated: false })
    expect(one.relations.every((r: any) => r.depth === 1 && r.from_name === "a0")).toBe(true)
    // a0 is a storage node: written through pass transistors, read by what it drives.
    expect(new Set(one.relations.map((r: any) => r.relation))).toEqual(new Set(["drives", "channel"]))
    const channel = one.relations.find((r: any) => r.relation === "channel")
    expect(channel.control).toEqual({ id: expect.any(Number), name: expect.any(String) })
    const out = (await get("/v1/neighbors?node=a0&via=gate&direction=out")).body
    expect(out.relations.every((r: any) => r.relation === "drives")).toBe(true)
    const inn = (await get("/v1/neighbors?node=a0&via=gate&direction=in")).body
    expect(inn.relations.every((r: any) => r.relation === "driven_by")).toBe(true)
    const sw = (await get("/v1/neighbors?node=a0&via=switch")).body
    expect(sw.relations.every((r: any) => r.relation === "channel")).toBe(true)
    const opens = (await get("/v1/neighbors?node=dpc23_SBAC&via=control")).body
    expect(opens.relations.length).toBeGreaterThan(0)
    expect(opens.relations.every((r: any) => r.relation === "opens" && typeof r.transistor === "string")).toBe(true)
    // Deeper walks grow, and nothing is followed out of a rail, control or clock line.
    const deep = (await get("/v1/neighbors?node=a0&depth=4&limit=2000")).body
    expect(deep.count).toBeGreaterThan(one.count)
    expect(Math.max(...deep.relations.map((r: any) => r.depth))).toBe(4)
    const stopped = new Set(deep.relations.filter((r: any) => r.stop).map((r: any) => r.node))
    expect([...stopped].length).toBeGreaterThan(0)
    expect(deep.relations.some((r: any) => r.name === "cclk" && r.stop === "clock")).toBe(true)
    expect(deep.relations.filter((r: any) => stopped.has(r.from))).toEqual([])
    const viaControl = (await get("/v1/neighbors?node=a0&depth=4&limit=2000&via=gate")).body
    expect(viaControl.relations.filter((r: any) => r.stop === "control" && r.depth < 4).every((r: any) => !viaControl.relations.some((s: any) => s.from === r.node))).toBe(true)
    // Rails: a node driven through a vss-gated leg reports the rail, and the rail is never walked.
    const vss = (await get("/v1/neighbors?node=vss&depth=3")).body
    expect(vss.rail).toBe(true)
    expect(vss.relations.length).toBeGreaterThan(0)
    expect(vss.relations.every((r: any) => r.from_name === "vss" && r.depth === 1 && r.relation === "drives")).toBe(true)
    const gated = vss.relations.find((r: any) => !r.stop)
    const back = (await get(`/v1/neighbors?node=${gated.node}&via=gate&direction=in`)).body
    expect(back.relations.find((r: any) => r.name === "vss")).toMatchObject({ rail: true, stop: "rail", relation: "driven_by" })
    // Unnamed, slash-named and folded starts.
    const unnamed = (await get("/v1/tags?named=false&limit=1")).body.nodes[0]
    const u = (await get(`/v1/neighbors?node=%23${unnamed.id}`)).body
    expect(u.node).toEqual({ id: unnamed.id, name: null })
    expect(u.count).toBe(unnamed.degree > 0 ? u.relations.length : 0)
    const slash = (await get(`/v1/neighbors?node=${encodeURIComponent("op-T0-ldx/tax/tsx")}&direction=in&via=gate`)).body
    expect(slash.node.name).toBe("op-T0-ldx/tax/tsx")
    expect(slash.relations.length).toBeGreaterThan(0)
    const folded = (await get("/v1/neighbors?node=12")).body
    expect(folded.asked.id).toBe(12)
    expect(folded.node.id).not.toBe(12)
    // The cap: cclk as a start is walked; it opens hundreds of switch ends.
    const capped = (await get("/v1/neighbors?node=cclk&via=control&limit=10")).body
    expect(capped).toMatchObject({ count: 10, limit: 10, truncated: true })
    expect((await get("/v1/neighbors?node=cclk&via=control&limit=2000")).body.truncated).toBe(false)
    await refused("/v1/neighbors", 422, /node/)
    await refused("/v1/neighbors?node=a0&depth=0", 422, /depth/)
    await refused("/v1/neighbors?node=a0&depth=5", 422, /depth/)
    await refused("/v1/neighbors?node=a0&limit=2001", 422, /limit/)
    await refused("/v1/neighbors?node=a0&via=wire", 422, /via/)
    await refused("/v1/neighbors?node=a0&direction=up", 422, /direction/)
    await refused("/v1/neighbors?node=nosuch", 400, /unknown node/)
    await refused("/v1/neighbors?node=Pout5", 400, /sentinel/)
  })

  it("serves chip_atlas beside the other tools to the official SDK client; refusals as isError", async () => {
    const client = new Client({ name: "chip-atlas-test", version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)))
    try {
      const tools = (await client.listTools()).tools
      expect(tools.map((t) => t.name).sort()).toEqual(["assemble", "chip_atlas", "console_spec", "mint_cartridge", "run"])
      const textOf = (r: any) => JSON.parse(r.content[0].text)
      const summary = textOf(await client.callTool({ name: "chip_atlas", arguments: {} }))
      expect(summary.layers).toEqual({ partition: 132, containers: 138, absorbed: 6 })
      const wire = await client.callTool({ name: "chip_atlas", arguments: { node: "a0", depth: 2 } })
      expect(wire.isError).toBeFalsy()
      const w = textOf(wire)
      expect(w.node).toMatchObject({ name: "a0", group: "regs:A" })
      expect(w.group).toMatchObject({ key: "regs:A" })
      expect(w.group.names).toContain("a0")
      expect(w.neighbors.depth).toBe(2)
      const numbered = textOf(await client.callTool({ name: "chip_atlas", arguments: { node: `#${w.node.id}` } }))
      expect(numbered.node.name).toBe("a0")
      const group = textOf(await client.callTool({ name: "chip_atlas", arguments: { group: "alat:ADL/ABL" } }))
      expect(group.group_detail.members).toContain("ADL/ABL")
      const absorbed = textOf(await client.callTool({ name: "chip_atlas", arguments: { group: "clock:phi1" } }))
      expect(absorbed.group_detail.owned).toEqual([])
      const unknown = await client.callTool({ name: "chip_atlas", arguments: { node: "nosuch" } })
      expect(unknown.isError).toBe(true)
      expect((unknown.content as any)[0].text).toMatch(/unknown node/)
      const sentinel = await client.callTool({ name: "chip_atlas", arguments: { node: "p5" } })
      expect(sentinel.isError).toBe(true)
      const badDepth = await client.callTool({ name: "chip_atlas", arguments: { node: "a0", depth: 9 } })
      expect(badDepth.isError).toBe(true)
    } finally {
      await client.close()
    }
  })
})
