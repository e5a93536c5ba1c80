import { describe, expect, it } from "vitest"
import { chunkWords } from "../../../plugins/job-vectl/Chunk.ts"

const words = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `w${from + i}`).join(" ")

describe("chunkWords", () => {
  it("keeps a text of at most 512 words whole, normalising whitespace", () => {
    expect(chunkWords("  a \n b\tc  ")).toEqual([{ index: 0, start: 0, words: 3, text: "a b c" }])
    expect(chunkWords(words(512))).toHaveLength(1)
    expect(chunkWords(" \n ")).toEqual([])
  })

  it("cuts longer texts into 512-word windows overlapping by 64 words (stride 448), the last one ending at the last word", () => {
    const c = chunkWords(words(1000))
    expect(c.map((x) => [x.start, x.words])).toEqual([[0, 512], [448, 512], [488, 512]])
    expect(c[1]!.text.split(" ")[0]).toBe("w448")
    expect(c[0]!.text.split(" ").slice(-64)).toEqual(c[1]!.text.split(" ").slice(0, 64))
    expect(c.at(-1)!.text.endsWith("w999")).toBe(true)
    const d = chunkWords(words(1408))
    expect(d.map((x) => x.start)).toEqual([0, 448, 896])
    expect(d.at(-1)!.words).toBe(512)
  })

  it("takes other sizes and refuses an overlap as large as the window", () => {
    expect(chunkWords(words(10), 4, 1).map((x) => x.start)).toEqual([0, 3, 6])
    expect(() => chunkWords("a", 4, 4)).toThrow(RangeError)
  })
})
