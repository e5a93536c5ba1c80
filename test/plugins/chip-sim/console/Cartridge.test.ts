import { createHash } from "node:crypto"
import { gunzipSync } from "node:zlib"
import { describe, expect, it } from "vitest"
import { assemble } from "../../../../plugins/chip-sim/assembler/Assembler.ts"
import { CartridgeLayoutError, checkLayout, mintCartridge, type CartridgeRequest } from "../../../../plugins/chip-sim/console/Cartridge.ts"
import { SMALLEST_ROM } from "../../../../plugins/chip-sim/console/Console.ts"
import { EXAMPLES } from "../../../../plugins/chip-sim/console/Examples.ts"
import { chrToPixels, parseChr, pixelOf, pixelsToChr, TileFormatError } from "../../../../plugins/chip-sim/console/Tiles.ts"
import { makeChipSimulator } from "../../../../plugins/chip-sim/Simulation.ts"
import { haveNetlist, NETLIST_DIR } from "../engine/golden.ts"

describe("tiles", () => {
  it("packs pixels into two bit planes, most significant bit leftmost, and back", () => {
    const tile = ["01230123", "00000000", "33333333", "10000000", "00000001", "22222222", "11111111", "00000000"]
    const chr = pixelsToChr([tile])
    expect(chr).toHaveLength(16)
    // row 0: colours 0 1 2 3 0 1 2 3 -> plane0 01010101, plane1 00110011
    expect(chr[0]).toBe(0b01010101)
    expect(chr[8]).toBe(0b00110011)
    expect(chr[3]).toBe(0b10000000)
    expect(chr[4]).toBe(0b00000001)
    expect(chrToPixels(chr)).toEqual([tile])
    expect(pixelOf(chr, 0, 3, 0)).toBe(3)
    expect(parseChr(Buffer.from(chr).toString("hex"))).toEqual(chr)
  })
  it("refuses malformed art, naming the tile and row", () => {
    expect(() => pixelsToChr([["0123"]])).toThrow(/tiles.pixels\[0\]: expected eight rows/)
    expect(() => pixelsToChr([Array(8).fill("00000004")])).toThrow(/tiles.pixels\[0\]\[0\]/)
    expect(() => parseChr("abc")).toThrow(TileFormatError)
    expect(() => parseChr("00".repeat(15))).toThrow(/whole number of 16-byte tiles/)
    expect(() => pixelsToChr(Array.from({ length: 257 }, () => Array(8).fill("00000000")))).toThrow(/at most 256/)
  })
})

describe("cartridge layout", () => {
  const rom = (src: string) => assemble(src)
  const base = { width: 16, height: 2 }
  const refused = (src: string, c: object, pattern: RegExp) => {
    let err: unknown
    try {
      checkLayout(rom(src), { ...base, ...c })
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(CartridgeLayoutError)
    expect((err as CartridgeLayoutError).reason).toMatch(pattern)
    expect((err as CartridgeLayoutError).fix.length).toBeGreaterThan(10)
  }
  it("accepts the smallest ROM with the usual addresses", () => {
    expect(() => checkLayout(rom(SMALLEST_ROM), base)).not.toThrow()
  })
  it("refuses each layout of the spec's Errors table with the reason and what to do", () => {
    refused("  .org $0500\n  nop\n", {}, /overlaps its own screen/)
    refused("  .org $0180\n  nop\n", {}, /covers the stack page/)
    refused(SMALLEST_ROM, { screen: 0x0100 }, /screen .* covers the stack page/)
    refused("  .org $fff0\n  .byte 1,2,3,4,5,6,7,8,9,10,11,12\n", {}, /reaches the vectors/)
    refused(SMALLEST_ROM, { tick: 0x0201 }, /contract byte tick .* inside the ROM/)
    refused(SMALLEST_ROM, { input: 0x0d }, /tick and input share the address \$000D/)
    refused(SMALLEST_ROM, { status: 0x02 }, /input and status share/)
    refused(SMALLEST_ROM, { screen: 0xfff0 }, /runs past \$FFFF/)
  })
})

describe.skipIf(!haveNetlist)("minting on the chip", () => {
  const sim = makeChipSimulator(NETLIST_DIR)
  const runner = { boot: async (r: never) => sim.boot(r), frames: async (r: Parameters<typeof sim.frames>[0]) => sim.frames(r) }

  for (const ex of EXAMPLES) {
    it(`mints the ${ex.name} example: every frame completes, the screen changes, the same bytes twice`, async () => {
      const a = await mintCartridge(ex.request, runner)
      const b = await mintCartridge(ex.request, runner)
      expect(createHash("sha256").update(a.gzip).digest("hex")).toBe(createHash("sha256").update(b.gzip).digest("hex"))
      // gzip header: modification time zero
      expect(a.gzip.readUInt32LE(4)).toBe(0)
      const doc = JSON.parse(gunzipSync(a.gzip).toString("utf8"))
      expect(doc).toEqual(JSON.parse(JSON.stringify(a.document)))
      expect(doc.format).toBe("chip-sim-cartridge")
      expect(doc.version).toBe(1)
      const v = doc.verify
      expect(v.frames_completed).toBe(ex.request.frames)
      expect(v.half_cycles_per_frame).toHaveLength(ex.request.frames!)
      for (const n of v.half_cycles_per_frame) expect(n).toBeGreaterThan(0)
      expect(v.screen_changed).toBe(true)
      expect(v.tiles_on_screen.length).toBeGreaterThan(0)
      expect(doc.tiles.count).toBe(4)
      expect(doc.tiles.pixels).toEqual(ex.request.tiles.pixels)
      expect(doc.rom.bytes).toBe(assemble(ex.request.rom.source).bytes)
    })
  }

  it("the sprite follows the controller byte, and the game raises status", async () => {
    const sprite = EXAMPLES.find((e) => e.name === "sprite")!.request
    // input 0x05: right and down each frame, from (0, 0): after 4 frames at (4, 4) = cell 68
    const moved = await mintCartridge(sprite, runner)
    const cells = Buffer.from((moved.document.verify as { screen: string }).screen, "hex")
    expect(cells.indexOf(2)).toBe(4 * 16 + 4)
    const game = await mintCartridge(EXAMPLES.find((e) => e.name === "game")!.request, runner)
    expect(game.document.verify).toMatchObject({ status: 1, tiles_on_screen: [3], one_value_screen: true })
    expect(game.document.notes.join(" ")).toMatch(/one value everywhere \(3\)/)
  })

  it("reports a ROM that never raises tick, within the step limits", async () => {
    const req: CartridgeRequest = {
      rom: { source: "  .org $0200\nspin: jmp spin\n" },
      console: { width: 4, height: 1 },
      tiles: { pixels: [Array(8).fill("00000000")] },
      frames: 3
    }
    const t = performance.now()
    const m = await mintCartridge(req, runner)
    expect(m.document.verify).toMatchObject({ frames_completed: 0, half_cycles_per_frame: [200_000], screen_changed: false, one_value_screen: true })
    expect(m.document.notes.join(" ")).toMatch(/did not raise tick \(\$000D\) within 200000 half-cycles/)
    expect(performance.now() - t).toBeLessThan(60_000)
  })

  it("skips verification with frames: 0", async () => {
    const m = await mintCartridge({ ...EXAMPLES[0]!.request, frames: 0 }, runner)
    expect(m.document.verify).toEqual({ skipped: true })
  })
})
