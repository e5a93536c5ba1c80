/**
 * The `chip_atlas` MCP tool (spec: chip-simulation.md, "MCP"): what a wire is part of. With
 * `node`: the node, its partition group and what it reaches (`depth`, `via`, `direction`,
 * `limit` as `GET /api/v1/neighbors`); with `group`: that container; with neither: the atlas
 * summary. A reference naming nothing is a result with `isError`, never a JSON-RPC error.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { McpTool, McpToolResult } from "../../../core/Contribution.ts"
import type { AtlasService } from "./Atlas.ts"
import { atlasSummary, AtlasQueryError, groupDetail, MAX_DEPTH, MAX_LIMIT, neighbors, nodeDetail } from "./Query.ts"

const result = (value: Record<string, unknown>): McpToolResult => ({
  content: [{ type: "text", text: JSON.stringify(value, null, 1) }],
  structuredContent: value
})
const refusal = (message: string): McpToolResult => ({ content: [{ type: "text", text: message }], isError: true })

const AtlasInput = Schema.Struct({
  node: Schema.optional(Schema.Union(Schema.String, Schema.Int)).annotations({ description: "die name (e.g. a0, cclk, ADL/ABL) or node number (#n accepted)" }),
  group: Schema.optional(Schema.String).annotations({ description: "group key kind:id (e.g. regs:A, alat:ADL/ABL)" }),
  depth: Schema.optional(Schema.Int.pipe(Schema.between(1, MAX_DEPTH))).annotations({ description: "neighbour walk depth, 1 to 4 (default 1)" }),
  via: Schema.optional(Schema.Literal("all", "gate", "switch", "control")),
  direction: Schema.optional(Schema.Literal("both", "in", "out")),
  limit: Schema.optional(Schema.Int.pipe(Schema.between(1, MAX_LIMIT))).annotations({ description: "most relations returned (default 50)" })
})

/** The tool over `service` (the atlas is derived on the first call). */
export const atlasTool = (service: AtlasService): McpTool<typeof AtlasInput.Type> => ({
  name: "chip_atlas",
  description:
    "What a wire of the 6502 die is part of: give `node` (a die name or number) for its partition group (132 groups over the die's nodes), " +
    "containers, functional block, role (signal, decode term, control line) and what it drives, is driven by and connects to (depth 1-4); " +
    "or `group` (kind:id) for one group with its bundles to other groups; or nothing for the atlas summary.",
  input: AtlasInput,
  handler: (input) =>
    Effect.sync(() => {
      try {
        const atlas = service.atlas()
        if (input.node === undefined && input.group === undefined) {
          const s = atlasSummary(atlas)
          return result({ counts: s.counts, layers: s.layers, kinds: s.kinds, blocks: s.blocks, roles: s.roles, walk: { ...s.walk, never_followed: s.walk.never_followed.length } })
        }
        const out: Record<string, unknown> = {}
        if (input.node !== undefined) {
          const node = nodeDetail(atlas, String(input.node))
          out.node = node
          if (node.group !== null) {
            const g = atlas.byKey.get(node.group)!
            out.group = { key: g.key, label: g.label, kind: g.kind, parent: g.parent, nodes: g.owned.length, names: g.owned.flatMap((x) => atlas.nodes[x]!.names.slice(0, 1)) }
          }
          out.neighbors = neighbors(atlas, { node: String(input.node), depth: input.depth, via: input.via, direction: input.direction, limit: input.limit ?? 50 })
        }
        if (input.group !== undefined) {
          const c = atlas.byKey.get(input.group)
          const g = groupDetail(atlas, input.group, c && c.owned.length === 0 ? "containers" : "partition")
          out.group_detail = "members" in g ? { ...g, members: g.members.map((m) => m.name ?? `#${m.id}`) } : g
        }
        return result(out)
      } catch (e) {
        return refusal(e instanceof AtlasQueryError ? e.message : `atlas unavailable: ${(e as Error).message}`)
      }
    })
})
