/**
 * The atlas service: derives the atlas from a netlist folder on first use (never at import, so
 * the CLI and inspection pay nothing), then keeps it and the bodies that never change
 * (`/v1/atlas`, `/v1/atlas/full` plain and gzipped) with their ETags.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { gzipSync } from "node:zlib"
import { loadNetlist } from "../engine/Netlist.ts"
import { type Atlas, BLOCKS, deriveAtlas, KINDS, segmentCentroids } from "./Derive.ts"
import { atlasSummary } from "./Query.ts"

/** A response body fixed for the life of the process, with its strong ETag. */
export interface StaticBody {
  readonly body: string | Uint8Array
  readonly etag: string
}

export interface AtlasService {
  /** The derived atlas (derived on the first call; a bad netlist throws NetlistInvalid then). */
  atlas(): Atlas
  /** `GET /v1/atlas` body. */
  summary(): StaticBody
  /** `GET /v1/atlas/full`: the JSON text and its gzip (modification time zero: same bytes every time). */
  full(): { readonly json: StaticBody; readonly gzip: StaticBody }
}

/** A quoted 32-hex-digit SHA-256 prefix: the ETag of a body. */
export const etagOf = (body: string | Uint8Array, suffix = ""): string =>
  `"${createHash("sha256").update(body).digest("hex").slice(0, 32)}${suffix}"`

const once = <A>(f: () => A): (() => A) => {
  let value: { a: A } | undefined
  return () => (value ??= { a: f() }).a
}

/**
 * The whole atlas in one document: nodes, containers, gate legs, switches and bundles. Legs are
 * `[gate, out, transistors]`, switches `[transistor, control, a, b]` (node numbers). As the spec
 * has it, the document lacks the alias table: a node carries its display name (the first of its
 * names) and `aliases`, the number of others; `GET /api/v1/nodes` lists every name.
 */
export const fullDocument = (a: Atlas) => ({
  format: "chip-sim-atlas",
  version: 1,
  counts: a.counts,
  kinds: KINDS,
  blocks: BLOCKS,
  nodes: a.nodes.filter((n) => n !== undefined).map((n) => ({
    id: n!.id,
    name: n!.names[0] ?? null,
    ...(n!.names.length > 1 ? { aliases: n!.names.length - 1 } : {}),
    group: n!.group,
    containers: n!.containers,
    block: n!.block,
    role: n!.role,
    pullup: n!.pullup,
    centroid: n!.centroid,
    degree: n!.degree,
    ...(n!.rail ? { rail: true } : {}),
    ...(n!.folded_into !== null ? { folded_into: n!.folded_into } : {})
  })),
  containers: a.containers.map((c) => ({
    key: c.key, kind: c.kind, id: c.id, label: c.label, rank: c.rank, parent: c.parent, children: c.children,
    absorbed_by: c.absorbed_by, nodes: c.nodes, owned: c.owned
  })),
  legs: a.legs.map((l) => [l.gate, l.out, l.transistors]),
  switches: a.switches.map((s) => [s.t, s.control, s.a, s.b]),
  bundles: a.bundles.map((b) => ({ a: b.a, b: b.b, legs_ab: b.legs_ab, legs_ba: b.legs_ba, switches: b.switches, controls: [...b.controls].sort((x, y) => x - y) }))
})

/** Derives the atlas of the netlist in `netlistDir` (the three visual6502 files). Pure in effect: reads the files, once. */
export const loadAtlas = (netlistDir: string): Atlas => {
  const netlist = loadNetlist(netlistDir)
  const centroids = segmentCentroids(fs.readFileSync(path.join(netlistDir, "segdefs.js"), "utf8"), netlist.nodeCount)
  return deriveAtlas(netlist, centroids)
}

/** The service over `netlistDir`; nothing is read until a method is called. */
export const makeAtlasService = (netlistDir: string): AtlasService => {
  const atlas = once(() => loadAtlas(netlistDir))
  const summary = once(() => {
    const body = JSON.stringify(atlasSummary(atlas()))
    return { body, etag: etagOf(body) }
  })
  const full = once(() => {
    const json = JSON.stringify(fullDocument(atlas()))
    const gz = gzipSync(json, { level: 9 })
    return { json: { body: json, etag: etagOf(json) }, gzip: { body: new Uint8Array(gz.buffer, gz.byteOffset, gz.length), etag: etagOf(json, "-gzip") } }
  })
  return { atlas, summary, full }
}
