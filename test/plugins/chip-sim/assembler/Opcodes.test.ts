// The opcode table against an independent transcription: the standard 16x16 NMOS 6502 opcode
// matrix (MOS MCS6500 Programming Manual, Appendix B), typed in opcode order rather than in the
// per-mnemonic order of Opcodes.ts, so a slip in either shows as a mismatch.
import { describe, expect, it } from "vitest"
import {
  assemble,
  AssembleError,
  decode,
  disassemble,
  MNEMONICS,
  type Mode,
  OPCODES,
  opcodeFor
} from "../../../../plugins/chip-sim/assembler/index.ts"

const MATRIX = `
00 BRK imp|01 ORA izx|05 ORA zp|06 ASL zp|08 PHP imp|09 ORA imm|0A ASL acc|0D ORA abs|0E ASL abs
10 BPL rel|11 ORA izy|15 ORA zpx|16 ASL zpx|18 CLC imp|19 ORA aby|1D ORA abx|1E ASL abx
20 JSR abs|21 AND izx|24 BIT zp|25 AND zp|26 ROL zp|28 PLP imp|29 AND imm|2A ROL acc|2C BIT abs|2D AND abs|2E ROL abs
30 BMI rel|31 AND izy|35 AND zpx|36 ROL zpx|38 SEC imp|39 AND aby|3D AND abx|3E ROL abx
40 RTI imp|41 EOR izx|45 EOR zp|46 LSR zp|48 PHA imp|49 EOR imm|4A LSR acc|4C JMP abs|4D EOR abs|4E LSR abs
50 BVC rel|51 EOR izy|55 EOR zpx|56 LSR zpx|58 CLI imp|59 EOR aby|5D EOR abx|5E LSR abx
60 RTS imp|61 ADC izx|65 ADC zp|66 ROR zp|68 PLA imp|69 ADC imm|6A ROR acc|6C JMP ind|6D ADC abs|6E ROR abs
70 BVS rel|71 ADC izy|75 ADC zpx|76 ROR zpx|78 SEI imp|79 ADC aby|7D ADC abx|7E ROR abx
81 STA izx|84 STY zp|85 STA zp|86 STX zp|88 DEY imp|8A TXA imp|8C STY abs|8D STA abs|8E STX abs
90 BCC rel|91 STA izy|94 STY zpx|95 STA zpx|96 STX zpy|98 TYA imp|99 STA aby|9A TXS imp|9D STA abx
A0 LDY imm|A1 LDA izx|A2 LDX imm|A4 LDY zp|A5 LDA zp|A6 LDX zp|A8 TAY imp|A9 LDA imm|AA TAX imp|AC LDY abs|AD LDA abs|AE LDX abs
B0 BCS rel|B1 LDA izy|B4 LDY zpx|B5 LDA zpx|B6 LDX zpy|B8 CLV imp|B9 LDA aby|BA TSX imp|BC LDY abx|BD LDA abx|BE LDX aby
C0 CPY imm|C1 CMP izx|C4 CPY zp|C5 CMP zp|C6 DEC zp|C8 INY imp|C9 CMP imm|CA DEX imp|CC CPY abs|CD CMP abs|CE DEC abs
D0 BNE rel|D1 CMP izy|D5 CMP zpx|D6 DEC zpx|D8 CLD imp|D9 CMP aby|DD CMP abx|DE DEC abx
E0 CPX imm|E1 SBC izx|E4 CPX zp|E5 SBC zp|E6 INC zp|E8 INX imp|E9 SBC imm|EA NOP imp|EC CPX abs|ED SBC abs|EE INC abs
F0 BEQ rel|F1 SBC izy|F5 SBC zpx|F6 INC zpx|F8 SED imp|F9 SBC aby|FD SBC abx|FE INC abx
`
  .trim()
  .split(/\s*[|\n]\s*/)
  .map((cell) => {
    const [op, mnemonic, mode] = cell.split(" ")
    return { opcode: parseInt(op!, 16), mnemonic: mnemonic!, mode: mode as Mode }
  })

const LENGTH: Record<Mode, number> = {
  imp: 1, acc: 1, imm: 2, zp: 2, zpx: 2, zpy: 2, izx: 2, izy: 2, rel: 2, abs: 3, abx: 3, aby: 3, ind: 3
}

// Operand text per mode and the operand bytes it must produce. The branch is assembled at
// $0200, so `*+$14` is offset $12.
const OPERAND: Record<Mode, [string, Array<number>]> = {
  imp: ["", []],
  acc: ["A", []],
  imm: ["#$12", [0x12]],
  zp: ["$12", [0x12]],
  zpx: ["$12,X", [0x12]],
  zpy: ["$12,Y", [0x12]],
  abs: ["$1234", [0x34, 0x12]],
  abx: ["$1234,X", [0x34, 0x12]],
  aby: ["$1234,Y", [0x34, 0x12]],
  ind: ["($1234)", [0x34, 0x12]],
  izx: ["($12,X)", [0x12]],
  izy: ["($12),Y", [0x12]],
  rel: ["*+$14", [0x12]]
}

const DISASSEMBLY: Record<Mode, string> = {
  imp: "", acc: " A", imm: " #$12", zp: " $12", zpx: " $12,X", zpy: " $12,Y", abs: " $1234",
  abx: " $1234,X", aby: " $1234,Y", ind: " ($1234)", izx: " ($12,X)", izy: " ($12),Y", rel: " $0214"
}

