// Cross-check against an independent assembler: Debian's cc65 package (`ca65` + `ld65`).
// Skipped, with a note, where ca65 is not installed (`apt-get install -y cc65`); every other
// test in this folder stands without it.
import { execFileSync, spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { assemble, MNEMONICS, OPCODES } from "../../../../plugins/chip-sim/assembler/index.ts"

// The shared golden programs live in `../shared/chip-sim/golden` beside the repository root
// (shared/README.md); `CHIP_SIM_GOLDEN` overrides that for checkouts laid out differently.
const GOLDEN = process.env.CHIP_SIM_GOLDEN ??
  resolve(fileURLToPath(new URL("../../../../", import.meta.url)), "../shared/chip-sim/golden")
const goldenPrograms = (): Array<{ name: string; source: string; image: string; org: number }> =>
  JSON.parse(readFileSync(join(GOLDEN, "manifest.json"), "utf8")).programs

const hasCa65 = spawnSync("ca65", ["--version"]).status === 0 && spawnSync("ld65", ["--version"]).status === 0
if (!hasCa65) console.warn("ca65/ld65 not found: skipping the ca65 cross-check (apt-get install -y cc65)")

const work = hasCa65 ? mkdtempSync(join(tmpdir(), "ca65-")) : ""
afterAll(() => {
  if (work !== "") rmSync(work, { recursive: true, force: true })
})

let seq = 0
/** Assemble with ca65 and link at `org` with ld65; returns the image as lower-case hex. */
const ca65 = (source: string, org = 0x0200): string => {
  const base = join(work, `p${seq++}`)
  writeFileSync(`${base}.s`, source)
  writeFileSync(
    `${base}.cfg`,
    `MEMORY { RAM: start = $${org.toString(16)}, size = $${(0x10000 - org).toString(16)}, file = %O, fill = no; }\n` +
      `SEGMENTS { CODE: load = RAM, type = rw; }\n`
  )
  // ca65 warns on stderr (for example "Didn't use zeropage addressing"); only failure matters.
  execFileSync("ca65", ["--cpu", "6502", "-o", `${base}.o`, `${base}.s`], { stdio: "pipe" })
  execFileSync("ld65", ["-C", `${base}.cfg`, "-o", `${base}.bin`, `${base}.o`], { stdio: "pipe" })
  return readFileSync(`${base}.bin`).toString("hex")
}

/** Deterministic PRNG (mulberry32) so a failure reproduces. */
const rng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = seed
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const hex2 = (v: number) => "$" + v.toString(16).padStart(2, "0")
const hex4 = (v: number) => "$" + v.toString(16).padStart(4, "0")

/**
 * A random program in the dialect both assemblers share: every documented opcode, known and
 * forward operands, labels, `<`/`>`, `*`, strings and character literals, mixed case.
 */
const randomProgram = (seed: number, lines: number): string => {
  const r = rng(seed)
  const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(r() * xs.length)]!
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1))
  const caseOf = (s: string) => (r() < 0.5 ? s.toLowerCase() : s.toUpperCase())
  const out: Array<string> = ["zpc = $3c", "abc = $1234"]
  const zp = () => pick([hex2(int(0, 255)), "zpc", "zpc+2", "<abc", String(int(0, 255)), "%1010"])
  // Forward constants (`fzp`) are small, so both assemblers must still pick absolute.
  const abs = (i: number) =>
    pick([hex4(int(0x100, 0xffff)), "abc", "abc-1", "fzp", "fabs", `L${int(0, lines)}`, `L${Math.max(0, i - 3)}+2`])
  const imm = () =>
    pick([hex2(int(0, 255)), `<L${int(0, lines)}`, `>L${int(0, lines)}`, "'q'", "zpc", "%11110000", "fzp+1", `>abc`])
  for (let i = 0; i <= lines; i++) {
    const label = `L${i}:`
    if (r() < 0.08) {
      out.push(`${label} ${caseOf(".byte")} ${hex2(int(0, 255))}, "Hi;x", 'z', <L${int(0, lines)}, >*`)
      continue
    }
    if (r() < 0.05) {
      out.push(`${label} ${caseOf(".word")} L${int(0, lines)}, *, ${hex4(int(0, 0xffff))}, fabs+1`)
      continue
    }
    const info = pick(OPCODES)
    const m = caseOf(info.mnemonic)
    const x = caseOf("x")
    const y = caseOf("y")
    const operand = (() => {
      switch (info.mode) {
        case "imp": return ""
        case "acc": return pick(["", caseOf("a")])
        case "imm": return `#${imm()}`
        case "zp": return zp()
        case "zpx": return `${zp()},${x}`
        case "zpy": return `${zp()},${y}`
        case "abs": return abs(i)
        case "abx": return `${abs(i)},${x}`
        case "aby": return `${abs(i)},${y}`
        case "ind": return `(${abs(i)})`
        case "izx": return `(${zp()},${x})`
        case "izy": return `(${zp()}),${y}`
        // Within 20 lines (at most 60 bytes) either way, so always in reach.
        case "rel": return pick([`L${Math.min(lines, i + int(0, 20))}`, `L${Math.max(0, i - int(0, 20))}`, "*+2", "*-4"])
      }
    })()
    out.push(`${label}\t${m} ${operand}${r() < 0.3 ? "   ; note" : ""}`)
  }
  out.push("fzp = $21", "fabs = $c000")
  return out.join("\n") + "\n"
}

describe.skipIf(!hasCa65)("cross-check with ca65", () => {
  it.each(goldenPrograms())("golden $name assembles as ca65 does", (p) => {
    const source = readFileSync(join(GOLDEN, p.source), "utf8")
    expect(assemble(source, p.org).bytes).toBe(ca65(source, p.org))
  })

  it("every documented opcode in every mode, zero page and absolute", () => {
    const source = OPCODES.map((o) => {
      const operand = {
        imp: "", acc: "a", imm: "#$44", zp: "$44", zpx: "$44,x", zpy: "$44,y", abs: "$4456",
        abx: "$4456,x", aby: "$4456,y", ind: "($4456)", izx: "($44,x)", izy: "($44),y", rel: "*+$10"
      }[o.mode]
      return `\t${o.mnemonic} ${operand}`
    }).join("\n") + "\n"
    expect(assemble(source).bytes).toBe(ca65(source))
    expect(MNEMONICS.length).toBe(56)
  })

  it.each([1, 2, 3, 4, 5, 6, 7, 8])("random program (seed %i) assembles as ca65 does", (seed) => {
    const source = randomProgram(seed, 300)
    const ours = assemble(source)
    expect(ours.bytes).toBe(ca65(source))
  })

  it("expressions with the operators both dialects read alike", () => {
    const source = [
      "base = $1234",
      "\tlda #<(base+$ff)",
      "\tlda #>(base+$100)",
      "\tlda #(base >> 4) & $ff",
      "\tlda #(3*4)+1",
      "\tlda #base/256",
      "\tlda #~$0f & $ff",
      "\tlda #$f0 | $0f",
      "\tlda #$ff ^ $0f",
      "\tlda #1 << 3",
      "\tlda #-(-5)",
      "\t.word base - $100, base + 'a'",
      "\tldx #%1011",
      "\tldy #255"
    ].join("\n") + "\n"
    expect(assemble(source).bytes).toBe(ca65(source))
  })

  it("a program at a different load address", () => {
    const source = "start:\tjmp start\n\tlda start,x\n\t.word start\n"
    expect(assemble(source, 0x1000).bytes).toBe(ca65(source, 0x1000))
  })
})
