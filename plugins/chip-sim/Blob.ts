/**
 * Model-boundary checks of ChipState bitsets (422 at the request Schema): exact length, hex
 * digits only, and no set padding bit past the last node/transistor. The engine repeats the
 * check when it decodes (400), so a blob reaching it another way is refused too.
 */
import { BLOB_HEX_LENGTH as ENGINE_LENGTH, blobProblem as engineProblem, type BlobKind } from "./engine/Encoding.ts"

/** The four ChipState fields and the engine blob kind each one is. */
const KIND: Record<"value" | "pullup" | "pulldown" | "trans_on", BlobKind> = {
  value: "nodes",
  pullup: "nodes",
  pulldown: "nodes",
  trans_on: "transistors"
}

/** Exact hex lengths per ChipState field (432, 432, 432, 878). */
export const BLOB_HEX_LENGTH = {
  value: ENGINE_LENGTH.nodes,
  pullup: ENGINE_LENGTH.nodes,
  pulldown: ENGINE_LENGTH.nodes,
  trans_on: ENGINE_LENGTH.transistors
} as const

/** The problem with a blob as a sentence, or undefined when it is well-formed. */
export const blobProblem = (hex: string, field: keyof typeof KIND): string | undefined => engineProblem(hex, KIND[field])
