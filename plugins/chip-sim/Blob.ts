/**
 * Model-boundary checks of ChipState bitsets (422 at the request Schema): exact length, hex
 * digits only, and no set padding bit past the last node/transistor. The engine repeats the
 * check when it decodes (400), so a blob reaching it another way is refused too.
 */
import { ENCODING_STATEMENT, validateBlob } from "./engine/Encoding.ts"

/** Exact hex lengths: 1725 nodes and 3510 transistors, padded to whole hex digits. */
export const BLOB_HEX_LENGTH = { value: 432, pullup: 432, pulldown: 432, trans_on: 878 } as const

/** The problem with a blob as a sentence, or undefined when it is well-formed. */
export const blobProblem = (hex: string, kind: keyof typeof BLOB_HEX_LENGTH): string | undefined => validateBlob(hex, kind)

export { ENCODING_STATEMENT }
