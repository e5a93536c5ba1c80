import * as path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { ROOT } from "../../../../core/Kernel.ts"
import { loadAtlas, makeAtlasService } from "../../../../plugins/chip-sim/atlas/Atlas.ts"
import type { Atlas } from "../../../../plugins/chip-sim/atlas/Derive.ts"
import { KINDS } from "../../../../plugins/chip-sim/atlas/Derive.ts"
import { groupDetail, listGroups, neighbors, tags } from "../../../../plugins/chip-sim/atlas/Query.ts"

const NETLIST = path.resolve(ROOT, "../shared/chip-sim/netlist")

// Derived once for the file (about 0.1 s).
let atlas: Atlas
beforeAll(() => {
  atlas = loadAtlas(NETLIST)
})

describe("atlas derivation: the counts of the spec's Atlas vocabulary", () => {
  it("names: 846 raw entries, 12 duplicate keys, the p5/Pout5 sentinels, 832 resolvable, 125 multi-named nodes, 47 nodes with a slash name", () => {
    expect(atlas.counts).toMatchObject({
      raw_entries: 846,
      duplicate_keys: 12,
      sentinels: 2,
      resolvable_names: 832,
      multi_name_nodes: 125,
      // 47 nodes carry a slash name; 49 names have one (ADL/ABL = dpc-1_ADL/ABL, ADH/ABH = dpc-2_ADH/ABH).
      slash_name_nodes: 47,
      slash_names: 49,
      dpc_names: 49
    })
    expect([...atlas.sentinels].sort()).toEqual(["Pout5", "p5"])
  })

  it("roles: 122 decode terms and 46 control lines; 705 named partition nodes", () => {
    expect(atlas.counts).toMatchObject({ decode_terms: 122, control_lines: 46, named: 705 })
    // Spec: 1547 nodes in the partition, 842 unnamed. Folding 156 stack-internal nodes leaves 1546 (see README, Atlas).
    expect(atlas.counts).toMatchObject({ die_nodes: 1704, folded_nodes: 156, partition_nodes: 1546, unnamed: 841 })
    const sums = atlas.nodes.find((n) => n?.names.includes("op-SUMS"))!
    expect(sums.role).toBe("signal") // derived from other decode terms only
    expect(atlas.nodes[atlas.names.get("cclk")!]!.role).toBe("signal")
    expect(atlas.nodes[atlas.names.get("dpc23_SBAC")!]!.role).toBe("control")
  })

  it("containers: 132 partition groups over every partition node once, 138 containers in 23 kinds, the 6 absorbed, 5 slash keys", () => {
    expect(atlas.counts).toMatchObject({ partition_groups: 132, containers: 138, kinds: 23, absorbed: 6, slash_keys: 5 })
    expect(new Set(atlas.containers.map((c) => c.kind))).toEqual(new Set(KINDS))
    expect(atlas.absorbed.map((c) => c.key).sort()).toEqual(["clock:delay", "clock:phi1", "clock:phi2", "sbus:link", "sdp:sd1", "sdp:sd2"])
    const owned = atlas.partition.flatMap((c) => c.owned)
    expect(owned.length).toBe(atlas.counts.partition_nodes)
    expect(new Set(owned).size).toBe(owned.length)
    expect(atlas.containers.filter((c) => c.key.includes("/")).map((c) => c.key).sort()).toEqual(["alat:ADH/ABH", "alat:ADL/ABL", "dbus:DL/ADH", "dbus:DL/ADL", "dbus:DL/DB"])
    // Overlap: spec 122 nodes in more than one container; the growth rule gives more (README).
    expect(atlas.counts.multi_container_nodes).toBe(404)
  })

  it("bundles: gate legs and switches between and inside groups (spec 534 bundles, 1644/310 across, 922/313 inside)", () => {
    expect(atlas.counts).toMatchObject({ bundles: 356, directed_bundles: 516, cross_gate_legs: 1381, cross_switches: 330, inside_gate_legs: 1218, inside_switches: 290, rail_gate_legs: 16 })
    // Every switch and every non-rail-gated leg is either across or inside.
    expect(atlas.counts.cross_switches + atlas.counts.inside_switches).toBe(atlas.switches.length)
    expect(atlas.counts.cross_gate_legs + atlas.counts.inside_gate_legs + atlas.counts.rail_gate_legs).toBe(atlas.legs.length)
    expect(atlas.bundles.reduce((s, b) => s + b.legs_ab + b.legs_ba, 0)).toBe(atlas.counts.cross_gate_legs)
  })

  it("folding: a node inside one series pull-down stack folds into its output; a dangling pull-down and a stack junction stay", () => {
    expect(atlas.nodes[972]!.folded_into).toBe(1372)
    expect(atlas.nodes[972]!.group).toBeNull()
    expect(atlas.nodes[806]!.folded_into).toBeNull() // its one transistor goes to vss: no output to fold into
    expect(atlas.nodes[1172]!.folded_into).toBeNull() // two stacks meet here
    for (const n of atlas.nodes) if (n?.folded_into != null) expect(atlas.nodes[n.folded_into]!.folded_into).toBeNull()
  })

  it("is lazy: the service reads nothing until asked", () => {
    const service = makeAtlasService(path.join(NETLIST, "no-such-folder"))
    expect(() => service.atlas()).toThrow(/netlist not found/)
  })

  it("is deterministic: a second derivation gives the same groups and bundles", () => {
    const again = loadAtlas(NETLIST)
    expect(again.partition.map((c) => [c.key, c.owned])).toEqual(atlas.partition.map((c) => [c.key, c.owned]))
    expect(again.counts).toEqual(atlas.counts)
  })

  it("queries in process: groups by layer, group detail, tag paging, a depth-4 walk never passing a rail or control line", () => {
    expect(listGroups(atlas, {}).total).toBe(132)
    expect(listGroups(atlas, { layer: "containers" }).total).toBe(138)
    const a = groupDetail(atlas, "regs:A") as { members: Array<{ name: string | null }> }
    expect(a.members.some((m) => m.name === "a0")).toBe(true)
    const page = tags(atlas, { limit: 10, offset: 1540 })
    expect(page).toMatchObject({ total: 1546, limit: 10, offset: 1540 })
    expect(page.nodes).toHaveLength(6)
    const walk = neighbors(atlas, { node: "a0", depth: 4, limit: 2000 })
    const never = new Set([atlas.vss, atlas.vcc, ...atlas.stops])
    expect(walk.relations.some((r) => never.has(r.node))).toBe(true)
    expect(walk.relations.filter((r) => r.from !== walk.node.id && never.has(r.from))).toEqual([])
  })
})
