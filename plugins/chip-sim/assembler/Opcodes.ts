/**
 * The documented NMOS 6502 instruction set: 56 mnemonics, 151 opcodes, 13 addressing modes.
 *
 * Source of facts: the MOS Technology MCS6500 Microcomputer Family Programming Manual (1976),
 * Appendix B (instruction summary), cross-checked against Debian's `ca65` (cc65 2.19) by the
 * tests. The undocumented ("illegal") NMOS opcodes are deliberately absent: the assembler must
 * never emit them, and the disassembler shows them as data.
 *
 * @module
 */

/**
 * Addressing mode ids.
 *
 * - `imp` implied (`CLC`), `acc` accumulator (`ASL` or `ASL A`), `imm` immediate (`LDA #$10`)
 * - `zp` zero page (`LDA $10`), `zpx` (`LDA $10,X`), `zpy` (`LDX $10,Y`)
 * - `abs` absolute (`LDA $1234`), `abx` (`LDA $1234,X`), `aby` (`LDA $1234,Y`)
 * - `ind` indirect, `JMP` only (`JMP ($1234)`)
 * - `izx` indexed indirect (`LDA ($10,X)`), `izy` indirect indexed (`LDA ($10),Y`)
 * - `rel` relative, the eight branches (`BNE label`)
 */
export type Mode =
  | "imp"
  | "acc"
  | "imm"
  | "zp"
  | "zpx"
  | "zpy"
  | "abs"
  | "abx"
  | "aby"
  | "ind"
  | "izx"
  | "izy"
  | "rel"

/** Every mode, in the order used for tables and messages. */
export const MODES: ReadonlyArray<Mode> = [
  "imp", "acc", "imm", "zp", "zpx", "zpy", "abs", "abx", "aby", "ind", "izx", "izy", "rel"
]

/** Operand bytes that follow the opcode in each mode (instruction length is this plus one). */
export const OPERAND_BYTES: Readonly<Record<Mode, 0 | 1 | 2>> = {
  imp: 0, acc: 0,
  imm: 1, zp: 1, zpx: 1, zpy: 1, izx: 1, izy: 1, rel: 1,
  abs: 2, abx: 2, aby: 2, ind: 2
}

/** How each mode is written, for messages and the disassembler (`v` stands for the operand). */
export const MODE_SYNTAX: Readonly<Record<Mode, string>> = {
  imp: "", acc: "A", imm: "#v",
  zp: "zp", zpx: "zp,X", zpy: "zp,Y",
  abs: "abs", abx: "abs,X", aby: "abs,Y",
  ind: "(abs)", izx: "(zp,X)", izy: "(zp),Y", rel: "label"
}

