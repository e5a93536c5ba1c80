/**
 * The graph operations this plugin owns: `merge` (Transform), the one operation about the
 * shape of pipelines rather than a capability of another plugin.
 */
import { Schema } from "effect"
import type { GraphOperation } from "../../core/Contribution.ts"

/** `merge` params: de-duplicate (by `key` field of objects, else the value), keep at most `max`. */
export const MergeParams = Schema.Struct({
  dedupe: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  key: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  max: Schema.optionalWith(Schema.NullOr(Schema.Int.pipe(Schema.positive())), { default: () => null })
})

const keyOf = (v: unknown, key: string | null): string => {
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>
    const k = key ?? ("url" in o ? "url" : "id" in o ? "id" : null)
    if (k !== null && o[k] !== undefined) return `${k}:${JSON.stringify(o[k])}`
  }
  return JSON.stringify(v)
}

/**
 * `merge`: several list states (`input: [a, b, ...]`) → one list: the lists concatenated in the
 * order named, de-duplicated (first occurrence kept; objects by their `key` param, else their
 * `url`, else `id`, else their JSON) and cut to `max`. The output has the type of the inputs when
 * they all hold the same list type. A state not written (a skipped conditional branch) is left out.
 */
export const mergeOp: GraphOperation<typeof MergeParams.Type, ReadonlyArray<ReadonlyArray<unknown>>, ReadonlyArray<unknown>> = {
  name: "merge",
  description: "Concatenates list states in the order named, de-duplicating (by url/id/key or value) and keeping at most max.",
  category: "transform",
  params: MergeParams,
  inputTypes: ["any[]"],
  outputType: "any[]",
  input: Schema.Array(Schema.Array(Schema.Unknown)).annotations({ message: () => "merge takes a list of list states: input: [a, b]" }),
  output: Schema.Array(Schema.Unknown),
  handler: async (p, lists) => {
    const out: Array<unknown> = []
    const seen = new Set<string>()
    for (const l of lists) {
      for (const v of l) {
        if (p.dedupe) {
          const k = keyOf(v, p.key)
          if (seen.has(k)) continue
          seen.add(k)
        }
        out.push(v)
        if (p.max !== null && out.length >= p.max) return out
      }
    }
    return out
  }
}
