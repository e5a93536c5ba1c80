/**
 * The die atlas, derived from the visual6502 netlist (spec: chip-simulation.md, "Atlas
 * vocabulary"). Pure: `deriveAtlas(netlist, centroids)` computes everything once; the rule for
 * each layer (folding, relations, roles, containers, partition, bundles, blocks) is written in
 * the plugin README ("Atlas") and step by step below.
 */
import type { Netlist } from "../engine/Netlist.ts"

/** Node roles: `decode` = decode term (PLA output), `control` = datapath control line. */
export type Role = "signal" | "decode" | "control"
export const ROLES: ReadonlyArray<Role> = ["signal", "decode", "control"]

/**
 * Container kinds in rank order: a node in several containers is owned (partition layer) by the
 * one whose kind comes first here (then the smaller container, then the key; overlays, see
 * OVERLAY_SEEDS, rank after all others).
 */
export const KINDS = [
  "alu", "flags", "regs", "alat", "dbus", "irp", "sbus", "sdp", "rdy", "pcr", "pipe", "sync",
  "clock", "intr", "branch", "decimal", "incr", "chain", "bus", "stage", "pins", "rest", "logic"
] as const
export type Kind = (typeof KINDS)[number]

/** Twelve functional blocks plus static logic and a residue; each kind is filed in one. */
export const BLOCKS: ReadonlyArray<{ readonly id: number; readonly name: string; readonly kinds: ReadonlyArray<Kind> }> = [
  { id: 1, name: "alu", kinds: ["alu", "decimal"] },
  { id: 2, name: "status", kinds: ["flags"] },
  { id: 3, name: "registers", kinds: ["regs"] },
  { id: 4, name: "program-counter", kinds: ["pcr", "incr"] },
  { id: 5, name: "address-latch", kinds: ["alat"] },
  { id: 6, name: "data-latch", kinds: ["dbus"] },
  { id: 7, name: "special-bus", kinds: ["sbus", "sdp"] },
  { id: 8, name: "instruction", kinds: ["irp"] },
  { id: 9, name: "timing", kinds: ["chain", "pipe", "stage", "sync"] },
  { id: 10, name: "clock", kinds: ["clock"] },
  { id: 11, name: "interrupts", kinds: ["intr", "rdy", "branch"] },
  { id: 12, name: "pads", kinds: ["bus", "pins"] },
  { id: 13, name: "static-logic", kinds: ["logic"] },
  { id: 14, name: "residue", kinds: ["rest"] }
]

/** One node of the die (rails included; stack-internal nodes carry `folded_into`). */
export interface AtlasNode {
  readonly id: number
  /** Every name resolving to the node, `nodenames.js` order. */
  readonly names: ReadonlyArray<string>
  readonly pullup: boolean
  /** Mean of the node's polygon vertices in `segdefs.js` (die units), null when it has none. */
  readonly centroid: readonly [number, number] | null
  readonly role: Role
  readonly rail: boolean
  /** Node id of the gate output a stack-internal node is folded into (not in the partition). */
  readonly folded_into: number | null
  /** Owning partition group key (null for rails and folded nodes). */
  group: string | null
  /** Every container holding the node (derivation sets), rank order. */
  containers: Array<string>
  block: string | null
  /** Distinct neighbours over gate legs and switches. */
  degree: number
}

/** A container: a named, possibly overlapping node set; the non-absorbed ones are the partition. */
export interface Container {
  readonly key: string
  readonly kind: Kind
  readonly id: string
  readonly label: string
  /** Position in ownership order (0 is first). */
  rank: number
  /** The derivation's own node set, ascending ids. */
  readonly nodes: Array<number>
  /** Nodes this container owns in the partition (subset of `nodes`). */
  owned: Array<number>
  /** For an absorbed container: the container owning most of its nodes. */
  absorbed_by: string | null
  parent: string | null
  children: Array<string>
}

/** A gate leg: transistor(s) whose gate is `gate` and whose channel pulls `out` (to a rail or through a folded stack). */
export interface GateLeg {
  readonly gate: number
  readonly out: number
  readonly transistors: number
}

/** A switch: one pass transistor joining two non-rail nodes, opened by `control`. */
export interface Switch {
  readonly t: string
  readonly control: number
  readonly a: number
  readonly b: number
}

