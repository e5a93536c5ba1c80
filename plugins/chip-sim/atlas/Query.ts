/**
 * Atlas queries (spec: chip-simulation.md, "Atlas queries"): pure functions from a derived
 * {@link Atlas} and decoded parameters to response bodies. A reference or filter that names
 * nothing throws {@link AtlasQueryError} with its HTTP status (400, 404 or 422) and a message
 * saying what to send instead; nothing here answers 500 for bad input.
 */
import * as Schema from "effect/Schema"
import { type Atlas, type AtlasNode, BLOCKS, blockOf, type Container, KINDS, type Kind, ROLES, type Role } from "./Derive.ts"

/** A refused atlas query: `status` is the HTTP status, `message` the body's `error`, `extra` more members of the body. */
export class AtlasQueryError extends Schema.TaggedError<AtlasQueryError>()("AtlasQueryError", {
  status: Schema.Literal(400, 404, 422),
  message: Schema.String,
  extra: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.Unknown }), { default: () => ({}) })
}) {}

const refuse = (status: 400 | 404 | 422, message: string, extra?: Record<string, unknown>) =>
  new AtlasQueryError({ status, message, ...(extra ? { extra } : {}) })

/** Neighbour walk bounds (spec Limits: depth 1 to 4, limit up to 2000). */
export const MAX_DEPTH = 4
export const MAX_LIMIT = 2000
export const DEFAULT_LIMIT = 200
/** Default page of `/v1/tags`. */
export const TAGS_DEFAULT_LIMIT = 100

export type Via = "all" | "gate" | "switch" | "control"
export type Direction = "both" | "in" | "out"
export type Layer = "partition" | "containers" | "absorbed"

const nameOf = (a: Atlas, id: number): string | null => a.nodes[id]?.names[0] ?? null
const ref = (a: Atlas, id: number) => ({ id, name: nameOf(a, id) })
const members = (a: Atlas, ids: ReadonlyArray<number>) => ids.map((id) => ref(a, id))

/** A node as `/v1/tags` and group members carry it. */
export const nodeSummary = (n: AtlasNode) => ({
  id: n.id,
  name: n.names[0] ?? null,
  names: n.names,
  group: n.group,
  containers: n.containers,
  block: n.block,
  role: n.role,
  pullup: n.pullup,
  centroid: n.centroid,
  degree: n.degree
})

/**
 * Resolves a die name or node number (`1234`, `#1234`) to a node.
 * @throws AtlasQueryError `status` (404 for a path reference, 400 for a query parameter) naming the reference.
 */
export const resolveNode = (a: Atlas, reference: string, status: 400 | 404 = 404): AtlasNode => {
  const numeric = /^#?(\d+)$/.exec(reference)
  if (numeric) {
    const node = a.nodes[Number(numeric[1])]
    if (!node) throw refuse(status, `no node numbered ${numeric[1]} on the die (node numbers run 0 to ${a.nodeCount - 1}, some unused)`)
    return node
  }
  const id = a.names.get(reference)
  if (id === undefined) {
    if (a.sentinels.has(reference)) {
      throw refuse(status, `${reference} is a sentinel in nodenames.js: it names bit-5 storage the chip does not have`)
    }
    throw refuse(status, `unknown node ${JSON.stringify(reference)}: give a die name (see GET /api/v1/nodes) or a node number, with or without a leading # (%23 in a URL)`)
  }
  return a.nodes[id]!
}