// Written as the Programming Manual's per-instruction rows (mnemonic -> mode -> opcode) because
// that is the form a reviewer can check line by line against the manual; the opcode-indexed
// table the disassembler needs is derived below.
const TABLE: Readonly<Record<string, Partial<Record<Mode, number>>>> = {
  ADC: { imm: 0x69, zp: 0x65, zpx: 0x75, abs: 0x6d, abx: 0x7d, aby: 0x79, izx: 0x61, izy: 0x71 },
  AND: { imm: 0x29, zp: 0x25, zpx: 0x35, abs: 0x2d, abx: 0x3d, aby: 0x39, izx: 0x21, izy: 0x31 },
  ASL: { acc: 0x0a, zp: 0x06, zpx: 0x16, abs: 0x0e, abx: 0x1e },
  BCC: { rel: 0x90 },
  BCS: { rel: 0xb0 },
  BEQ: { rel: 0xf0 },
  BIT: { zp: 0x24, abs: 0x2c },
  BMI: { rel: 0x30 },
  BNE: { rel: 0xd0 },
  BPL: { rel: 0x10 },
  BRK: { imp: 0x00 },
  BVC: { rel: 0x50 },
  BVS: { rel: 0x70 },
  CLC: { imp: 0x18 },
  CLD: { imp: 0xd8 },
  CLI: { imp: 0x58 },
  CLV: { imp: 0xb8 },
  CMP: { imm: 0xc9, zp: 0xc5, zpx: 0xd5, abs: 0xcd, abx: 0xdd, aby: 0xd9, izx: 0xc1, izy: 0xd1 },
  CPX: { imm: 0xe0, zp: 0xe4, abs: 0xec },
  CPY: { imm: 0xc0, zp: 0xc4, abs: 0xcc },
  DEC: { zp: 0xc6, zpx: 0xd6, abs: 0xce, abx: 0xde },
  DEX: { imp: 0xca },
  DEY: { imp: 0x88 },
  EOR: { imm: 0x49, zp: 0x45, zpx: 0x55, abs: 0x4d, abx: 0x5d, aby: 0x59, izx: 0x41, izy: 0x51 },
  INC: { zp: 0xe6, zpx: 0xf6, abs: 0xee, abx: 0xfe },
  INX: { imp: 0xe8 },
  INY: { imp: 0xc8 },
  JMP: { abs: 0x4c, ind: 0x6c },
  JSR: { abs: 0x20 },
  LDA: { imm: 0xa9, zp: 0xa5, zpx: 0xb5, abs: 0xad, abx: 0xbd, aby: 0xb9, izx: 0xa1, izy: 0xb1 },
  LDX: { imm: 0xa2, zp: 0xa6, zpy: 0xb6, abs: 0xae, aby: 0xbe },
  LDY: { imm: 0xa0, zp: 0xa4, zpx: 0xb4, abs: 0xac, abx: 0xbc },
  LSR: { acc: 0x4a, zp: 0x46, zpx: 0x56, abs: 0x4e, abx: 0x5e },
  NOP: { imp: 0xea },
  ORA: { imm: 0x09, zp: 0x05, zpx: 0x15, abs: 0x0d, abx: 0x1d, aby: 0x19, izx: 0x01, izy: 0x11 },
  PHA: { imp: 0x48 },
  PHP: { imp: 0x08 },
  PLA: { imp: 0x68 },
  PLP: { imp: 0x28 },
  ROL: { acc: 0x2a, zp: 0x26, zpx: 0x36, abs: 0x2e, abx: 0x3e },
  ROR: { acc: 0x6a, zp: 0x66, zpx: 0x76, abs: 0x6e, abx: 0x7e },
  RTI: { imp: 0x40 },
  RTS: { imp: 0x60 },
  SBC: { imm: 0xe9, zp: 0xe5, zpx: 0xf5, abs: 0xed, abx: 0xfd, aby: 0xf9, izx: 0xe1, izy: 0xf1 },
  SEC: { imp: 0x38 },
  SED: { imp: 0xf8 },
  SEI: { imp: 0x78 },
  STA: { zp: 0x85, zpx: 0x95, abs: 0x8d, abx: 0x9d, aby: 0x99, izx: 0x81, izy: 0x91 },
  STX: { zp: 0x86, zpy: 0x96, abs: 0x8e },
  STY: { zp: 0x84, zpx: 0x94, abs: 0x8c },
  TAX: { imp: 0xaa },
  TAY: { imp: 0xa8 },
  TSX: { imp: 0xba },
  TXA: { imp: 0x8a },
  TXS: { imp: 0x9a },
  TYA: { imp: 0x98 }
}

/** One row of the instruction set. `length` is the whole instruction in bytes (1 to 3). */
export interface OpcodeInfo {
  readonly opcode: number
  readonly mnemonic: string
  readonly mode: Mode
  readonly length: 1 | 2 | 3
}

/** All 151 documented opcodes, sorted by opcode byte. */
export const OPCODES: ReadonlyArray<OpcodeInfo> = Object.entries(TABLE)
  .flatMap(([mnemonic, modes]) =>
    Object.entries(modes).map(([mode, opcode]): OpcodeInfo => ({
      opcode: opcode!,
      mnemonic,
      mode: mode as Mode,
      length: (OPERAND_BYTES[mode as Mode] + 1) as 1 | 2 | 3
    }))
  )
  .sort((a, b) => a.opcode - b.opcode)

/** The 56 documented mnemonics, upper case, alphabetical. */
export const MNEMONICS: ReadonlyArray<string> = Object.keys(TABLE).sort()

const BY_OPCODE: ReadonlyArray<OpcodeInfo | undefined> = (() => {
  const table = new Array<OpcodeInfo | undefined>(256).fill(undefined)
  for (const info of OPCODES) {
    // A duplicate here would mean a typo in TABLE; fail at load rather than mis-assemble.
    if (table[info.opcode] !== undefined) throw new Error(`opcode table: $${info.opcode.toString(16)} twice`)
    table[info.opcode] = info
  }
  return table
})()

/**
 * The modes a mnemonic accepts, mapped to their opcode bytes.
 *
 * @param mnemonic any case (`lda`, `LDA`).
 * @returns `undefined` when the mnemonic is not one of the 56 documented ones.
 */
export const modesOf = (mnemonic: string): Readonly<Partial<Record<Mode, number>>> | undefined =>
  Object.prototype.hasOwnProperty.call(TABLE, mnemonic.toUpperCase()) ? TABLE[mnemonic.toUpperCase()] : undefined

/**
 * The opcode byte for a mnemonic in a mode.
 *
 * @param mnemonic any case.
 * @returns the byte (0 to 255), or `undefined` when the mnemonic is unknown or lacks that mode.
 */
export const opcodeFor = (mnemonic: string, mode: Mode): number | undefined => modesOf(mnemonic)?.[mode]

/**
 * Decode one opcode byte.
 *
 * @param opcode 0 to 255.
 * @returns the documented instruction, or `undefined` for the 105 undocumented NMOS opcodes.
 */
export const decode = (opcode: number): OpcodeInfo | undefined => BY_OPCODE[opcode & 0xff]
