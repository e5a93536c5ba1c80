/**
 * One-instruction NMOS 6502 disassembler, for `last_fetch` display and CLI tables.
 *
 * @module
 */

import { decode, type Mode } from "./Opcodes.ts"

/** One decoded instruction. */
export interface Disassembly {
  /**
   * Conventional upper-case syntax: `LDA #$37`, `STA $0300,X`, `LDA ($50),Y`, `JMP ($02FF)`,
   * `ASL A`, `BNE $0203` (branch operands shown as their target address). An undocumented
   * opcode is shown as data, `.byte $02`. Operand bytes beyond the end of `bytes` show as `??`.
   */
  readonly text: string
  /** Bytes the instruction occupies (1 to 3; 1 for an undocumented opcode). */
  readonly length: 1 | 2 | 3
}

const h2 = (v: number) => v.toString(16).toUpperCase().padStart(2, "0")
const h4 = (v: number) => v.toString(16).toUpperCase().padStart(4, "0")

/**
 * Disassemble the instruction whose opcode is `bytes[0]`.
 *
 * @param bytes the instruction's bytes, opcode first; may be shorter than the instruction
 *   (for example just `last_fetch.opcode`), in which case missing operand bytes show as `??`.
 * @param addr the address of the opcode byte (0 to 65535); only branch targets depend on it,
 *   and they wrap at $FFFF as the program counter does.
 * @returns text and length; never throws for any byte values.
 */
export const disassemble = (bytes: ArrayLike<number>, addr: number): Disassembly => {
  if (bytes.length === 0) return { text: "???", length: 1 }
  const opcode = bytes[0]! & 0xff
  const info = decode(opcode)
  if (info === undefined) return { text: `.byte $${h2(opcode)}`, length: 1 }
  const b1 = bytes.length > 1 ? bytes[1]! & 0xff : undefined
  const b2 = bytes.length > 2 ? bytes[2]! & 0xff : undefined
  const zp = b1 === undefined ? "$??" : `$${h2(b1)}`
  const abs = b1 === undefined || b2 === undefined
    ? `$${b2 === undefined ? "??" : h2(b2)}${b1 === undefined ? "??" : h2(b1)}`
    : `$${h4(b1 | (b2 << 8))}`
  const operand: Record<Mode, () => string> = {
    imp: () => "",
    acc: () => "A",
    imm: () => `#${zp}`,
    zp: () => zp,
    zpx: () => `${zp},X`,
    zpy: () => `${zp},Y`,
    abs: () => abs,
    abx: () => `${abs},X`,
    aby: () => `${abs},Y`,
    ind: () => `(${abs})`,
    izx: () => `(${zp},X)`,
    izy: () => `(${zp}),Y`,
    // The offset is signed and counts from the byte after the two-byte branch.
    rel: () => (b1 === undefined ? "$????" : `$${h4((addr + 2 + ((b1 << 24) >> 24)) & 0xffff)}`)
  }
  const o = operand[info.mode]()
  return { text: o === "" ? info.mnemonic : `${info.mnemonic} ${o}`, length: info.length }
}