/** The summary behind `GET /v1/atlas`: kinds with sizes, blocks, roles, walk bounds, counts. */
export const atlasSummary = (a: Atlas) => ({
  chip: "NMOS 6502 (visual6502 netlist)",
  algorithm: "plugins/chip-sim/README.md, section Atlas",
  counts: a.counts,
  layers: { partition: a.partition.length, containers: a.containers.length, absorbed: a.absorbed.length },
  kinds: KINDS.map((kind) => {
    const all = a.containers.filter((c) => c.kind === kind)
    return {
      kind,
      block: blockOf(kind),
      containers: all.length,
      partition_groups: all.filter((c) => c.owned.length > 0).length,
      nodes: all.reduce((s, c) => s + c.owned.length, 0)
    }
  }),
  blocks: BLOCKS.map((b) => {
    const groups = a.partition.filter((c) => b.kinds.includes(c.kind))
    return { id: b.id, name: b.name, kinds: b.kinds, groups: groups.length, nodes: groups.reduce((s, c) => s + c.owned.length, 0) }
  }),
  roles: ROLES.map((role) => ({ role, nodes: a.nodes.filter((n) => n && n.group !== null && n.role === role).length })),
  walk: {
    depth: { min: 1, max: MAX_DEPTH, default: 1 },
    limit: { default: DEFAULT_LIMIT, max: MAX_LIMIT },
    via: ["all", "gate", "switch", "control"],
    direction: ["both", "in", "out"],
    relations: ["drives", "driven_by", "channel", "opens"],
    rails: [ref(a, a.vss), ref(a, a.vcc)],
    rail_gated_legs: a.legs.filter((l) => l.gate === a.vss || l.gate === a.vcc).length,
    never_followed: [...a.stops].sort((x, y) => x - y).map((id) => ({ ...ref(a, id), why: a.nodes[id]!.role === "control" ? "control" : "clock" }))
  }
})

/** `block` filter: a block id (`3`) or name (`registers`). @throws AtlasQueryError 422 */
const blockFilter = (block: string): string => {
  const b = BLOCKS.find((x) => String(x.id) === block || x.name === block)
  if (!b) throw refuse(422, `unknown block ${JSON.stringify(block)}: one of ${BLOCKS.map((x) => `${x.id} (${x.name})`).join(", ")}`)
  return b.name
}

const groupOrThrow = (a: Atlas, key: string, status: 404 | 422 = 404): Container => {
  const c = a.byKey.get(key)
  if (!c) throw refuse(status, `unknown group key ${JSON.stringify(key)}: keys are kind:id (see GET /api/v1/groups?layer=containers)`)
  return c
}

export interface GroupsQuery {
  readonly layer?: Layer
  readonly kind?: Kind
  readonly parent?: string
  readonly block?: string
  readonly q?: string
  readonly min_nodes?: number
  readonly members?: boolean
}

/** `GET /v1/groups`. Sizes are owned nodes in the partition layer, the derivation set otherwise. */
export const listGroups = (a: Atlas, query: GroupsQuery) => {
  const layer = query.layer ?? "partition"
  let list: ReadonlyArray<Container> = layer === "partition" ? a.partition : layer === "absorbed" ? a.absorbed : a.containers
  const size = (c: Container) => (layer === "partition" ? c.owned.length : c.nodes.length)
  if (query.kind) list = list.filter((c) => c.kind === query.kind)
  if (query.parent !== undefined) {
    const parent = groupOrThrow(a, query.parent, 422)
    list = list.filter((c) => c.parent === parent.key)
  }
  if (query.block !== undefined) {
    const block = blockFilter(query.block)
    list = list.filter((c) => blockOf(c.kind) === block)
  }
  if (query.q) {
    const q = query.q.toLowerCase()
    list = list.filter((c) => c.key.toLowerCase().includes(q) || c.label.toLowerCase().includes(q))
  }
  if (query.min_nodes !== undefined) list = list.filter((c) => size(c) >= query.min_nodes!)
  return {
    layer,
    total: list.length,
    groups: list.map((c) => ({
      key: c.key,
      kind: c.kind,
      id: c.id,
      label: c.label,
      block: blockOf(c.kind),
      nodes: size(c),
      parent: c.parent,
      children: c.children.length,
      ...(c.absorbed_by !== null ? { absorbed_by: c.absorbed_by } : {}),
      ...(query.members ? { members: members(a, layer === "partition" ? c.owned : c.nodes) } : {})
    }))
  }
}

/**
 * `GET /v1/groups/{key}`: one container in full. In the partition layer an absorbed key is 404
 * pointing at `layer=containers`. @throws AtlasQueryError 404
 */