describe("NMOS 6502 opcode table", () => {
  it("has the 151 documented opcodes and 56 mnemonics, exactly the matrix", () => {
    expect(MATRIX).toHaveLength(151)
    expect(OPCODES).toHaveLength(151)
    expect(new Set(MATRIX.map((m) => m.mnemonic)).size).toBe(56)
    expect(MNEMONICS).toEqual([...new Set(MATRIX.map((m) => m.mnemonic))].sort())
    expect(OPCODES.map((o) => [o.opcode, o.mnemonic, o.mode, o.length])).toEqual(
      MATRIX.map((m) => [m.opcode, m.mnemonic, m.mode, LENGTH[m.mode]])
    )
  })

  it.each(MATRIX)("$opcode: $mnemonic $mode assembles, decodes and disassembles", ({ opcode, mnemonic, mode }) => {
    const [operand, operandBytes] = OPERAND[mode]
    const r = assemble(`\t${mnemonic.toLowerCase()} ${operand}`.trimEnd())
    expect([...r.image]).toEqual([opcode, ...operandBytes])
    expect(r.size).toBe(LENGTH[mode])
    expect(opcodeFor(mnemonic, mode)).toBe(opcode)
    expect(decode(opcode)).toMatchObject({ mnemonic, mode, length: LENGTH[mode] })
    expect(disassemble(r.image, 0x0200)).toEqual({ text: mnemonic + DISASSEMBLY[mode], length: LENGTH[mode] })
  })

  it("the 105 other opcodes decode as nothing and disassemble as data", () => {
    const documented = new Set(MATRIX.map((m) => m.opcode))
    const others = Array.from({ length: 256 }, (_, i) => i).filter((i) => !documented.has(i))
    expect(others).toHaveLength(105)
    for (const op of others) {
      expect(decode(op)).toBeUndefined()
      expect(disassemble([op, 0, 0], 0)).toEqual({ text: `.byte $${op.toString(16).toUpperCase().padStart(2, "0")}`, length: 1 })
    }
  })

  // Every mnemonic against every operand shape: what the matrix lacks must be refused
  // (an indexed or plain address is accepted when either its zp or its abs form exists).
  const SHAPES: Array<[string, string, Array<Mode>]> = [
    ["", "none", ["imp", "acc"]],
    ["A", "A", ["acc"]],
    ["#1", "#", ["imm"]],
    ["$1234", "plain", ["zp", "abs", "rel"]],
    ["$12,X", ",X", ["zpx", "abx"]],
    ["$12,Y", ",Y", ["zpy", "aby"]],
    ["($1234)", "(abs)", ["ind"]],
    ["($12,X)", "(zp,X)", ["izx"]],
    ["($12),Y", "(zp),Y", ["izy"]]
  ]
  it.each(MNEMONICS)("%s refuses exactly the operand shapes it lacks", (mnemonic) => {
    const modes = new Set(MATRIX.filter((m) => m.mnemonic === mnemonic).map((m) => m.mode))
    for (const [operand, , accepts] of SHAPES) {
      const ok = accepts.some((m) => modes.has(m))
      // A branch to $1234 from $0200 is a range error, not a mode error; test its mode only.
      const text = modes.has("rel") && operand === "$1234" ? "*" : operand
      const run = () => assemble(`\t${mnemonic} ${text}`.trimEnd())
      if (ok) expect(run).not.toThrow()
      else expect(run).toThrow(AssembleError)
    }
  })
})

describe("disassemble", () => {
  it("shows branch targets with the signed offset from the next instruction, wrapping at $FFFF", () => {
    expect(disassemble([0xd0, 0xfe], 0x0200).text).toBe("BNE $0200")
    expect(disassemble([0x10, 0x7f], 0x0200).text).toBe("BPL $0281")
    expect(disassemble([0x10, 0x80], 0x0200).text).toBe("BPL $0182")
    expect(disassemble([0xf0, 0x10], 0xfff8).text).toBe("BEQ $000A")
  })

  it("marks operand bytes it was not given, and needs only the opcode for a length", () => {
    expect(disassemble([0xad], 0)).toEqual({ text: "LDA $????", length: 3 })
    expect(disassemble([0xad, 0x34], 0)).toEqual({ text: "LDA $??34", length: 3 })
    expect(disassemble(Uint8Array.of(0xa9), 0)).toEqual({ text: "LDA #$??", length: 2 })
    expect(disassemble([0xd0], 0)).toEqual({ text: "BNE $????", length: 2 })
    expect(disassemble([0xea], 0)).toEqual({ text: "NOP", length: 1 })
  })

  it("walks a golden-style program back to its source", () => {
    const r = assemble("start: ldx #$00\nfill: txa\n sta $0300,x\n inx\n bne fill\n jmp ($02ff)\n")
    const texts: Array<string> = []
    for (let i = 0; i < r.size;) {
      const d = disassemble(r.image.subarray(i), r.org + i)
      texts.push(d.text)
      i += d.length
    }
    expect(texts).toEqual(["LDX #$00", "TXA", "STA $0300,X", "INX", "BNE $0202", "JMP ($02FF)"])
  })
})