/** Gate legs and switches between two partition groups (`a` < `b` by key). */
export interface Bundle {
  readonly a: string
  readonly b: string
  legs_ab: number
  legs_ba: number
  switches: number
  /** Nodes gating the bundle's switches. */
  readonly controls: Set<number>
}

export interface Atlas {
  readonly nodeCount: number
  readonly nodes: ReadonlyArray<AtlasNode | undefined>
  readonly names: ReadonlyMap<string, number>
  /** Names whose raw entry is the -1 sentinel (`p5`, `Pout5`). */
  readonly sentinels: ReadonlySet<string>
  readonly vss: number
  readonly vcc: number
  readonly containers: ReadonlyArray<Container>
  readonly byKey: ReadonlyMap<string, Container>
  /** Partition groups (containers owning at least one node), rank order. */
  readonly partition: ReadonlyArray<Container>
  readonly absorbed: ReadonlyArray<Container>
  readonly legs: ReadonlyArray<GateLeg>
  readonly switches: ReadonlyArray<Switch>
  /** Per node: indexes into `legs` where it is the gate / the output; into `switches` where it is an end / the control. */
  readonly legsOut: ReadonlyArray<ReadonlyArray<number>>
  readonly legsIn: ReadonlyArray<ReadonlyArray<number>>
  readonly switchEnds: ReadonlyArray<ReadonlyArray<number>>
  readonly switchControls: ReadonlyArray<ReadonlyArray<number>>
  readonly bundles: ReadonlyArray<Bundle>
  /** Nodes the neighbour walk reports but never expands besides rails: control lines and clock lines. */
  readonly stops: ReadonlySet<number>
  readonly counts: AtlasCounts
}

/** The counts the spec names (compared with it in the README and the tests). */
export interface AtlasCounts {
  raw_entries: number
  duplicate_keys: number
  sentinels: number
  resolvable_names: number
  multi_name_nodes: number
  slash_names: number
  slash_name_nodes: number
  die_nodes: number
  folded_nodes: number
  partition_nodes: number
  named: number
  unnamed: number
  decode_terms: number
  control_lines: number
  dpc_names: number
  partition_groups: number
  containers: number
  kinds: number
  absorbed: number
  multi_container_nodes: number
  bundles: number
  /** Bundles counted once from each side that has legs out or switches (as `/v1/groups/{key}` lists them). */
  directed_bundles: number
  cross_gate_legs: number
  cross_switches: number
  inside_gate_legs: number
  inside_switches: number
  rail_gate_legs: number
  slash_keys: number
}

/** Steps of the unnamed-node growth (gate legs and switches, through unnamed nodes only). */
export const GROWTH_DEPTH = 2
/** Smallest component of otherwise unreached unnamed nodes that becomes its own `logic` container. */
export const LOGIC_MIN = 3

/** Marks a control line without a rule of its own: it becomes its own container (step 4b). */
const CONTROL_SEED = "\u0000control"

type Seed = readonly [RegExp, Kind, string | ((m: RegExpMatchArray) => string)]

/**
 * Name rules, first match wins per name (a node with aliases may match several rules and is
 * then in several containers). `$1` style ids come from the function form.
 */
