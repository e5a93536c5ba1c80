import * as fs from "node:fs"
import * as path from "node:path"
import { gunzipSync } from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform, type RunningPlatform } from "../../../core/Kernel.ts"
import { EXAMPLES } from "../../../plugins/chip-sim/console/Examples.ts"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"

process.env.PLATFORM_LOG_LEVEL ??= "error"

const GOLDEN = path.resolve(ROOT, "../shared/chip-sim/golden")
const NETLIST = path.resolve(ROOT, "../shared/chip-sim/netlist")
const yaml = (netlist: string) => `listeners:\n  - { name: chip, port: 0 }\nplugins:\n  chip-sim:\n    netlist_dir: ${netlist}\n`

let platform: RunningPlatform
let base: string
beforeAll(async () => {
  platform = await startPlatform({ cwd: ROOT, yaml: yaml(NETLIST) })
  base = `${platform.url("chip")}/api`
})
afterAll(() => platform?.stop())

const post = async (route: string, body: unknown) => {
  const res = await fetch(`${base}${route}`, { method: "POST", headers: { "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) })
  return { status: res.status, body: await res.json() as any }
}

const source = (name: string) => fs.readFileSync(path.join(GOLDEN, `${name}.s`), "utf8")

describe("chip-sim in the kernel", () => {
  it("serves healthz, meta and the cacheable node catalogue", async () => {
    expect(await (await fetch(`${base}/healthz`)).json()).toMatchObject({ ok: true })
    const meta: any = await (await fetch(`${base}/v1/meta`)).json()
    expect(meta).toMatchObject({ nodes: 1725, transistors: 3510, max_step: 200000, max_traced: 10000 })
    expect(String(meta.encoding)).toMatch(/least significant bit first/)
    const nodes = await fetch(`${base}/v1/nodes`)
    expect(nodes.headers.get("cache-control")).toMatch(/max-age=86400/)
    const catalogue: any = await nodes.json()
    expect(Object.keys(catalogue)).toEqual(["rails", "pins", "registers", "buses", "datapath", "decode", "timing", "other"])
    expect(catalogue.datapath).toHaveLength(49)
    const again = await fetch(`${base}/v1/nodes`, { headers: { "if-none-match": nodes.headers.get("etag")! } })
    expect(again.status).toBe(304)
  })

  it("assembles the golden programs byte for byte; errors are 422 {error, line}", async () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(GOLDEN, "manifest.json"), "utf8"))
    for (const p of manifest.programs) {
      const r = await post("/v1/assemble", { source: source(p.name), org: p.org })
      expect(r.status).toBe(200)
      expect(r.body.bytes).toBe(fs.readFileSync(path.join(GOLDEN, p.image)).toString("hex"))
    }
    const bad = await post("/v1/assemble", { source: "  lda #1\n  ldq #2\n" })
    expect(bad.status).toBe(422)
    expect(bad.body).toMatchObject({ line: 2 })
    expect(bad.body.error).toMatch(/ldq/i)
  })

  it("boots a program to its first opcode fetch and steps it instruction by instruction", async () => {
    const boot = await post("/v1/boot", { rom: { source: "  lda #$42\n  ldx #$07\n  tax\nloop: jmp loop\n" }, watch: ["cclk"] })
    expect(boot.status).toBe(200)
    expect(boot.body).toMatchObject({ stepped: 0, completed: true })
    expect(boot.body.observe).toMatchObject({ half_cycle: 0, sync: 1, clk0: 0, pc: "0200", addr: "0200" })
    expect(boot.body.listing[0]).toMatchObject({ n: 1, addr: 512, bytes: "a942" })
    expect(boot.body.observe).toHaveProperty("cclk")
    let machine = boot.body.machine
    const pcs: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const r = await post("/v1/step", { machine, until: "instruction" })
      expect(r.status).toBe(200)
      expect(r.body.completed).toBe(true)
      machine = r.body.machine
      pcs.push(r.body.observe.pc)
    }
    expect(pcs).toEqual(["0202", "0204", "0205"])
    const last = await post("/v1/step", { machine, until: "instruction" })
    expect(last.body.observe).toMatchObject({ a: "42", x: "42" })
  })

  it("resumes bit-exactly: 20 then 21 half-cycles equals 41", async () => {
    const boot = await post("/v1/boot", { rom: { source: source("arith") } })
    const one = await post("/v1/step", { machine: boot.body.machine, half_cycles: 41 })
    const a = await post("/v1/step", { machine: boot.body.machine, half_cycles: 20 })
    const b = await post("/v1/step", { machine: a.body.machine, half_cycles: 21 })
    expect(b.body.machine).toEqual(one.body.machine)
    expect(b.body.observe).toEqual(one.body.observe)
    expect(one.body.stepped).toBe(41)
  })

  it("stops at until_pc, and reports completed false at the bound", async () => {
    const boot = await post("/v1/boot", { rom: { source: "  nop\n  nop\ntarget: nop\nloop: jmp loop\n" } })
    const hit = await post("/v1/step", { machine: boot.body.machine, until_pc: 0x0202 })
    expect(hit.body).toMatchObject({ completed: true, observe: { pc: "0202", sync: 1 } })
    const miss = await post("/v1/step", { machine: boot.body.machine, until_pc: 0x4000, max_half_cycles: 50 })
    expect(miss.body).toMatchObject({ completed: false, stepped: 50 })
  })

  it("traces as objects or rows", async () => {
    const boot = await post("/v1/boot", { rom: { source: source("stack") } })
    const objects = await post("/v1/step", { machine: boot.body.machine, half_cycles: 6, trace: true, watch: ["cp1"] })
    expect(objects.body.trace).toHaveLength(6)
    expect(objects.body.trace[5]).toEqual(objects.body.observe)
    const rows = await post("/v1/step", { machine: boot.body.machine, half_cycles: 6, trace: true, format: "rows", watch: ["cp1"] })
    expect(rows.body.trace_rows.columns).toEqual(["hc", "clk0", "addr", "data", "rw", "sync", "pc", "a", "x", "y", "s", "p", "ir", "cp1"])
    expect(rows.body.trace_rows.rows).toHaveLength(6)
    expect(rows.body.trace_rows.rows[5][0]).toBe(6)
  })

  it("refuses bad requests with the specified statuses", async () => {
    const boot = await post("/v1/boot", {})
    const machine = boot.body.machine
    expect((await post("/v1/step", { machine, half_cycles: 2, until: "cycle" })).status).toBe(422)
    expect((await post("/v1/step", { machine })).status).toBe(422)
    expect((await post("/v1/step", { machine, half_cycles: 200001 })).status).toBe(422)
    expect((await post("/v1/step", { machine, half_cycles: 10001, trace: true })).status).toBe(422)
    const short = { ...machine, state: { ...machine.state, value: machine.state.value.slice(2) } }
    expect((await post("/v1/step", { machine: short, half_cycles: 1 })).status).toBe(422)
    const nonHex = { ...machine, state: { ...machine.state, pullup: "z" + machine.state.pullup.slice(1) } }
    expect((await post("/v1/step", { machine: nonHex, half_cycles: 1 })).status).toBe(422)
    const v = machine.state.trans_on as string
    const padded = { ...machine, state: { ...machine.state, trans_on: v.slice(0, -2) + (parseInt(v.slice(-2), 16) | 0x80).toString(16).padStart(2, "0") } }
    const pad = await post("/v1/step", { machine: padded, half_cycles: 1 })
    expect(pad.status).toBe(422)
    expect(JSON.stringify(pad.body)).toMatch(/padding/)
    const unknown = await post("/v1/step", { machine, half_cycles: 1, watch: ["no_such_node"] })
    expect(unknown.status).toBe(400)
    expect(unknown.body.error).toMatch(/no_such_node/)
    expect((await post("/v1/step", "{not json")).status).toBe(400)
  })

  it("refuses unknown pins and pages past $FF with 422, a wrong method with 405 and Allow, all as {error, ...}", async () => {
    const boot = await post("/v1/boot", {})
    const machine = boot.body.machine
    const pin = await post("/v1/step", { machine, half_cycles: 2, pins: { foo: 1 } })
    expect(pin.status).toBe(422)
    expect(JSON.stringify(pin.body.detail)).toMatch(/foo/)
    const page = await post("/v1/boot", { memory: { pages: { "100": "00".repeat(256) } } })
    expect(page.status).toBe(422)
    expect(JSON.stringify(page.body.detail)).toMatch(/100/)
    const wrong = await fetch(`${base}/v1/boot`)
    expect(wrong.status).toBe(405)
    expect(wrong.headers.get("allow")).toBe("POST")
    const meta = await fetch(`${base}/v1/meta`, { method: "DELETE" })
    expect(meta.status).toBe(405)
    expect(meta.headers.get("allow")).toBe("GET")
    const missing = await fetch(`${base}/v1/no-such-route`)
    expect(missing.status).toBe(404)
    // one shape for every error body on the listener: an `error` string, extras beside it
    for (const body of [pin.body, page.body, await wrong.json(), await meta.json(), await missing.json()]) {
      expect(typeof body.error).toBe("string")
    }
  })

  it("serves the console contract (cacheable) and mints cartridges on the workers: gzip, ?format=json, 422 with reason and fix", async () => {
    const consoleRes = await fetch(`${base}/v1/console`)
    expect(consoleRes.status).toBe(200)
    expect(consoleRes.headers.get("cache-control")).toBe("public, max-age=86400")
    const doc: any = await consoleRes.json()
    expect(doc.contract.tick.address).toBe("$000D")
    expect(doc.palette.map((p: any) => p.hex)).toEqual(["#0B1120", "#3E93A6", "#E0A24B", "#4FBFD4"])
    expect((await fetch(`${base}/v1/console`, { headers: { "if-none-match": consoleRes.headers.get("etag")! } })).status).toBe(304)
    const request = { ...EXAMPLES[1]!.request }
    const gz = await fetch(`${base}/v1/cartridge`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(request) })
    expect(gz.status).toBe(200)
    expect(gz.headers.get("content-type")).toMatch(/application\/gzip/)
    const bytes = Buffer.from(await gz.arrayBuffer())
    const cart = JSON.parse(gunzipSync(bytes).toString("utf8"))
    expect(cart.verify.frames_completed).toBe(request.frames)
    expect(cart.verify.screen_changed).toBe(true)
    const again = Buffer.from(await (await fetch(`${base}/v1/cartridge`, { method: "POST", body: JSON.stringify(request) })).arrayBuffer())
    expect(again.equals(bytes)).toBe(true)
    const json = await post("/v1/cartridge?format=json", request)
    expect(json.status).toBe(200)
    expect(json.body).toEqual(cart)
    const layout = await post("/v1/cartridge", { ...request, console: { ...request.console, screen: 0x0200 } })
    expect(layout.status).toBe(422)
    expect(layout.body.reason).toMatch(/overlaps its own screen/)
    expect(layout.body.fix).toMatch(/console.screen/)
    expect((await post("/v1/cartridge", { ...request, tiles: {} })).status).toBe(422)
    expect((await post("/v1/cartridge", { ...request, tiles: { pixels: [["0"]] } })).status).toBe(422)
    expect((await post("/v1/cartridge", { ...request, rom: { source: "  bogus\n" } })).body.line).toBe(1)
  })

  it("serves its MCP tools to the official SDK client: console_spec, assemble, run (steps, until_pc, frames), mint_cartridge; refusals as isError", async () => {
    const client = new Client({ name: "chip-sim-test", version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)))
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name).sort()
      expect(tools).toEqual(["assemble", "chip_atlas", "console_spec", "mint_cartridge", "run"])
      const textOf = (r: any) => r.content[0].text as string
      const spec = await client.callTool({ name: "console_spec", arguments: {} })
      expect(JSON.parse(textOf(spec)).contract.tick.address).toBe("$000D")
      const asm = await client.callTool({ name: "assemble", arguments: { source: "  lda #$42\n  tax\n", org: "$0300" } })
      expect(JSON.parse(textOf(asm))).toMatchObject({ org: 0x300, bytes: "a942aa" })
      const bad = await client.callTool({ name: "assemble", arguments: { source: "  lda #$42\n  bogus\n" } })
      expect(bad.isError).toBe(true)
      expect(textOf(bad)).toMatch(/line 2/)
      const stepped = await client.callTool({ name: "run", arguments: { source: "  lda #$42\n  sta $10\nloop: jmp loop\n", until_pc: "0204", read: ["$0010"], watch: ["cclk"] } })
      const s1 = JSON.parse(textOf(stepped))
      expect(s1).toMatchObject({ completed: true, observe: { pc: "0204", a: "42" }, read: { $0010: "42" } })
      expect(s1.observe.cclk).toBeTypeOf("number")
      const sprite = EXAMPLES.find((e) => e.name === "sprite")!.request
      const framed = await client.callTool({ name: "run", arguments: { source: sprite.rom.source, frames: 2, input: 1, screen: { width: 16, height: 8 } } })
      const f = JSON.parse(textOf(framed))
      expect(f.frames).toHaveLength(2)
      expect(f.screen).toHaveLength(16 * 8 * 2)
      expect(f.screen.slice(2 * 2, 2 * 2 + 2)).toBe("02") // the ball at (2, 0) after two frames moving right
      const both = await client.callTool({ name: "run", arguments: { source: "nop\n", half_cycles: 4, frames: 1 } })
      expect(both.isError).toBe(true)
      expect(textOf(both)).toMatch(/exactly one of half_cycles, until_pc, frames/)
      const minted = await client.callTool({ name: "mint_cartridge", arguments: EXAMPLES[0]!.request as never })
      const m = JSON.parse(textOf(minted))
      expect(JSON.parse(gunzipSync(Buffer.from(m.cartridge_base64, "base64")).toString("utf8")).verify.frames_completed).toBe(EXAMPLES[0]!.request.frames)
      const refused = await client.callTool({ name: "mint_cartridge", arguments: { ...EXAMPLES[0]!.request, console: { width: 4, height: 1, screen: 0x0200 } } as never })
      expect(refused.isError).toBe(true)
      expect(textOf(refused)).toMatch(/overlaps its own screen/)
    } finally {
      await client.close()
    }
    expect((await fetch(`${base}/mcp`)).status).toBe(405)
  })

  it("runs long steps on worker threads: the event loop keeps answering meanwhile", async () => {
    // A program whose states never repeat for long (a 16-bit counter), so the run is real work.
    const boot = await post("/v1/boot", { rom: { source: "loop: inc $10\n  bne loop\n  inc $11\n  jmp loop\n" } })
    const long = post("/v1/step", { machine: boot.body.machine, half_cycles: 60000 }).then((r) => ({ r, at: performance.now() }))
    await new Promise((r) => setTimeout(r, 20))
    const health = await fetch(`${base}/healthz`)
    const healthAt = performance.now()
    const done = await long
    expect(health.status).toBe(200)
    expect(done.r.status).toBe(200)
    expect(done.r.body.stepped).toBe(60000)
    // Answered while the run was still going (on the event loop it would have come after it).
    expect(healthAt).toBeLessThan(done.at)
  })

  it("is unavailable, naming the folder and the fetch command, without a netlist", async () => {
    const p = await startPlatform({ cwd: ROOT, yaml: yaml("/nonexistent/netlist") })
    try {
      const status = p.kernel.plugins.find((x) => x.name === "chip-sim")!
      expect(status.status).toBe("unavailable")
      expect(status.reason).toMatch(/\/nonexistent\/netlist.*platform chip fetch-netlist/)
      expect((await fetch(`${p.url("chip")}/api/v1/meta`)).status).toBe(404)
    } finally {
      await p.stop()
    }
  })
})
