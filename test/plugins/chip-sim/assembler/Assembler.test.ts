import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { readFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import {
  assemble,
  assembleEffect,
  AssembleError,
  toAssembleResponse
} from "../../../../plugins/chip-sim/assembler/index.ts"

// The shared golden programs live in `../shared/chip-sim/golden` beside the repository root
// (shared/README.md); `CHIP_SIM_GOLDEN` overrides that for checkouts laid out differently.
const GOLDEN = process.env.CHIP_SIM_GOLDEN ??
  resolve(fileURLToPath(new URL("../../../../", import.meta.url)), "../shared/chip-sim/golden")
const goldenPrograms = (): Array<{ name: string; source: string; image: string; org: number }> =>
  JSON.parse(readFileSync(join(GOLDEN, "manifest.json"), "utf8")).programs

const hexOf = (source: string, org?: number) => assemble(source, org).bytes

/** The AssembleError `assemble` throws for `source` (fails the test if it does not throw). */
const errorOf = (source: string, org?: number): AssembleError => {
  try {
    assemble(source, org)
  } catch (e) {
    if (e instanceof AssembleError) return e
    throw e
  }
  throw new Error(`expected an AssembleError for:\n${source}`)
}

describe("golden programs", () => {
  it.each(goldenPrograms())("$name.s assembles to exactly $name.bin", (p) => {
    const source = readFileSync(join(GOLDEN, p.source), "utf8")
    const want = readFileSync(join(GOLDEN, p.image))
    const r = assemble(source, p.org)
    expect(r.bytes).toBe(want.toString("hex"))
    expect(Buffer.from(r.image).equals(want)).toBe(true)
    expect(r.org).toBe(p.org)
    expect(r.size).toBe(want.length)
    expect(r.end).toBe(p.org + want.length - 1)
    // The listing accounts for every byte, in order, at the addresses the labels name.
    const lines = source.split("\n")
    if (lines[lines.length - 1] === "") lines.pop()
    expect(r.listing.map((l) => l.text)).toEqual(lines)
    expect(r.listing.map((l) => l.bytes ?? "").join("")).toBe(r.bytes)
    for (const l of r.listing) {
      if (l.label !== null && l.addr !== null) expect(r.labels[l.label]).toBe(l.addr)
    }
  })

  it("the .org in the source wins over the org argument", () => {
    const p = goldenPrograms()[0]!
    const source = readFileSync(join(GOLDEN, p.source), "utf8")
    const r = assemble(source, 0x8000)
    expect(r.org).toBe(0x0200)
    expect(r.bytes).toBe(readFileSync(join(GOLDEN, p.image)).toString("hex"))
  })

  it("lists stack.s line by line", () => {
    const r = assemble(readFileSync(join(GOLDEN, "stack.s"), "utf8"), 0x0200)
    expect(r.listing[0]).toEqual({ n: 1, text: r.listing[0]!.text, label: null, addr: null, bytes: null })
    expect(r.listing[1]).toMatchObject({ n: 2, label: null, addr: null, bytes: null }) // .org
    expect(r.listing[2]).toEqual({ n: 3, text: "start:  ldx #$FF", label: "start", addr: 0x0200, bytes: "a2ff" })
    const handler = r.listing.find((l) => l.label === "handler")!
    // A label alone on its line emits nothing; its address is in `labels`.
    expect(handler).toMatchObject({ text: "handler:", addr: null, bytes: null })
    expect(r.labels.handler).toBe(0x023e)
    expect(r.listing.find((l) => l.text.includes(".byte"))).toMatchObject({ addr: 0x0222, bytes: "ea" })
  })
})

describe("zero page or absolute", () => {
  it("uses the zero-page form when the value is known to fit in a byte", () => {
    expect(hexOf("lda $12\nlda $0012\nlda 18\nlda $12,x\nldx $12,y")).toBe("a512a512a512b512b612")
    expect(hexOf("lda $100\nlda $100,x\nldx $100,y\nlda $12,y")).toBe("ad0001bd0001be0001b91200")
  })

  it("uses it for a label or constant defined above", () => {
    expect(hexOf("zp = $40\n lda zp\n lda zp+1,x", 0x0200)).toBe("a540b541")
    expect(hexOf(".org $0010\nvar: .byte 7\n lda var\n sta var", 0)).toBe("07a5108510")
  })

  it("uses the absolute form for a forward reference, consistently across passes", () => {
    const r = assemble(".org $0010\n lda later\n lda later,x\n inc later\n lda fwd\nlater: nop\nfwd = $20\n lda fwd\n")
    expect(r.bytes).toBe("ad1c00bd1c00ee1c00ad2000eaa520")
    expect(r.labels).toEqual({ later: 0x1c, fwd: 0x20 })
    expect(r.listing.map((l) => l.addr)).toEqual([null, 0x10, 0x13, 0x16, 0x19, 0x1c, null, 0x1d])
  })

  it("uses the zero-page form where no absolute form exists (STX zp,Y, STY zp,X), range-checked", () => {
    expect(hexOf(" stx fwd,y\n sty fwd,x\nfwd = $21")).toBe("96219421")
    const e = errorOf("\n stx $1234,y")
    expect(e.line).toBe(2)
    expect(e.message).toMatch(/\$1234 is not a zero-page address.*STX.*zp,Y/)
  })

  it("(zp,X) and (zp),Y always take one byte", () => {
    expect(hexOf(" lda (ptr,x)\n lda (ptr),y\nptr = $fe")).toBe("a1feb1fe")
    expect(errorOf(" lda ($100),y").message).toMatch(/\$0100 is not a zero-page address/)
  })
})

describe("expressions", () => {
  it("< and > take the low and high byte, binding tighter than + and -", () => {
    expect(hexOf(" lda #<$1234\n lda #>$1234\n .byte <lab, >lab\nlab: .word lab", 0x2ff0)).toBe("a934a912f62ff62f")
    expect(hexOf("v = $12ff\n .byte >v+1, >(v+1), <(v+1), <v-1")).toBe("131300fe")
    // `<v+1` is `(<v)+1` = $100, which is no byte.
    expect(errorOf("v = $12ff\n .byte <v+1").message).toMatch(/256 \(\$0100\) does not fit in a byte/)
  })

  it("reads $hex, %binary, decimal, 'c' and 0x, in + - * / & | ^ << >> ~ and parentheses", () => {
    expect(hexOf(" .byte $1f, %1010, 99, 'A', 0x10, 2+3, 9-4, 3*4, 17/5, $f0&$3c, 1|6, 5^1, 1<<4, $80>>3, ~$f0&$ff")).toBe(
      "1f0a6341100505" + "0c03300704" + "1010" + "0f"
    )
    expect(hexOf(" .byte (2+3)*4, 2+3*4, -1, -128")).toBe("140eff80")
  })

  it("* is the current address: the line's for instructions, the item's in a data list", () => {
    expect(hexOf("here = *\n jmp *\n .word *, *, here", 0x0300)).toBe("4c0003" + "0303" + "0503" + "0003")
    expect(hexOf(" bne *+4\n nop\n nop")).toBe("d002eaea")
  })

  it("strings in .byte are their characters; a one-character string is a number elsewhere", () => {
    expect(hexOf(' .byte "Hi; there", 0\n lda #"x"')).toBe(Buffer.from("Hi; there").toString("hex") + "00a978")
    expect(hexOf(" .byte ';', \"\"\n")).toBe("3b")
  })

  it("constants: =, .equ and equ, defined before or after use", () => {
    const r = assemble("a1 = $10\na2 .equ a1+1\na3 EQU a4*2\n lda #a1\n lda #a2\n lda #a3\na4 = 3")
    expect(r.bytes).toBe("a910a911a906")
    expect(r.labels).toEqual({ a1: 0x10, a2: 0x11, a3: 6, a4: 3 })
    expect(r.listing[0]).toMatchObject({ label: "a1", addr: null, bytes: null })
  })
})

describe("directives and layout", () => {
  it("fills a forward .org gap with $00 and starts the image at the first .org", () => {
    const r = assemble("; head\n .org $0300\n nop\n .org $0305\nlast: nop", 0x0200)
    expect(r).toMatchObject({ org: 0x0300, end: 0x0305, size: 6, bytes: "ea00000000ea", labels: { last: 0x305 } })
    expect(r.image).toEqual(Uint8Array.of(0xea, 0, 0, 0, 0, 0xea))
    expect(hexOf(" nop\n * = $0203\n nop", 0x0200)).toBe("ea0000ea")
    // .org to the current address is allowed and changes nothing.
    expect(hexOf(" nop\n .org $0201\n nop")).toBe("eaea")
  })

  it("gives a label on a .org line the address before the .org", () => {
    expect(assemble("a1: .org $0300\nb1: * = $0302\nc1: nop").labels).toEqual({ a1: 0x200, b1: 0x300, c1: 0x302 })
  })

  it("lets .org move freely before the first byte", () => {
    expect(assemble(" .org $4000\n .org $1000\n brk").org).toBe(0x1000)
  })

  it("places vectors at the top of memory", () => {
    const r = assemble(" .org $fff0\nstart: jmp start\n .org $fffc\n .word start, start")
    expect(r).toMatchObject({ org: 0xfff0, end: 0xffff, size: 16 })
    expect(r.bytes).toBe("4cf0ff" + "00".repeat(9) + "f0fff0ff")
  })

  it(".word is little-endian; .db/.byt/.dw/.addr are aliases", () => {
    expect(hexOf(" .word $1234, 1\n .dw $abcd\n .addr $0102\n .db 1\n .byt 2")).toBe("34120100" + "cdab" + "0201" + "01" + "02")
  })

  it("is case-insensitive for mnemonics, directives and registers, case-sensitive for symbols", () => {
    expect(hexOf(" LDA $10,X\n lda $10,x\n Lda ($10),Y\n .BYTE 1\n .Org $0208\n ASL\n asl a\n ASL A")).toBe(
      "b510b510b11001" + "000a0a0a"
    )
    const r = assemble("Loop: nop\nloop: nop\n jmp Loop\n jmp loop")
    expect(r.labels).toEqual({ Loop: 0x200, loop: 0x201 })
  })

  it("reads CRLF and CR line ends and tabs", () => {
    const r = assemble("start:\tlda #1\r\n\tjmp start\r\n")
    expect(r.bytes).toBe("a9014c0002")
    expect(r.listing.map((l) => l.text)).toEqual(["start:\tlda #1", "\tjmp start"])
    expect(hexOf("nop\rnop")).toBe("eaea")
  })

  it("empty source: size 0 at the org argument, end = org - 1, no listing", () => {
    expect(assemble("")).toEqual({
      org: 0x0200, end: 0x01ff, size: 0, bytes: "", image: new Uint8Array(0), labels: {}, listing: []
    })
    const r = assemble("; just a comment\n\nx1 = 5\n", 0x1000)
    expect(r).toMatchObject({ org: 0x1000, end: 0x0fff, size: 0, bytes: "", labels: { x1: 5 } })
    expect(r.listing).toEqual([
      { n: 1, text: "; just a comment", label: null, addr: null, bytes: null },
      { n: 2, text: "", label: null, addr: null, bytes: null },
      { n: 3, text: "x1 = 5", label: "x1", addr: null, bytes: null }
    ])
  })

  it("toAssembleResponse keeps exactly the AssembleResponse fields", () => {
    const body = toAssembleResponse(assemble("start: jmp start"))
    expect(Object.keys(body).sort()).toEqual(["bytes", "end", "labels", "listing", "org", "size"])
    expect(JSON.parse(JSON.stringify(body))).toEqual({
      org: 512, end: 514, size: 3, bytes: "4c0002", labels: { start: 512 },
      listing: [{ n: 1, text: "start: jmp start", label: "start", addr: 512, bytes: "4c0002" }]
    })
  })
})

describe("errors name their line and the offending text", () => {
  const cases: Array<[string, string, number, RegExp]> = [
    ["unknown mnemonic", " nop\n ldb #1", 2, /unknown mnemonic "ldb"/],
    ["label without colon", "start lda #1", 1, /unknown mnemonic "start".*colon/],
    ["unknown directive", " .fill 3", 1, /unknown directive "\.fill"/],
    ["bad mode: immediate store", " nop\n sta #1", 2, /STA does not take the immediate mode/],
    ["bad mode: indexed JMP", " jmp $1234,x", 1, /JMP does not take an ,X index/],
    ["bad mode: accumulator", " lda a", 1, /LDA does not take the accumulator mode/],
    ["bad mode: missing operand", " lda", 1, /LDA needs an operand/],
    ["bad mode: operand on implied", " nop #1", 1, /NOP does not take the immediate mode/],
    ["no (zp,Y) mode", " lda ($10,y)", 1, /no \(zp,Y\) mode/],
    ["undefined symbol", " nop\n nop\n jmp nowhere", 3, /undefined symbol "nowhere"/],
    ["undefined symbol, case hint", "Main: nop\n jmp main", 2, /undefined symbol "main".*"Main"/],
    ["undefined in a constant", "k = missing + 1", 1, /undefined symbol "missing"/],
    ["duplicate label", "here: nop\n\nhere: nop", 3, /duplicate symbol "here" \(first defined on line 1\)/],
    ["duplicate constant", "k = 1\nk = 2", 2, /duplicate symbol "k"/],
    ["register as a name", "x: nop", 1, /"x" is a register name/],
    ["mnemonic as a name", "lda = 3", 1, /"lda" is a mnemonic/],
    ["circular constants", "p = q\nq = p\n lda #p", 3, /circular definition/],
    ["immediate out of range", " lda #$100", 1, /does not fit in a byte/],
    ["immediate too negative", " lda #-129", 1, /does not fit in a byte/],
    ["byte out of range", " .byte 1, 256", 1, /value 256.*does not fit in a byte/],
    ["word out of range", " .word $10000", 1, /does not fit in a word/],
    ["address out of range", " jmp $10000", 1, /address 65536 is outside 0 to 65535/],
    ["negative address", " lda -1", 1, /not a zero-page address|outside/],
    ["bad hex", " lda #$1g", 1, /bad number "\$1g"/],
    ["bad binary", " lda #%102", 1, /bad number "%102"/],
    ["bad decimal", " lda #12ab", 1, /bad number "12ab"/],
    ["bare $", " lda $", 1, /bad number "\$"/],
    ["huge number", " lda $123456789", 1, /number too large/],
    ["bad character literal", " lda #'ab'", 1, /bad character literal/],
    ["unterminated string", ' .byte "abc', 1, /unterminated string/],
    ["stray character", " lda #1 @", 1, /unexpected character "@"/],
    ["trailing junk", " lda #1 2", 1, /unexpected "2" after expression/],
    ["empty data item", " .byte 1,,2", 1, /empty value/],
    ["string in .word", ' .word "ab"', 1, /strings are allowed in \.byte/],
    ["division by zero", " .byte 1/0", 1, /division by zero/],
    ["branch forward out of range", " bne far\n .byte " + Array(128).fill("0").join(",") + "\nfar: rts", 1, /branch out of range: target \$0282 is 128 bytes/],
    ["branch backward out of range", "back: .byte " + Array(127).fill("0").join(",") + "\n beq back", 2, /branch out of range.*-129 bytes/],
    ["backward .org", " .org $0300\n nop\n .org $02ff", 3, /\.org \$02FF goes backward \(already at \$0301\)/],
    [".org to a forward symbol", " nop\n .org there\nthere: nop", 2, /\.org needs a value known on this line; "there"/],
    [".org past memory", " .org $10000", 1, /not an address/],
    ["runs past $FFFF", " .org $fffe\n nop\n nop\n nop", 4, /runs past \$FFFF/]
  ]

  it.each(cases)("%s", (_name, source, line, pattern) => {
    const e = errorOf(source)
    expect(e).toBeInstanceOf(Error)
    expect(e.name).toBe("AssembleError")
    expect(e._tag).toBe("AssembleError")
    expect(e.line).toBe(line)
    expect(e.message).toMatch(pattern)
    expect(e.message.startsWith(`line ${line}: `)).toBe(true)
    const text = source.split("\n")[line - 1]!
    expect(e.text).toBe(text)
    expect(e.message).toContain(`in "${text.trim()}"`)
  })

  it("branches reach exactly -128 and +127", () => {
    expect(hexOf(" bne far\n .byte " + Array(127).fill("0").join(",") + "\nfar: rts").slice(0, 4)).toBe("d07f")
    expect(hexOf("back: .byte " + Array(126).fill("0").join(",") + "\n beq back").slice(-4)).toBe("f080")
  })

  it("an org argument outside 0 to 65535 is line 0", () => {
    for (const org of [-1, 0x10000, 1.5, Number.NaN]) {
      const e = errorOf(" nop", org)
      expect(e.line).toBe(0)
      expect(e.message).toMatch(/not an address/)
    }
  })

  it("assembleEffect puts the error in the error channel", () => {
    const bad = Effect.runSync(Effect.either(assembleEffect(" nop\n jmp nowhere")))
    expect(Either.isLeft(bad) && bad.left.line).toBe(2)
    const good = Effect.runSync(assembleEffect(" nop", 0x1000))
    expect(good.org).toBe(0x1000)
  })
})