export const groupDetail = (a: Atlas, key: string, layer: Layer = "partition") => {
  const c = groupOrThrow(a, key)
  if (layer !== "containers" && c.owned.length === 0) {
    throw refuse(404, `${key} is not a partition group: it is absorbed whole by ${c.absorbed_by}; ask with ?layer=containers`, { absorbed_by: c.absorbed_by })
  }
  const blocks = new Map<string, number>()
  const shares = new Map<string, number>()
  for (const x of c.nodes) {
    const n = a.nodes[x]!
    for (const k of n.containers) {
      if (k === c.key) continue
      shares.set(k, (shares.get(k) ?? 0) + 1)
    }
    for (const k of n.containers) {
      const b = blockOf(a.byKey.get(k)!.kind)
      blocks.set(b, (blocks.get(b) ?? 0) + 1)
    }
  }
  const bundles = a.bundles
    .filter((b) => b.a === c.key || b.b === c.key)
    .map((b) => {
      const mine = b.a === c.key
      return {
        group: mine ? b.b : b.a,
        gate_legs_out: mine ? b.legs_ab : b.legs_ba,
        gate_legs_in: mine ? b.legs_ba : b.legs_ab,
        switches: b.switches,
        control_lines: members(a, [...b.controls].sort((x, y) => x - y))
      }
    })
  const base = {
    key: c.key,
    kind: c.kind,
    id: c.id,
    label: c.label,
    layer: c.owned.length > 0 ? "partition" : "absorbed",
    block: blockOf(c.kind),
    rank: c.rank,
    parent: c.parent,
    children: c.children,
    blocks: [...blocks].map(([block, nodes]) => ({ block, nodes })).sort((x, y) => y.nodes - x.nodes),
    shares: [...shares].map(([k, nodes]) => ({ key: k, nodes })).sort((x, y) => y.nodes - x.nodes || (x.key < y.key ? -1 : 1)),
    bundles,
    ...(c.absorbed_by !== null ? { absorbed_by: c.absorbed_by } : {})
  }
  if (layer !== "containers") return { ...base, members: c.owned.map((x) => nodeSummary(a.nodes[x]!)) }
  const owned = new Set(c.owned)
  return {
    ...base,
    nodes: members(a, c.nodes),
    owned: c.owned,
    claimed_elsewhere: c.nodes.filter((x) => !owned.has(x)).map((x) => ({ ...ref(a, x), by: a.nodes[x]!.group }))
  }
}

export interface TagsQuery {
  readonly group?: string
  readonly kind?: Kind
  readonly block?: string
  readonly role?: Role
  readonly q?: string
  readonly named?: boolean
  readonly multi?: boolean
  readonly limit?: number
  readonly offset?: number
}

/** `GET /v1/tags`: partition nodes matching every filter, by node number, paged; `total` counts matches. */
export const tags = (a: Atlas, query: TagsQuery) => {
  let list = a.nodes.filter((n): n is AtlasNode => n !== undefined && n.group !== null)
  if (query.group !== undefined) {
    const c = groupOrThrow(a, query.group, 422)
    const set = new Set(c.owned.length > 0 ? c.owned : c.nodes)
    list = list.filter((n) => set.has(n.id))
  }
  if (query.kind) list = list.filter((n) => n.containers.some((k) => a.byKey.get(k)!.kind === query.kind))
  if (query.block !== undefined) {
    const block = blockFilter(query.block)
    list = list.filter((n) => n.block === block)
  }
  if (query.role) list = list.filter((n) => n.role === query.role)
  if (query.q) {
    const q = query.q.toLowerCase()
    list = list.filter((n) => n.names.some((name) => name.toLowerCase().includes(q)))
  }
  if (query.named !== undefined) list = list.filter((n) => (n.names.length > 0) === query.named)
  if (query.multi) list = list.filter((n) => n.containers.length > 1)
  const limit = query.limit ?? TAGS_DEFAULT_LIMIT
  const offset = query.offset ?? 0
  return { total: list.length, limit, offset, nodes: list.slice(offset, offset + limit).map(nodeSummary) }
}

/** `GET /v1/node/{ref}`: the node in full, with its relation counts. @throws AtlasQueryError 404 */
export const nodeDetail = (a: Atlas, reference: string) => {
  const n = resolveNode(a, reference)
  const legsIn = a.legsIn[n.id]!
  return {
    ref: reference,
    ...nodeSummary(n),
    rail: n.rail,
    in_partition: n.group !== null,
    folded_into: n.folded_into === null ? null : ref(a, n.folded_into),
    relations: {
      drives: a.legsOut[n.id]!.length,
      driven_by: legsIn.length,
      channel: a.switchEnds[n.id]!.length,
      opens: a.switchControls[n.id]!.length
    },
    walk: n.rail ? "rail: reported, never walked" : n.folded_into !== null ? `folded into ${n.folded_into}: walked from there` : a.stops.has(n.id) ? `${n.role === "control" ? "control" : "clock"} line: reported, never followed as a signal path` : "walked"
  }
}

