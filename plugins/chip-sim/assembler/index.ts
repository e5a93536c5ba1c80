/**
 * The chip-sim plugin's 6502 assembler: source text to a memory image (`assemble`), one
 * instruction back to text (`disassemble`), and the NMOS opcode table they share.
 *
 * Flat exports for the common calls; the modules as namespaces for everything else.
 *
 * @module
 */

import * as Effect from "effect/Effect"
import { AssembleError } from "./AssembleError.ts"
import { assemble, type AssembleResult } from "./Assembler.ts"

export { AssembleError } from "./AssembleError.ts"
export {
  assemble,
  DEFAULT_ORG,
  toAssembleResponse,
  type AssembleResponse,
  type AssembleResult,
  type ListingLine
} from "./Assembler.ts"
export { disassemble, type Disassembly } from "./Disassembler.ts"
export { decode, MNEMONICS, type Mode, OPCODES, opcodeFor, type OpcodeInfo } from "./Opcodes.ts"

export * as Assembler from "./Assembler.ts"
export * as Disassembler from "./Disassembler.ts"
export * as Expression from "./Expression.ts"
export * as Opcodes from "./Opcodes.ts"

/**
 * `assemble` as an Effect: a fault in the source is an `AssembleError` in the error channel;
 * anything else thrown is a defect.
 */
export const assembleEffect = (source: string, org?: number): Effect.Effect<AssembleResult, AssembleError> =>
  Effect.suspend(() => {
    try {
      return Effect.succeed(assemble(source, org))
    } catch (e) {
      if (e instanceof AssembleError) return Effect.fail(e)
      throw e
    }
  })
