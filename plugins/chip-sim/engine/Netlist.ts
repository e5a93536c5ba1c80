/**
 * The visual6502 NMOS 6502 netlist, read as data.
 *
 * Source of facts: the three files published by the visual6502.org project
 * (`segdefs.js`, `transdefs.js`, `nodenames.js`, https://github.com/trebonian/visual6502).
 * Their licence forbids committing them here, so they are read from a folder at run time and
 * parsed with a small tokenizer: they are JavaScript source, and evaluating them would run
 * whatever a replaced file contains.
 *
 * - `segdefs.js`: rows `[node, '+'|'-', layer, x0, y0, ...]`; a `'+'` marks a node with a
 *   depletion-load pull-up. Only the node number and the pull-up mark are kept.
 * - `transdefs.js`: rows `['tNNN', gate, c1, c2, [bbox], [...]]`; row order is the transistor
 *   index used everywhere in this engine (and in the `trans_on` bitset).
 * - `nodenames.js`: `name: number` pairs (aliases included, `p5`/`Pout5` are `-1` sentinels
 *   for storage the chip lacks). A duplicated key keeps its last value, as a JS object would.
 */
import * as fs from "node:fs"
import * as path from "node:path"

/** The three netlist files a folder must hold. */
export const NETLIST_FILES = ["segdefs.js", "transdefs.js", "nodenames.js"] as const

/**
 * The netlist folder is missing or lacks one of {@link NETLIST_FILES}.
 * `message` names the folder and how to get the files.
 */
export class NetlistMissing extends Error {
  readonly _tag = "NetlistMissing"
  constructor(readonly folder: string, readonly missing: ReadonlyArray<string>) {
    super(
      `6502 netlist not found in ${folder} (missing ${missing.join(", ")}): ` +
        "run `platform chip fetch-netlist` or set CHIP_SIM_NETLIST to a folder holding " +
        NETLIST_FILES.join(", ")
    )
    this.name = "NetlistMissing"
  }
}

/** A netlist file is present but does not parse as the visual6502 layout. */
export class NetlistInvalid extends Error {
  readonly _tag = "NetlistInvalid"
  constructor(readonly file: string, detail: string) {
    super(`6502 netlist file ${file} is not in the visual6502 layout: ${detail}`)
    this.name = "NetlistInvalid"
  }
}

/** A parsed netlist. Node ids are 0..nodeCount-1 (some ids are unused by the die). */
export interface Netlist {
  /** Node slots: highest node id + 1 (1725 for the 6502). */
  readonly nodeCount: number
  /** Transistors, in `transdefs.js` row order (3510 for the 6502). */
  readonly transistorCount: number
  /** 1 where `segdefs.js` marks the node with `'+'`. */
  readonly pullup: Uint8Array
  /** 1 where the node id appears in `segdefs.js` or `transdefs.js`. */
  readonly used: Uint8Array
  /** Transistor names (`t0`...) by index. */
  readonly transistorNames: ReadonlyArray<string>
  readonly gate: Int32Array
  readonly c1: Int32Array
  readonly c2: Int32Array
  /** Every resolving name (aliases included) to its node id; sentinels (-1) left out. */
  readonly names: ReadonlyMap<string, number>
  /** Raw `nodenames.js` entries in file order, duplicates and sentinels included. */
  readonly rawNames: ReadonlyArray<readonly [string, number]>
  /** Ground and power rails (`vss`, `vcc`). */
  readonly vss: number
  readonly vcc: number
}

/** Removes `//` and `/* *\/` comments outside string literals. */
const stripComments = (src: string): string => {
  // Kept text is copied in runs between comments (one slice per run, not one string per character).
  const kept: Array<string> = []
  let from = 0
  let i = 0
  while (i < src.length) {
    const ch = src.charCodeAt(i)
    if (ch === 0x22 || ch === 0x27) {
      // a quoted string, escapes included, is kept whole (unterminated: to the end)
      i++
      while (i < src.length) {
        const c = src.charCodeAt(i)
        if (c === 0x5c) {
          i += 2
          continue
        }
        i++
        if (c === ch) break
      }
      continue
    }
    if (ch === 0x2f && src.charCodeAt(i + 1) === 0x2f) {
      kept.push(src.slice(from, i))
      while (i < src.length && src.charCodeAt(i) !== 0x0a) i++
      from = i
      continue
    }
    if (ch === 0x2f && src.charCodeAt(i + 1) === 0x2a) {
      kept.push(src.slice(from, i))
      const end = src.indexOf("*/", i + 2)
      i = end < 0 ? src.length : end + 2
      from = i
      continue
    }
    i++
  }
  kept.push(src.slice(from, Math.min(i, src.length)))
  return kept.join("")
}

