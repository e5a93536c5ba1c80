/**
 * SparseMemory (spec: chip-simulation.md, SparseMemory) <-> a flat 64 KiB image.
 *
 * `{fill: "00", pages: {"02": "<512 hex chars>"}}`: `fill` is the byte of every address not in
 * a listed page; page keys are the page number in hex. Encoding is canonical: pages equal to
 * `fill` throughout are dropped, keys and bytes are lower-case two-digit hex, keys sorted.
 */
import { EngineStateError } from "./Encoding.ts"

/** JSON form of a 64 KiB memory. */
export interface SparseMemory {
  readonly fill?: string
  readonly pages?: Readonly<Record<string, string>>
}

/** A malformed SparseMemory (HTTP 400 at the engine; the request schema should refuse first). */
export class MemoryFormatError extends EngineStateError {
  constructor(message: string) {
    super(message)
    this.name = "MemoryFormatError"
  }
}

const BYTE_RE = /^[0-9a-fA-F]{2}$/
const PAGE_RE = /^[0-9a-fA-F]{512}$/

/** The fill byte of a SparseMemory (default 0). @throws MemoryFormatError */
export const memoryFill = (m: SparseMemory | undefined): number => {
  const fill = m?.fill ?? "00"
  if (typeof fill !== "string" || !BYTE_RE.test(fill)) throw new MemoryFormatError(`memory.fill: "${String(fill)}" is not a hex byte`)
  return parseInt(fill, 16)
}

/**
 * Expands a SparseMemory into a fresh Uint8Array(65536).
 * @throws MemoryFormatError on a bad fill, page key or page body.
 */
export const decodeMemory = (m: SparseMemory | undefined): Uint8Array => {
  const mem = new Uint8Array(65536).fill(memoryFill(m))
  for (const [key, body] of Object.entries(m?.pages ?? {})) {
    if (!BYTE_RE.test(key)) throw new MemoryFormatError(`memory.pages: key "${key}" is not a page number 00..ff`)
    if (typeof body !== "string" || !PAGE_RE.test(body)) {
      throw new MemoryFormatError(`memory.pages.${key}: expected 512 hex chars`)
    }
    const base = parseInt(key, 16) << 8
    mem.set(Buffer.from(body, "hex"), base)
  }
  return mem
}

/** Canonical SparseMemory of a 64 KiB image, pages equal to `fill` dropped. Pure. */
export const encodeMemory = (mem: Uint8Array, fill = 0): { fill: string; pages: Record<string, string> } => {
  const pages: Record<string, string> = {}
  for (let page = 0; page < 256; page++) {
    const base = page << 8
    let differs = false
    for (let i = 0; i < 256; i++) {
      if (mem[base + i] !== fill) {
        differs = true
        break
      }
    }
    if (differs) pages[page.toString(16).padStart(2, "0")] = Buffer.from(mem.subarray(base, base + 256)).toString("hex")
  }
  return { fill: fill.toString(16).padStart(2, "0"), pages }
}
