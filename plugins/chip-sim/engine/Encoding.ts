/**
 * Wire encoding of the chip's bitsets (ChipState `value`, `pullup`, `pulldown`, `trans_on`).
 *
 * Layout (stated to clients through {@link ENCODING_STATEMENT} in `/v1/meta`): the bitset is
 * cut into bytes, byte k holding items 8k..8k+7 with item 8k+j in bit j (least significant bit
 * first); the bytes are written in increasing k as two lower-case hex digits each. Node sets
 * have 1725 items padded to 1728 bits (432 hex chars); the transistor set has 3510 items, in
 * `transdefs.js` row order, padded to 3512 bits (878 hex chars). Padding bits are zero.
 * Decoding accepts upper- or lower-case hex and refuses anything else.
 */

/** The two kinds of blob: node-indexed (`value`, `pullup`, `pulldown`) and transistor-indexed. */
export type BlobKind = "nodes" | "transistors"

/** Items in each kind of bitset (visual6502 6502 netlist). */
export const NODE_BITS = 1725
export const TRANSISTOR_BITS = 3510

/** Hex length of each kind of blob. */
export const BLOB_HEX_LENGTH: Record<BlobKind, number> = {
  nodes: Math.ceil(NODE_BITS / 8) * 2,
  transistors: Math.ceil(TRANSISTOR_BITS / 8) * 2
}

/** Human-readable statement of the encoding, served as `encoding` by `/v1/meta`. */
export const ENCODING_STATEMENT =
  "ChipState bitsets are lower-case hex of little-endian bytes, least significant bit first: " +
  "item i is bit (i & 7) of byte (i >> 3), byte k is hex chars 2k..2k+1. " +
  "value, pullup and pulldown index nodes by visual6502 node number (1725 nodes + 3 zero padding bits = 432 hex chars); " +
  "trans_on indexes transistors in transdefs.js row order (t0..t3509; 3510 + 2 zero padding bits = 878 hex chars). " +
  "A blob of the wrong length, with a non-hex character or a set padding bit is refused."

/** A ChipState blob the engine cannot take (HTTP 400). */
export class EngineStateError extends Error {
  readonly _tag = "EngineStateError"
  readonly status = 400
  constructor(message: string) {
    super(message)
    this.name = "EngineStateError"
  }
}

const HEX_RE: Record<BlobKind, RegExp> = {
  nodes: new RegExp(`^[0-9a-fA-F]{${BLOB_HEX_LENGTH.nodes}}$`),
  transistors: new RegExp(`^[0-9a-fA-F]{${BLOB_HEX_LENGTH.transistors}}$`)
}

/** Regular expression a blob of `kind` must match (length and alphabet; padding checked apart). */
export const blobPattern = (kind: BlobKind): RegExp => HEX_RE[kind]

const itemCount = (kind: BlobKind) => (kind === "nodes" ? NODE_BITS : TRANSISTOR_BITS)

/** Why `hex` is not a valid blob of `kind`, or undefined when it is. Pure. */
export const blobProblem = (hex: unknown, kind: BlobKind): string | undefined => {
  if (typeof hex !== "string") return "not a string"
  const len = BLOB_HEX_LENGTH[kind]
  if (hex.length !== len) return `length ${hex.length}, expected ${len} hex chars`
  if (!HEX_RE[kind].test(hex)) return "contains a non-hex character"
  const items = itemCount(kind)
  const lastByte = parseInt(hex.slice(len - 2), 16)
  const usedBits = items - (len / 2 - 1) * 8
  if (lastByte >> usedBits !== 0) return `padding bits past item ${items - 1} are set`
  return undefined
}

/** True when `hex` is a well-formed blob of `kind` (length, hex alphabet, zero padding). */
export const isValidBlob = (hex: unknown, kind: BlobKind): hex is string => blobProblem(hex, kind) === undefined

/**
 * Decodes a blob into one byte (0/1) per item.
 * @throws EngineStateError naming `field` when the blob is malformed.
 */
export const decodeBits = (hex: string, kind: BlobKind, field: string = kind): Uint8Array => {
  const problem = blobProblem(hex, kind)
  if (problem !== undefined) throw new EngineStateError(`state.${field}: ${problem}`)
  const items = itemCount(kind)
  const out = new Uint8Array(items)
  for (let k = 0; k * 8 < items; k++) {
    const byte = parseInt(hex.substr(k * 2, 2), 16)
    const base = k * 8
    for (let j = 0; j < 8 && base + j < items; j++) out[base + j] = (byte >> j) & 1
  }
  return out
}

const HEX2 = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"))

/** Encodes one byte per item (non-zero = set) as a blob of `kind`. Pure. */
export const encodeBits = (bits: Uint8Array, kind: BlobKind): string => {
  const items = itemCount(kind)
  const bytes = BLOB_HEX_LENGTH[kind] / 2
  let out = ""
  for (let k = 0; k < bytes; k++) {
    let byte = 0
    const base = k * 8
    for (let j = 0; j < 8 && base + j < items; j++) if (bits[base + j]) byte |= 1 << j
    out += HEX2[byte]
  }
  return out
}
