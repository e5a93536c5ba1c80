/**
 * Observation: one reading of the chip, every field read from node levels.
 *
 * Sources of facts (visual6502 `nodenames.js`, the visual6502 expert-mode display and the
 * perfect6502 readers, which the golden traces follow):
 * - registers `a x y s pcl pch` from their storage nodes; `ir` is the complement of
 *   `notir0..7`; `p` from the status outputs `Pout0..7` (perfect6502's `readP`; `p2` itself
 *   lags by a half-cycle when an interrupt sets I), bit 5 (no storage) forced to 1;
 * - `phase`: `phi1` while the on-die clock node `cp1` is high, else `phi2`;
 * - `tstates`: active-low timing nodes `clock1`(T0) `clock2`(T1) `t2..t5`, joined with `+`;
 * - `hidden`: node 862 high -> `T1`, else `VEC0` high -> `VEC0`, else `VEC1` high -> `T6`;
 * - `store_data`: node 440 high -> `SD1`, else node 1258 high -> `SD2`;
 * - internal bytes: `alu` = ~`notalu`, `idl` = ~`notidl`, `dor` = ~`notdor` (storage nodes are
 *   inverted), `alua alub sb idb adl adh abl abh pclp pchp` straight.
 * Hex fields are lower-case and zero-padded: 4 digits for `addr` and `pc`, 2 for bytes.
 */
import type { Netlist } from "./Netlist.ts"
import type { NodeEntry } from "./Nodes.ts"

/** One reading of the chip. Watched node names are added as extra members (0/1). */
export interface Observation {
  half_cycle: number
  cycle: number
  clk0: number
  phase: "phi1" | "phi2"
  addr: string
  data: string
  rw: number
  sync: number
  pc: string
  a: string
  x: string
  y: string
  s: string
  p: string
  ir: string
  flags: string
  tstates: string
  hidden: "" | "T1" | "VEC0" | "T6"
  store_data: "" | "SD1" | "SD2"
  alu: string
  alua: string
  alub: string
  sb: string
  idb: string
  idl: string
  dor: string
  adl: string
  adh: string
  abl: string
  abh: string
  pclp: string
  pchp: string
  [watched: string]: string | number
}

/** Columns of `trace_rows.rows`, before the watched names (which follow in request order). */
export const TRACE_COLUMNS = ["hc", "clk0", "addr", "data", "rw", "sync", "pc", "a", "x", "y", "s", "p", "ir"] as const

/** Statement of the row layout, for the OpenAPI document. */
export const TRACE_ROWS_STATEMENT =
  "trace_rows = {columns, rows}: columns are hc, clk0, addr, data, rw, sync, pc, a, x, y, s, p, ir, then each watched " +
  "node name in request order; each row holds one half-cycle: hc, clk0, rw, sync and watched nodes as numbers (0/1, hc an " +
  "integer), the others as lower-case hex strings (addr and pc 4 digits, bytes 2; p with bit 5 forced to 1)."

const HEX2 = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"))
const hex4 = (v: number) => HEX2[v >> 8]! + HEX2[v & 255]!
const FLAG_LETTERS = ["c", "z", "i", "d", "b", "-", "v", "n"]

/** Reads observations from a node-level array; built once per netlist. */
export class Observer {
  private readonly ids: Record<string, Int32Array>
  private readonly cp1: number
  private readonly clk0: number
  private readonly rw: number
  private readonly sync: number
  private readonly timing: Int32Array
  private readonly t1Hidden = 862
  private readonly vec0: number
  private readonly vec1: number
  private readonly sd1 = 440
  private readonly sd2 = 1258

  constructor(netlist: Netlist) {
    const id = (name: string) => {
      const v = netlist.names.get(name)
      if (v === undefined) throw new Error(`netlist has no node named ${name}`)
      return v
    }
    const bits = (prefix: string, n = 8) =>
      Int32Array.from({ length: n }, (_, i) => (prefix === "Pout" && i === 5 ? -1 : id(`${prefix}${i}`)))
    this.ids = {
      ab: bits("ab", 16), db: bits("db"), pcl: bits("pcl"), pch: bits("pch"), a: bits("a"), x: bits("x"),
      y: bits("y"), s: bits("s"), p: bits("Pout"), notir: bits("notir"), notalu: bits("notalu"),
      alua: bits("alua"), alub: bits("alub"), sb: bits("sb"), idb: bits("idb"), notidl: bits("notidl"),
      notdor: bits("notdor"), adl: bits("adl"), adh: bits("adh"), abl: bits("abl"), abh: bits("abh"),
      pclp: bits("pclp"), pchp: bits("pchp")
    }
    this.cp1 = id("cp1")
    this.clk0 = id("clk0")
    this.rw = id("rw")
    this.sync = id("sync")
    this.timing = Int32Array.from(["clock1", "clock2", "t2", "t3", "t4", "t5"].map(id))
    this.vec0 = id("VEC0")
    this.vec1 = id("VEC1")
  }

