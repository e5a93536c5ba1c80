/**
 * Node names accepted by `watch`, and their grouping for `/v1/nodes`.
 *
 * Every name in `nodenames.js` that resolves to a node (aliases included, 832 for the
 * visual6502 file) is watchable; the `p5`/`Pout5` sentinels (`-1`) name storage the chip lacks
 * and are refused like any unknown name.
 *
 * Grouping rule: each name goes to the first group whose test it passes, in this order:
 * - `rails`: `vcc`, `vss`;
 * - `pins`: the bonded pads (`res rw db0-7 ab0-15 sync so clk0 clk1out clk2out rdy nmi irq`);
 * - `registers`: architectural and program-counter storage: `a x y s p Pout ir pcl pch pclp
 *   pchp` bits, their inverted forms (`notir notx noty nots`, `#pclp`/`~pclp`, `#pchp`/`~pchp`);
 * - `buses`: internal buses and latches: `sb dasb idb adl adh idl notidl dor notdor alu notalu
 *   alua alub abl abh #ABL ~ABL #ABH ~ABH` bits;
 * - `datapath`: the datapath control lines, names starting `dpc` (49 names);
 * - `decode`: PLA outputs and derived decode terms (names containing `op-`), predecode
 *   (`pd*`, `PD-*`, `TWOCYCLE`, `ONEBYTE`, `irline3`);
 * - `timing`: the clock generator and timing chain (`cp1 cclk clock1 clock2 t2-t5 fetch
 *   clearIR`, `pipeT*`, `pipe#T0`, `VEC0 VEC1 #VEC`, `notRdy0*`);
 * - `other`: the rest.
 */
import type { Netlist } from "./Netlist.ts"

/** A watch name that `nodenames.js` does not resolve (HTTP 400). */
export class UnknownWatchNode extends Error {
  readonly _tag = "UnknownWatchNode"
  readonly status = 400
  constructor(readonly names: ReadonlyArray<string>) {
    super(`unknown node name${names.length > 1 ? "s" : ""} in watch: ${names.join(", ")} (see GET /v1/nodes)`)
    this.name = "UnknownWatchNode"
  }
}

/** Group names of `/v1/nodes`, in assignment order. */
export const NODE_GROUPS = ["rails", "pins", "registers", "buses", "datapath", "decode", "timing", "other"] as const
export type NodeGroup = (typeof NODE_GROUPS)[number]

/** One watchable name. */
export interface NodeEntry {
  readonly name: string
  readonly id: number
}

/** `/v1/nodes` body: every watchable name with its node id, grouped, names sorted within a group. */
export type NodeCatalog = Record<NodeGroup, ReadonlyArray<NodeEntry>>

const PIN_NAMES = new Set([
  "res", "rw", "sync", "so", "clk0", "clk1out", "clk2out", "rdy", "nmi", "irq",
  ...Array.from({ length: 8 }, (_, i) => `db${i}`),
  ...Array.from({ length: 16 }, (_, i) => `ab${i}`)
])

const TESTS: ReadonlyArray<readonly [NodeGroup, (name: string) => boolean]> = [
  ["rails", (n) => n === "vcc" || n === "vss"],
  ["pins", (n) => PIN_NAMES.has(n)],
  ["registers", (n) => /^(a|x|y|s|p|Pout|ir|notir|notx|noty|nots|pcl|pch|pclp|pchp|[#~]pclp|[#~]pchp)[0-7]$/.test(n)],
  ["buses", (n) => /^(sb|dasb|idb|adl|adh|idl|notidl|dor|notdor|alu|notalu|alua|alub|abl|abh|[#~]ABL|[#~]ABH)[0-7]$/.test(n)],
  ["datapath", (n) => n.startsWith("dpc")],
  ["decode", (n) => n.includes("op-") || /^(pd[0-7]|PD-|[#~]TWOCYCLE|ONEBYTE$|irline3$)/.test(n)],
  ["timing", (n) => /^(cp1|cclk|clock1|clock2|t[2-5]|fetch|clearIR|VEC0|VEC1|[#~]VEC)$/.test(n) || /^(pipeT|pipe[#~]T0|[#~]?notRdy0)/.test(n)],
  ["other", () => true]
]

/** The group a watchable name belongs to (rule in the module comment). */
export const groupOf = (name: string): NodeGroup => TESTS.find(([, test]) => test(name))![0]

/** Builds the `/v1/nodes` catalog of a netlist. Pure. */
export const nodeCatalog = (netlist: Netlist): NodeCatalog => {
  const out = Object.fromEntries(NODE_GROUPS.map((g) => [g, [] as Array<NodeEntry>])) as Record<NodeGroup, Array<NodeEntry>>
  for (const [name, id] of netlist.names) out[groupOf(name)].push({ name, id })
  for (const g of NODE_GROUPS) out[g].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  return out
}

/**
 * Resolves watch names to node ids, keeping request order and dropping repeats.
 * @throws UnknownWatchNode listing every name that does not resolve.
 */
export const resolveWatch = (netlist: Netlist, names: ReadonlyArray<string> | undefined): Array<NodeEntry> => {
  if (names === undefined) return []
  const unknown: Array<string> = []
  const seen = new Set<string>()
  const out: Array<NodeEntry> = []
  for (const name of names) {
    const id = typeof name === "string" ? netlist.names.get(name) : undefined
    if (id === undefined) {
      unknown.push(String(name))
      continue
    }
    if (seen.has(name)) continue
    seen.add(name)
    out.push({ name, id })
  }
  if (unknown.length > 0) throw new UnknownWatchNode(unknown)
  return out
}