export interface NeighborsQuery {
  readonly node: string
  readonly via?: Via
  readonly direction?: Direction
  readonly depth?: number
  readonly limit?: number
}

interface Relation {
  from: number
  from_name: string | null
  node: number
  name: string | null
  relation: "drives" | "driven_by" | "channel" | "opens"
  depth: number
  control?: { id: number; name: string | null }
  transistor?: string
  rail?: true
  stop?: "rail" | "control" | "clock"
}

/**
 * `GET /v1/neighbors`: breadth-first from the node, `depth` steps. Rails are reported (with
 * `rail: true`) and never walked; control and clock lines reached from elsewhere are reported
 * with `stop` and never followed. `direction` filters gate relations (`drives` = out,
 * `driven_by` = in). A folded node walks from the gate output it is folded into.
 * @throws AtlasQueryError 400 for a node that does not resolve
 */
export const neighbors = (a: Atlas, query: NeighborsQuery) => {
  const asked = resolveNode(a, query.node, 400)
  const start = asked.folded_into !== null ? a.nodes[asked.folded_into]! : asked
  const via = query.via ?? "all"
  const direction = query.direction ?? "both"
  const depth = query.depth ?? 1
  const limit = query.limit ?? DEFAULT_LIMIT
  const out: Array<Relation> = []
  const seen = new Set<string>()
  const visited = new Set<number>([start.id])
  let truncated = false
  let frontier = [start.id]
  const stopOf = (v: number): Relation["stop"] => (v === a.vss || v === a.vcc ? "rail" : a.stops.has(v) ? (a.nodes[v]!.role === "control" ? "control" : "clock") : undefined)
  const emit = (r: Omit<Relation, "from_name" | "name">, next: Array<number>): boolean => {
    const k = `${r.from}:${r.node}:${r.relation}:${r.transistor ?? ""}`
    if (seen.has(k)) return true
    if (out.length >= limit) return !(truncated = true)
    seen.add(k)
    const stop = stopOf(r.node)
    out.push({ ...r, from_name: nameOf(a, r.from), name: nameOf(a, r.node), ...(stop === "rail" ? { rail: true as const } : {}), ...(stop ? { stop } : {}) })
    if (!stop && !visited.has(r.node)) visited.add(r.node), next.push(r.node)
    return true
  }
  walk: for (let d = 1; d <= depth && frontier.length > 0; d++) {
    const next: Array<number> = []
    for (const u of frontier) {
      // A rail start reports what it gates and nothing more (rails are never walked).
      if (u === a.vss || u === a.vcc) {
        if (via === "all" || via === "gate") for (const i of a.legsOut[u]!) if (!emit({ from: u, node: a.legs[i]!.out, relation: "drives", depth: d }, [])) break walk
        continue
      }
      if (via === "all" || via === "gate") {
        if (direction !== "in") for (const i of a.legsOut[u]!) if (!emit({ from: u, node: a.legs[i]!.out, relation: "drives", depth: d }, next)) break walk
        if (direction !== "out") for (const i of a.legsIn[u]!) if (!emit({ from: u, node: a.legs[i]!.gate, relation: "driven_by", depth: d }, next)) break walk
      }
      if (via === "all" || via === "switch") {
        for (const i of a.switchEnds[u]!) {
          const s = a.switches[i]!
          if (!emit({ from: u, node: s.a === u ? s.b : s.a, relation: "channel", depth: d, control: ref(a, s.control), transistor: s.t }, next)) break walk
        }
      }
      if (via === "all" || via === "control") {
        for (const i of a.switchControls[u]!) {
          const s = a.switches[i]!
          for (const end of [s.a, s.b]) if (!emit({ from: u, node: end, relation: "opens", depth: d, transistor: s.t }, next)) break walk
        }
      }
    }
    frontier = next
  }
  return {
    node: ref(a, start.id),
    ...(start !== asked ? { asked: ref(a, asked.id), note: `node ${asked.id} is inside a series pull-down stack: walked from the gate output it is folded into` } : {}),
    ...(start.rail ? { rail: true, note: "a rail: what it gates is reported, never walked" } : {}),
    ...(a.stops.has(start.id) ? { note: "a control or clock line: walked from here, never followed when reached from elsewhere" } : {}),
    via,
    direction,
    depth,
    limit,
    count: out.length,
    truncated,
    relations: out
  }
}
