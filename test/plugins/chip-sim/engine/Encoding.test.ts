import { describe, expect, it } from "vitest"
import {
  BLOB_HEX_LENGTH,
  decodeBits,
  decodeMemory,
  encodeBits,
  encodeMemory,
  EngineStateError,
  isValidBlob,
  MemoryFormatError
} from "../../../../plugins/chip-sim/engine/index.ts"

describe("ChipState bitset encoding", () => {
  it("has the spec's lengths", () => {
    expect(BLOB_HEX_LENGTH).toEqual({ nodes: 432, transistors: 878 })
  })

  it("puts item i in bit (i & 7) of byte (i >> 3), lower-case hex", () => {
    const bits = new Uint8Array(1725)
    bits[0] = 1
    bits[9] = 1
    bits[1724] = 1
    const hex = encodeBits(bits, "nodes")
    expect(hex.slice(0, 4)).toBe("0102")
    expect(hex.slice(-2)).toBe("10")
    expect(hex).toMatch(/^[0-9a-f]{432}$/)
    expect(Array.from(decodeBits(hex, "nodes"))).toEqual(Array.from(bits))
  })

  it("round-trips random transistor sets", () => {
    const bits = Uint8Array.from({ length: 3510 }, (_, i) => ((i * 7919) % 13) & 1)
    expect(Array.from(decodeBits(encodeBits(bits, "transistors"), "transistors"))).toEqual(Array.from(bits))
  })

  it("refuses wrong length, non-hex and set padding bits", () => {
    const ok = "0".repeat(432)
    expect(isValidBlob(ok, "nodes")).toBe(true)
    expect(isValidBlob(ok.toUpperCase().replace(/^0/, "A"), "nodes")).toBe(true)
    expect(isValidBlob(ok.slice(1), "nodes")).toBe(false)
    expect(isValidBlob(ok + "00", "nodes")).toBe(false)
    expect(isValidBlob("g" + ok.slice(1), "nodes")).toBe(false)
    // nodes 1725..1727 are bits 5..7 of the last byte
    expect(isValidBlob(ok.slice(0, 430) + "20", "nodes")).toBe(false)
    expect(isValidBlob(ok.slice(0, 430) + "1f", "nodes")).toBe(true)
    // transistors 3510, 3511 are bits 6, 7 of the last byte
    const t = "0".repeat(878)
    expect(isValidBlob(t.slice(0, 876) + "40", "transistors")).toBe(false)
    expect(isValidBlob(t.slice(0, 876) + "3f", "transistors")).toBe(true)
    expect(() => decodeBits(ok.slice(0, 430) + "80", "nodes", "value")).toThrow(EngineStateError)
    expect(() => decodeBits("x", "transistors")).toThrow(/trans|length/)
  })
})

describe("SparseMemory", () => {
  it("expands pages over the fill and encodes canonically", () => {
    const mem = decodeMemory({ fill: "EA", pages: { "02": "a9".repeat(256), "03": "ea".repeat(256) } })
    expect(mem[0x0100]).toBe(0xea)
    expect(mem[0x0200]).toBe(0xa9)
    const enc = encodeMemory(mem, 0xea)
    expect(enc.fill).toBe("ea")
    expect(Object.keys(enc.pages)).toEqual(["02"])
  })

  it("defaults to zero fill and drops zero pages", () => {
    const mem = decodeMemory(undefined)
    expect(mem.length).toBe(65536)
    mem[0xfffc] = 0x12
    expect(encodeMemory(mem)).toEqual({ fill: "00", pages: { ff: "00".repeat(252) + "12000000" } })
  })

  it("refuses malformed pages", () => {
    expect(() => decodeMemory({ pages: { "100": "00".repeat(256) } })).toThrow(MemoryFormatError)
    expect(() => decodeMemory({ pages: { "01": "00" } })).toThrow(MemoryFormatError)
    expect(() => decodeMemory({ fill: "zz" })).toThrow(MemoryFormatError)
  })
})