const SEEDS: ReadonlyArray<Seed> = [
  [/^(?:alu|notalu|alua|alub)([0-7])$/, "alu", (m) => `bit${m[1]}`],
  [/^[#~]?\(AxBxC\)([0-7])$|^[#~]?\(AxB\)([0-7])|^AxB([0-7])$|^[#~]\(AxB([0-7])\)|^[#~]A\.B([0-7])$|^A\+B([0-7])$|^[#~]\(A\+B\)([0-7])$|^[#~]aluresult([0-7])$/, "alu",
    (m) => `bit${m.slice(1).find((x) => x !== undefined)}`],
  [/^[#~]?C(01|12|23|34|45|56|67|78)(\.phi2)?$|^(?:not)?alu(?:c(?:in|out)|vout|rawcout)$|^[#~]{1,2}alucout$/, "alu", "carry"],
  [/^(?:p|Pout)([0-7])$/, "flags", (m) => ["C", "Z", "I", "D", "B", "5", "V", "N"][Number(m[1])]!],
  [/^[#~]?DBZ$/, "flags", "Z"],
  [/^DBNeg$/, "flags", "N"],
  [/^[#~]op-set-C$/, "flags", "C"],
  [/^a([0-7])$/, "regs", "A"],
  [/^(?:not)?([xys])([0-7])$/, "regs", (m) => m[1]!.toUpperCase()],
  [/^(?:abl[0-7]|[#~]ABL[0-7]|ADL\/ABL|dpc-1_ADL\/ABL)$/, "alat", "ADL/ABL"],
  [/^(?:abh[0-7]|[#~]ABH[0-7]|ADH\/ABH|dpc-2_ADH\/ABH)$/, "alat", "ADH/ABH"],
  [/^(?:not)?idl[0-7]$/, "dbus", "DL"],
  [/^(?:not)?dor[0-7]$/, "dbus", "DOR"],
  [/^idb[0-7]$/, "dbus", "DB"],
  [/^dpc4([123])_DL\/(ADL|ADH|DB)$/, "dbus", (m) => `DL/${m[2]}`],
  [/^(?:not)?ir[0-7]$|^irline3$/, "irp", "IR"],
  [/^pd[0-7](?:\.clearIR)?$|^PD-|^[#~]TWOCYCLE|^ONEBYTE$/, "irp", "predecode"],
  [/^(?:da)?sb[0-7]$/, "sbus", "SB"],
  [/^[#~]?notRdy0/, "rdy", "notRdy0"],
  [/^(?:pcl[0-7]|pclp[0-7]|[#~]pclp[0-7])$/, "pcr", "PCL"],
  [/^(?:pch[0-7]|pchp[0-7]|[#~]pchp[0-7])$/, "pcr", "PCH"],
  [/^pipeT|^pipe[#~]T0$/, "pipe", "T"],
  [/^pipe[#~]VEC$|^pipeVectorA/, "pipe", "VEC"],
  [/^pipe(UNK\d+|IPCrelated)$/, "pipe", (m) => m[1]!],
  [/^pipephi2Reset0/, "pipe", "reset"],
  [/^pipe[#~]WR/, "pipe", "WR"],
  [/^pipedpc28$/, "pipe", "dpc28"],
  [/^(?:fetch|clearIR)$/, "sync", "fetch"],
  [/^(?:cp1|cclk|clk1out|clk2out)$/, "clock", "clk"],
  [/^[#~]?(?:IRQP|NMIP|NMIG|NMIL|INTG)$|^brk-done$|^D1x1$/, "intr", "INT"],
  [/^(?:VEC[01]|[#~]VEC|0\/ADL[0-2])$/, "intr", "VEC"],
  [/^(?:Reset0|RESP|C1x5Reset|RESG|H1x1)$/, "intr", "RES"],
  [/^branch-|^[#~]BRtaken$|^nnT2BR$|^[#~]op-branch-|^[#~]op-T3-branch$|^short-circuit-branch-add$/, "branch", "BR"],
  [/^DA-|^[#~]DA-ADD|^DC(34|78)|^dpc(18_[#~]DAA|22_[#~]DSA)$/, "decimal", "DAA"],
  [/^short-circuit-idx-add$/, "incr", "idx"],
  [/^dpc(34_PCLC|35_PCHC|36_[#~]IPC)$/, "incr", "PC"],
  [/^(?:clock[12]|t[2-5])$/, "chain", "T"],
  [/^ab[0-9]+$/, "bus", "AB"],
  [/^db[0-7]$/, "bus", "DB"],
  [/^adl[0-7]$/, "bus", "ADL"],
  [/^adh[0-7]$/, "bus", "ADH"],
  [/^(?:notRnWprepad|RnWstretched|[#~]WR|[#~]DBE|[#~]op-store)$/, "stage", "RW"],
  [/^(?:res|rw|sync|so|rdy|nmi|irq|clk0)$/, "pins", "ctl"],
  [/^x*-?op-/, "logic", "decode"],
  [/^dpc/, "logic", CONTROL_SEED],
  [/^(?:vcc|vss)$/, "rest", "rails"]
]

/**
 * Overlay containers: named sets that take no part in growth and rank after every other
 * container, so a higher-ranked container always absorbs them whole. Name rules, then numbers.
 */
const OVERLAY_SEEDS: ReadonlyArray<readonly [RegExp, string]> = [
  [/\.phi1$/, "clock:phi1"],
  [/\.phi2$/, "clock:phi2"],
  [/\.delay$/, "clock:delay"],
  [/^dpc(25_SBDB|27_SBADH)$/, "sbus:link"]
]

/** Node numbers the observation reads as `store_data` (engine/Observe.ts): seeds of `sdp:sd1`/`sdp:sd2`. */
const OVERLAY_NUMBERS: ReadonlyArray<readonly [number, string]> = [[440, "sdp:sd1"], [1258, "sdp:sd2"]]
const NUMBER_SEEDS: ReadonlyArray<readonly [number, Kind, string]> = [[862, "chain", "T"]]

const LABELS: Record<Kind, string> = {
  alu: "adder", flags: "status flag", regs: "register", alat: "address latch", dbus: "data latch/bus",
  irp: "instruction register", sbus: "special bus", sdp: "store-data phase", rdy: "ready", pcr: "program counter",
  pipe: "pipeline latch", sync: "fetch", clock: "clock", intr: "interrupt", branch: "branch", decimal: "decimal adjust",
  incr: "incrementer", chain: "timing chain", bus: "bus", stage: "write stage", pins: "pins", rest: "residue", logic: "static logic"
}

/**
 * Derives the atlas. `centroids[id]` is the node's polygon mean or undefined.
 * Deterministic: the same netlist always gives the same atlas (and the same `/atlas/full` bytes).
 */
export const deriveAtlas = (netlist: Netlist, centroids: ReadonlyArray<readonly [number, number] | undefined>): Atlas => {
  const N = netlist.nodeCount
  const { vss, vcc } = netlist
  const isRail = (x: number) => x === vss || x === vcc

  // Names: every resolving name per node, in file order; sentinels kept aside.
  const namesOf: Array<Array<string>> = Array.from({ length: N }, () => [])
  for (const [name, id] of netlist.names) namesOf[id]!.push(name)
  const sentinels = new Set(netlist.rawNames.filter(([, v]) => v < 0).map(([k]) => k))
  const rawKeys = new Map<string, number>()
  for (const [k] of netlist.rawNames) rawKeys.set(k, (rawKeys.get(k) ?? 0) + 1)

  // 1. Folding. A stack-internal node (unnamed, no pull-up, gating nothing) lies between the
  //    transistors of one series pull-down stack (a NAND's middle): it reaches vss through such
  //    nodes (its depth is the number of transistors to vss) and has exactly one distinct
  //    neighbour on the output side (any neighbour that is neither vss nor a shallower such
  //    node). It is folded into the first node up that is not internal: the stack's output.
  //    A node with no neighbour up (a dangling pull-down) or two (where two stacks meet) stays.
  const gates = new Int32Array(N)
  const chan: Array<Array<number>> = Array.from({ length: N }, () => [])
  for (let t = 0; t < netlist.transistorCount; t++) {
    gates[netlist.gate[t]!]++
    chan[netlist.c1[t]!]!.push(netlist.c2[t]!)
    chan[netlist.c2[t]!]!.push(netlist.c1[t]!)
  }
  const candidate = (x: number) => netlist.used[x] === 1 && !isRail(x) && namesOf[x]!.length === 0 && netlist.pullup[x] === 0 && gates[x] === 0
  const depthToVss = new Int32Array(N).fill(-1)
  depthToVss[vss] = 0
  for (let frontier = [vss], d = 1; frontier.length > 0; d++) {
    const next: Array<number> = []
    for (const u of frontier) for (const o of chan[u]!) if (depthToVss[o] === -1 && candidate(o)) (depthToVss[o] = d), next.push(o)
    frontier = next
  }
  const upOf = (x: number): Array<number> =>
    [...new Set(chan[x]!.filter((o) => o !== vss && !(depthToVss[o]! > 0 && depthToVss[o]! < depthToVss[x]!)))]
  const internal = new Uint8Array(N)
  for (let x = 0; x < N; x++) if (depthToVss[x]! > 0 && upOf(x).length === 1) internal[x] = 1
  const foldedInto = new Int32Array(N).fill(-1)
  for (let x = 0; x < N; x++) {
    if (!internal[x]) continue
    let up = upOf(x)[0]!
    for (let hops = 0; internal[up] && hops < N; hops++) up = upOf(up)[0]!
    foldedInto[x] = up
  }
  const fold = (x: number) => (internal[x] ? foldedInto[x]! : x)

  // 2. Relations over folded nodes: a transistor with a rail end, or both ends folding to one
  //    node, is a gate leg gate -> out (counted once per pair); any other is a switch.
  const legIndex = new Map<number, number>()
  const legs: Array<{ gate: number; out: number; transistors: number }> = []
  const switches: Array<Switch> = []
  for (let t = 0; t < netlist.transistorCount; t++) {
    const g = netlist.gate[t]!
    const a = fold(netlist.c1[t]!)
    const b = fold(netlist.c2[t]!)
    if (a < 0 || b < 0 || (isRail(a) && isRail(b))) continue
    if (isRail(a) || isRail(b) || a === b) {
      const out = isRail(a) ? b : a
      const k = g * N + out
      const i = legIndex.get(k)
      if (i === undefined) legIndex.set(k, legs.push({ gate: g, out, transistors: 1 }) - 1)
      else legs[i]!.transistors++
    } else switches.push({ t: netlist.transistorNames[t]!, control: g, a, b })
  }
  const legsOut: Array<Array<number>> = Array.from({ length: N }, () => [])
  const legsIn: Array<Array<number>> = Array.from({ length: N }, () => [])
  const switchEnds: Array<Array<number>> = Array.from({ length: N }, () => [])
  const switchControls: Array<Array<number>> = Array.from({ length: N }, () => [])
  legs.forEach((l, i) => (legsOut[l.gate]!.push(i), legsIn[l.out]!.push(i)))
  switches.forEach((s, i) => (switchEnds[s.a]!.push(i), switchEnds[s.b]!.push(i), switchControls[s.control]!.push(i)))

  // 3. Roles. Control line: a node with a `dpc` name. Decode term: a node with an `op-` name,
  //    unless every gate leg into it comes from another decode term (a term derived from terms).
  const role: Array<Role> = Array.from({ length: N }, () => "signal")
  const opNamed = (x: number) => namesOf[x]!.some((n) => n.startsWith("op-"))
  for (let x = 0; x < N; x++) {
    if (namesOf[x]!.some((n) => n.startsWith("dpc"))) role[x] = "control"
    else if (opNamed(x)) {
      const inputs = legsIn[x]!.map((i) => legs[i]!.gate).filter((g) => !isRail(g))
      if (inputs.length === 0 || !inputs.every(opNamed)) role[x] = "decode"
    }
  }

  const links = (x: number): Array<number> => {
    const out: Array<number> = []
    for (const i of legsOut[x]!) out.push(legs[i]!.out)
    for (const i of legsIn[x]!) out.push(legs[i]!.gate)
    for (const i of switchEnds[x]!) out.push(switches[i]!.a === x ? switches[i]!.b : switches[i]!.a)
    return out
  }
  // 4. Containers. Seeds from names (SEEDS) and numbers (NUMBER_SEEDS), then growth.
  const inPartition = (x: number) => netlist.used[x] === 1 && !isRail(x) && !internal[x]
  const seedSets = new Map<string, { kind: Kind; id: string; nodes: Set<number> }>()
  const addSeed = (kind: Kind, id: string, node: number) => {
    const key = `${kind}:${id}`
    let c = seedSets.get(key)
    if (!c) seedSets.set(key, (c = { kind, id, nodes: new Set() }))
    c.nodes.add(node)
  }
  const ownControl: Array<number> = []
  for (let x = 0; x < N; x++) {
    let seeded = false
    const rulesUsed = new Set<Seed>()
    for (const name of namesOf[x]!) {
      for (const rule of SEEDS) {
        const [re, kind, id] = rule
        const m = name.match(re)
        if (!m) continue
        seeded = true
        // Aliases matching the same rule (pipeUNK07 = pipeUNK10) seed one container, the first name's.
        if (rulesUsed.has(rule)) break
        rulesUsed.add(rule)
        if (id === CONTROL_SEED) {
          if (!ownControl.includes(x)) ownControl.push(x)
        } else addSeed(kind, typeof id === "string" ? id : id(m), x)
        break
      }
    }
    if (!seeded && inPartition(x) && namesOf[x]!.length > 0) addSeed("rest", "named", x)
  }
  for (const [x, kind, id] of NUMBER_SEEDS) if (inPartition(x)) addSeed(kind, id, x)
  seedSets.delete("rest:rails")

  // 4b. A control line without a rule of its own (and not already in a container through an
  //     alias) is a container by itself, keyed `<kind>:<line>` where kind is the kind of the
  //     container its switches reach most (an unseeded switch end counts its seeded links), and
  //     <line> is its name past `dpcNN_`.
  const seedKeys = (x: number) => [...seedSets].filter(([, c]) => c.nodes.has(x)).map(([k]) => k)
  for (const x of ownControl) {
    if (seedKeys(x).length > 0) continue
    const votes = new Map<string, number>()
    const vote = (k: string) => votes.set(k, (votes.get(k) ?? 0) + 1)
    for (const i of switchControls[x]!) {
      for (const e of [switches[i]!.a, switches[i]!.b]) {
        const ks = seedKeys(e)
        if (ks.length > 0) ks.forEach(vote)
        else for (const y of links(e)) seedKeys(y).forEach(vote)
      }
    }
    const top = [...votes].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0]
    const kind = top ? seedSets.get(top[0])!.kind : "logic"
    const line = namesOf[x]!.find((n) => n.startsWith("dpc"))!.replace(/^dpc-?\d+_?/, "")
    addSeed(kind, seedSets.has(`${kind}:${line}`) ? `${line}.${x}` : line, x)
  }

  // Growth: from every container at once, breadth-first over gate legs and switches through
  // unnamed partition nodes, GROWTH_DEPTH steps; an unnamed node joins every container reaching
  // it at its smallest distance (ties make the overlap).
  const growable = (x: number) => inPartition(x) && namesOf[x]!.length === 0
  const dist = new Int32Array(N).fill(-1)
  const reachedBy: Array<Set<string>> = Array.from({ length: N }, () => new Set())
  let frontier: Array<[number, string]> = []
  for (const [key, c] of seedSets) for (const x of c.nodes) frontier.push([x, key])
  for (let step = 1; step <= GROWTH_DEPTH; step++) {
    const next: Array<[number, string]> = []
    for (const [x, key] of frontier) {
      for (const y of links(x)) {
        if (!growable(y)) continue
        if (dist[y] === -1) dist[y] = step
        if (dist[y] !== step || reachedBy[y]!.has(key)) continue
        reachedBy[y]!.add(key)
        next.push([y, key])
      }
    }
    frontier = next
  }
  for (let y = 0; y < N; y++) for (const key of reachedBy[y]!) seedSets.get(key)!.nodes.add(y)

  // Unreached unnamed nodes: connected components among themselves; components of LOGIC_MIN
  // nodes or more are `logic:gN` (N = smallest node id), the rest fall to `rest:unreached`.
  const unreached = (x: number) => growable(x) && dist[x] === -1 && !NUMBER_SEEDS.some(([n]) => n === x)
  const done = new Uint8Array(N)
  for (let x = 0; x < N; x++) {
    if (!unreached(x) || done[x]) continue
    const comp = [x]
    done[x] = 1
    for (let i = 0; i < comp.length; i++) {
      for (const y of links(comp[i]!)) if (unreached(y) && !done[y]) (done[y] = 1), comp.push(y)
    }
    const [kind, id] = comp.length >= LOGIC_MIN ? (["logic", `g${Math.min(...comp)}`] as const) : (["rest", "unreached"] as const)
    for (const y of comp) addSeed(kind, id, y)
  }

  // 4c. Overlays (OVERLAY_SEEDS, OVERLAY_NUMBERS): a phase set is its named nodes; `sbus:link`
  //     is its two lines and the ends of their switches; `sdp:sdN` is the node and its links.
  const overlays = new Set<string>()
  const addOverlay = (key: string, x: number) => {
    overlays.add(key)
    const [kind, id] = key.split(":") as [Kind, string]
    addSeed(kind, id, x)
  }
  for (let x = 0; x < N; x++) {
    for (const name of namesOf[x]!) {
      for (const [re, key] of OVERLAY_SEEDS) {
        if (!re.test(name)) continue
        addOverlay(key, x)
        if (key === "sbus:link") for (const i of switchControls[x]!) addOverlay(key, switches[i]!.a), addOverlay(key, switches[i]!.b)
      }
    }
  }
  for (const [x, key] of OVERLAY_NUMBERS) {
    addOverlay(key, x)
    for (const y of links(x)) if (inPartition(y)) addOverlay(key, y)
  }

  // 5. Ranking and partition: kind order, then (within a kind) smaller containers first, then
  //    key; overlays rank after everything else.
  const containers: Array<Container> = [...seedSets].map(([key, c]) => ({
    key,
    kind: c.kind,
    id: c.id,
    label: `${LABELS[c.kind]} ${c.id}`,
    rank: 0,
    nodes: [...c.nodes].filter(inPartition).sort((a, b) => a - b),
    owned: [],
    absorbed_by: null,
    parent: null,
    children: []
  }))
  containers.sort((x, y) =>
    Number(overlays.has(x.key)) - Number(overlays.has(y.key)) ||
    KINDS.indexOf(x.kind) - KINDS.indexOf(y.kind) ||
    x.nodes.length - y.nodes.length ||
    (x.key < y.key ? -1 : x.key > y.key ? 1 : 0))
  containers.forEach((c, i) => (c.rank = i))
  const byKey = new Map(containers.map((c) => [c.key, c]))
  const owner: Array<Container | undefined> = new Array(N)
  const memberOf: Array<Array<string>> = Array.from({ length: N }, () => [])
  for (const c of containers) {
    for (const x of c.nodes) {
      memberOf[x]!.push(c.key)
      if (owner[x] === undefined) (owner[x] = c), c.owned.push(x)
    }
  }
  for (const c of containers) {
    if (c.owned.length > 0) continue
    const by = new Map<string, number>()
    for (const x of c.nodes) by.set(owner[x]!.key, (by.get(owner[x]!.key) ?? 0) + 1)
    c.absorbed_by = [...by].sort((a, b) => b[1] - a[1] || byKey.get(a[0])!.rank - byKey.get(b[0])!.rank)[0]?.[0] ?? null
  }
  const partition = containers.filter((c) => c.owned.length > 0)
  const absorbed = containers.filter((c) => c.owned.length === 0)

  // 6. Bundles between partition groups; rail-gated legs are counted apart (rails own no group).
  const bundleMap = new Map<string, Bundle>()
  let crossLegs = 0, insideLegs = 0, crossSwitches = 0, insideSwitches = 0, railLegs = 0
  const bundleOf = (g: string, h: string) => {
    const [a, b] = g < h ? [g, h] : [h, g]
    const k = `${a}\u0000${b}`
    let bd = bundleMap.get(k)
    if (!bd) bundleMap.set(k, (bd = { a, b, legs_ab: 0, legs_ba: 0, switches: 0, controls: new Set() }))
    return bd
  }
  for (const l of legs) {
    if (isRail(l.gate)) { railLegs++; continue }
    const g = owner[l.gate]!.key
    const h = owner[l.out]!.key
    if (g === h) { insideLegs++; continue }
    crossLegs++
    const bd = bundleOf(g, h)
    if (bd.a === g) bd.legs_ab++
    else bd.legs_ba++
  }
  for (const s of switches) {
    const g = owner[s.a]!.key
    const h = owner[s.b]!.key
    if (g === h) { insideSwitches++; continue }
    crossSwitches++
    const bd = bundleOf(g, h)
    bd.switches++
    bd.controls.add(s.control)
  }
  const bundles = [...bundleMap.values()].sort((x, y) => (x.a < y.a ? -1 : x.a > y.a ? 1 : x.b < y.b ? -1 : x.b > y.b ? 1 : 0))

  // Parent: the partition group taking at least half of what a group reaches out to, when that
  // group is larger; ties go to the higher-ranked group. A group that opens switches reaches out
  // through their ends (X's load and read lines lead into regs:X), any other through its legs.
  const outgoing = new Map<string, Map<string, number>>()
  const opensSwitches = new Set<string>()
  for (const s of switches) opensSwitches.add(owner[s.control]!.key)
  const count = (from: string, to: string) => {
    if (from === to) return
    let m = outgoing.get(from)
    if (!m) outgoing.set(from, (m = new Map()))
    m.set(to, (m.get(to) ?? 0) + 1)
  }
  for (const l of legs) if (!isRail(l.gate) && !opensSwitches.has(owner[l.gate]!.key)) count(owner[l.gate]!.key, owner[l.out]!.key)
  for (const s of switches) count(owner[s.control]!.key, owner[s.a]!.key), count(owner[s.control]!.key, owner[s.b]!.key)
  for (const c of partition) {
    const m = outgoing.get(c.key)
    if (!m) continue
    const total = [...m.values()].reduce((a, b) => a + b, 0)
    const [best, n] = [...m].sort((a, b) => b[1] - a[1] || byKey.get(a[0])!.rank - byKey.get(b[0])!.rank)[0]!
    const target = byKey.get(best)!
    if (n * 2 >= total && target.owned.length > c.owned.length) {
      c.parent = best
      target.children.push(c.key)
    }
  }

  // 7. Nodes.
  const stops = new Set<number>()
  for (let x = 0; x < N; x++) if (role[x] === "control" || memberOf[x]!.includes("clock:clk")) stops.add(x)
  const nodes: Array<AtlasNode | undefined> = new Array(N)
  for (let x = 0; x < N; x++) {
    if (netlist.used[x] !== 1) continue
    const c = centroids[x]
    const own = owner[x]
    nodes[x] = {
      id: x,
      names: namesOf[x]!,
      pullup: netlist.pullup[x] === 1,
      centroid: c ? [c[0], c[1]] : null,
      role: role[x]!,
      rail: isRail(x),
      folded_into: internal[x] ? foldedInto[x]! : null,
      group: own ? own.key : null,
      containers: memberOf[x]!,
      block: own ? blockOf(own.kind) : null,
      degree: new Set(links(x)).size
    }
  }

  const partitionNodes = nodes.filter((n) => n && n.group !== null) as Array<AtlasNode>
  const slashNames = [...netlist.names.keys()].filter((k) => k.includes("/"))
  const counts: AtlasCounts = {
    raw_entries: netlist.rawNames.length,
    duplicate_keys: [...rawKeys.values()].filter((n) => n > 1).length,
    sentinels: sentinels.size,
    resolvable_names: netlist.names.size,
    multi_name_nodes: namesOf.filter((n) => n.length > 1).length,
    slash_names: slashNames.length,
    slash_name_nodes: new Set(slashNames.map((k) => netlist.names.get(k))).size,
    die_nodes: nodes.filter(Boolean).length,
    folded_nodes: internal.reduce((a, b) => a + b, 0),
    partition_nodes: partitionNodes.length,
    named: partitionNodes.filter((n) => n.names.length > 0).length,
    unnamed: partitionNodes.filter((n) => n.names.length === 0).length,
    decode_terms: role.filter((r) => r === "decode").length,
    control_lines: role.filter((r) => r === "control").length,
    dpc_names: [...netlist.names.keys()].filter((k) => k.startsWith("dpc")).length,
    partition_groups: partition.length,
    containers: containers.length,
    kinds: new Set(containers.map((c) => c.kind)).size,
    absorbed: absorbed.length,
    multi_container_nodes: partitionNodes.filter((n) => n.containers.length > 1).length,
    bundles: bundles.length,
    directed_bundles: bundles.reduce((n, b) => n + Number(b.legs_ab > 0 || b.switches > 0) + Number(b.legs_ba > 0 || b.switches > 0), 0),
    cross_gate_legs: crossLegs,
    cross_switches: crossSwitches,
    inside_gate_legs: insideLegs,
    inside_switches: insideSwitches,
    rail_gate_legs: railLegs,
    slash_keys: containers.filter((c) => c.key.includes("/")).length
  }
  return {
    nodeCount: N, nodes, names: netlist.names, sentinels, vss, vcc, containers, byKey, partition, absorbed,
    legs, switches, legsOut, legsIn, switchEnds, switchControls, bundles, stops, counts
  }
}

/** The block (name) a container kind is filed in. */
export const blockOf = (kind: Kind): string => BLOCKS.find((b) => b.kinds.includes(kind))!.name

/**
 * Polygon centroids from `segdefs.js` text: per node, the mean of all its segments' vertices,
 * rounded to die units. Rows are `[node, '+'|'-', layer, x0, y0, x1, y1, ...]`.
 */
export const segmentCentroids = (segdefs: string, nodeCount: number): Array<readonly [number, number] | undefined> => {
  const sx = new Float64Array(nodeCount)
  const sy = new Float64Array(nodeCount)
  const n = new Int32Array(nodeCount)
  const row = /\[\s*(\d+)\s*,\s*'[+-]'\s*,\s*\d+\s*,([\d,\s]*)\]/g
  for (let m = row.exec(segdefs); m !== null; m = row.exec(segdefs)) {
    const id = Number(m[1])
    if (id >= nodeCount) continue
    const v = m[2]!.split(",").map((s) => s.trim()).filter((s) => s !== "").map(Number)
    for (let i = 0; i + 1 < v.length; i += 2) {
      sx[id] += v[i]!
      sy[id] += v[i + 1]!
      n[id]++
    }
  }
  return Array.from({ length: nodeCount }, (_, i) => (n[i]! > 0 ? ([Math.round(sx[i]! / n[i]!), Math.round(sy[i]! / n[i]!)] as const) : undefined))
}
