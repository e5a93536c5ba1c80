/**
 * chip-sim's Contract: `verifyCartridge` accepts what `mintCartridge` packs and refuses every
 * other thing with the check that failed (what the registry relies on when a cartridge arrives).
 */
import { gunzipSync, gzipSync } from "node:zlib"
import { describe, expect, it } from "vitest"
import { CartridgeFormatError, verifyCartridge } from "../../../plugins/chip-sim/Contract.ts"
import { mintCartridge } from "../../../plugins/chip-sim/console/Cartridge.ts"
import { EXAMPLES } from "../../../plugins/chip-sim/console/Examples.ts"

// frames 0: packed without running the chip (the runner is never asked).
const unused = { boot: () => Promise.reject(new Error("not run")), frames: () => Promise.reject(new Error("not run")) }

describe("verifyCartridge", () => {
  it("accepts every minted example and returns its document", async () => {
    for (const ex of EXAMPLES) {
      const minted = await mintCartridge({ ...ex.request, frames: 0 }, unused)
      expect(verifyCartridge(minted.gzip)).toEqual(minted.document)
    }
  })

  it("refuses what is not a minted cartridge, saying which check failed", async () => {
    const minted = await mintCartridge({ ...EXAMPLES[0]!.request, frames: 0 }, unused)
    const doc = () => JSON.parse(gunzipSync(minted.gzip).toString()) as Record<string, any>
    const refusal = (bytes: Uint8Array, max?: number) => {
      try {
        verifyCartridge(bytes, max)
      } catch (e) {
        expect(e).toBeInstanceOf(CartridgeFormatError)
        return (e as CartridgeFormatError).reason
      }
      throw new Error("accepted")
    }
    const gz = (d: unknown) => gzipSync(JSON.stringify(d))
    expect(refusal(Buffer.from("plain"))).toBe("not gzip data")
    expect(refusal(minted.gzip, 100)).toBe("inflates past 100 bytes")
    expect(refusal(gzipSync("{"))).toMatch(/JSON/)
    expect(refusal(gz({ ...doc(), format: "other" }))).toMatch(/format/)
    expect(refusal(gz({ ...doc(), version: 2 }))).toMatch(/version/)
    const bytes = doc()
    bytes.rom.bytes = `ff${bytes.rom.bytes.slice(2)}`
    expect(refusal(gz(bytes))).toMatch(/rom.bytes differ/)
    const source = doc()
    source.rom.source = "  bogus\n"
    expect(refusal(gz(source))).toMatch(/does not assemble/)
    const layout = doc()
    layout.console.screen = layout.rom.org
    expect(refusal(gz(layout))).toMatch(/overlaps its own screen/)
    const tiles = doc()
    tiles.tiles.pixels[0][0] = "33333333"
    expect(refusal(gz(tiles))).toMatch(/tiles.count or tiles.pixels/)
    const edited = doc()
    edited.console.width += 1
    expect(refusal(gz(edited))).toMatch(/meta.minted does not match/)
  })
})