  private read(v: Uint8Array, key: string): number {
    const ids = this.ids[key]!
    let out = 0
    for (let i = 0; i < ids.length; i++) {
      const n = ids[i]!
      if (n >= 0 && v[n]) out |= 1 << i
    }
    return out
  }

  /** The processor status byte as read into `p` (bit 5 forced to 1). */
  readP(v: Uint8Array): number {
    return this.read(v, "p") | 0x20
  }

  /** The address bus as a number. */
  readAddr(v: Uint8Array): number {
    return this.read(v, "ab")
  }

  /** Full observation of node levels `v` at `halfCycle`, plus `watch` nodes. */
  observe(v: Uint8Array, halfCycle: number, watch: ReadonlyArray<NodeEntry> = []): Observation {
    const p = this.readP(v)
    let flags = ""
    for (let b = 7; b >= 0; b--) {
      const ch = FLAG_LETTERS[b]!
      flags += b === 5 ? "-" : (p >> b) & 1 ? ch.toUpperCase() : ch
    }
    const t: Array<string> = []
    for (let i = 0; i < 6; i++) if (!v[this.timing[i]!]) t.push(`T${i}`)
    const obs: Observation = {
      half_cycle: halfCycle,
      cycle: Math.floor(halfCycle / 2),
      clk0: v[this.clk0]!,
      phase: v[this.cp1] ? "phi1" : "phi2",
      addr: hex4(this.read(v, "ab")),
      data: HEX2[this.read(v, "db")]!,
      rw: v[this.rw]!,
      sync: v[this.sync]!,
      pc: hex4((this.read(v, "pch") << 8) | this.read(v, "pcl")),
      a: HEX2[this.read(v, "a")]!,
      x: HEX2[this.read(v, "x")]!,
      y: HEX2[this.read(v, "y")]!,
      s: HEX2[this.read(v, "s")]!,
      p: HEX2[p]!,
      ir: HEX2[this.read(v, "notir") ^ 0xff]!,
      flags,
      tstates: t.join("+"),
      hidden: v[this.t1Hidden] ? "T1" : v[this.vec0] ? "VEC0" : v[this.vec1] ? "T6" : "",
      store_data: v[this.sd1] ? "SD1" : v[this.sd2] ? "SD2" : "",
      alu: HEX2[this.read(v, "notalu") ^ 0xff]!,
      alua: HEX2[this.read(v, "alua")]!,
      alub: HEX2[this.read(v, "alub")]!,
      sb: HEX2[this.read(v, "sb")]!,
      idb: HEX2[this.read(v, "idb")]!,
      idl: HEX2[this.read(v, "notidl") ^ 0xff]!,
      dor: HEX2[this.read(v, "notdor") ^ 0xff]!,
      adl: HEX2[this.read(v, "adl")]!,
      adh: HEX2[this.read(v, "adh")]!,
      abl: HEX2[this.read(v, "abl")]!,
      abh: HEX2[this.read(v, "abh")]!,
      pclp: HEX2[this.read(v, "pclp")]!,
      pchp: HEX2[this.read(v, "pchp")]!
    }
    for (const w of watch) obs[w.name] = v[w.id]!
    return obs
  }

  /** One `trace_rows` row (layout {@link TRACE_COLUMNS}, then `watch`). */
  row(v: Uint8Array, halfCycle: number, watch: ReadonlyArray<NodeEntry> = []): Array<number | string> {
    const r: Array<number | string> = [
      halfCycle,
      v[this.clk0]!,
      hex4(this.read(v, "ab")),
      HEX2[this.read(v, "db")]!,
      v[this.rw]!,
      v[this.sync]!,
      hex4((this.read(v, "pch") << 8) | this.read(v, "pcl")),
      HEX2[this.read(v, "a")]!,
      HEX2[this.read(v, "x")]!,
      HEX2[this.read(v, "y")]!,
      HEX2[this.read(v, "s")]!,
      HEX2[this.readP(v)]!,
      HEX2[this.read(v, "notir") ^ 0xff]!
    ]
    for (const w of watch) r.push(v[w.id]!)
    return r
  }
}