const readFiles = (folder: string): Record<(typeof NETLIST_FILES)[number], string> => {
  const missing = NETLIST_FILES.filter((f) => !fs.existsSync(path.join(folder, f)))
  if (missing.length > 0) throw new NetlistMissing(folder, missing)
  const read = (f: string) => fs.readFileSync(path.join(folder, f), "utf8")
  return { "segdefs.js": read("segdefs.js"), "transdefs.js": read("transdefs.js"), "nodenames.js": read("nodenames.js") }
}

/** Parses `nodenames.js` text into raw `[name, id]` entries in file order. */
export const parseNodeNames = (text: string): Array<[string, number]> => {
  const body = stripComments(text)
  const open = body.indexOf("{")
  const close = body.lastIndexOf("}")
  if (open < 0 || close < open) throw new NetlistInvalid("nodenames.js", "no object literal")
  const inner = body.slice(open + 1, close)
  const entry = /\s*(?:"([^"]*)"|'([^']*)'|([A-Za-z_$][\w$]*))\s*:\s*(-?\d+)\s*(?:,|$)/y
  const out: Array<[string, number]> = []
  entry.lastIndex = 0
  while (entry.lastIndex < inner.length) {
    if (/^\s*$/.test(inner.slice(entry.lastIndex))) break
    const at = entry.lastIndex
    const m = entry.exec(inner)
    if (m === null) throw new NetlistInvalid("nodenames.js", `unexpected text near "${inner.slice(at, at + 40).trim()}"`)
    out.push([m[1] ?? m[2] ?? m[3]!, Number(m[4])])
  }
  return out
}

/**
 * Reads and parses the three netlist files from `folder`.
 * @throws NetlistMissing when the folder or a file is absent; NetlistInvalid when a file does
 *   not have the visual6502 layout.
 */
export const loadNetlist = (folder: string): Netlist => {
  const files = readFiles(folder)

  const segs = stripComments(files["segdefs.js"])
  const segRow = /\[\s*(\d+)\s*,\s*'([+-])'/g
  const segNodes: Array<[number, boolean]> = []
  for (let m = segRow.exec(segs); m !== null; m = segRow.exec(segs)) segNodes.push([Number(m[1]), m[2] === "+"])
  if (segNodes.length === 0) throw new NetlistInvalid("segdefs.js", "no segment rows")

  const trans = stripComments(files["transdefs.js"])
  const transRow = /\[\s*'([^']*)'\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,/g
  const rows: Array<[string, number, number, number]> = []
  for (let m = transRow.exec(trans); m !== null; m = transRow.exec(trans)) {
    rows.push([m[1]!, Number(m[2]), Number(m[3]), Number(m[4])])
  }
  if (rows.length === 0) throw new NetlistInvalid("transdefs.js", "no transistor rows")

  const rawNames = parseNodeNames(files["nodenames.js"])
  const names = new Map<string, number>()
  for (const [k, v] of rawNames) names.set(k, v)
  for (const [k, v] of [...names]) if (v < 0) names.delete(k)

  let maxId = 0
  for (const [n] of segNodes) maxId = Math.max(maxId, n)
  for (const [, g, a, b] of rows) maxId = Math.max(maxId, g, a, b)
  const nodeCount = maxId + 1

  const pullup = new Uint8Array(nodeCount)
  const used = new Uint8Array(nodeCount)
  for (const [n, up] of segNodes) {
    // visual6502 takes the mark from a node's first segment; the file never disagrees with itself.
    if (used[n] === 0 && up) pullup[n] = 1
    used[n] = 1
  }
  const gate = new Int32Array(rows.length)
  const c1 = new Int32Array(rows.length)
  const c2 = new Int32Array(rows.length)
  rows.forEach(([, g, a, b], i) => {
    gate[i] = g
    c1[i] = a
    c2[i] = b
    used[g] = 1
    used[a] = 1
    used[b] = 1
  })
  const vss = names.get("vss")
  const vcc = names.get("vcc")
  if (vss === undefined || vcc === undefined) throw new NetlistInvalid("nodenames.js", "no vss/vcc rails")
  for (const [k, v] of names) {
    if (v >= nodeCount) throw new NetlistInvalid("nodenames.js", `${k} names node ${v}, past the last node`)
  }
  return {
    nodeCount,
    transistorCount: rows.length,
    pullup,
    used,
    transistorNames: rows.map((r) => r[0]),
    gate,
    c1,
    c2,
    names,
    rawNames,
    vss,
    vcc
  }
}

