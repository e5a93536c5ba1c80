/**
 * The graph operations this plugin owns: `merge` and `set` (Transform: the shape of pipelines
 * rather than a capability of another plugin) and `keyword_alerts` (Filter).
 */
import * as Schema from "effect/Schema"
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

/** `set` params: `value`, usually a `{{ expr }}` (which keeps its type: a list stays a list). */
export const SetParams = Schema.Struct({ value: Schema.Unknown })

/**
 * `set`: no input → the value of its `value` param: builds a state from inputs and expressions
 * (`value: "{{ [seed_url] }}"` makes a one-URL list). Its type is `any`: the engine checks its
 * readers at run time.
 */
export const setOp: GraphOperation<typeof SetParams.Type, null, unknown> = {
  name: "set",
  description: "Sets a state to the value of an expression (e.g. a list built from inputs).",
  category: "transform",
  params: SetParams,
  inputTypes: [],
  outputType: "any",
  input: Schema.Null,
  output: Schema.Unknown,
  handler: async (p) => p.value ?? null
}

/** `keyword_alerts` params: the keywords (case-insensitive, whole words) and the excerpt width. */
export const AlertParams = Schema.Struct({
  keywords: Schema.Array(Schema.String),
  context_chars: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 2000)), { default: () => 120 })
})

const TextValue = Schema.Union(Schema.String, Schema.Struct({ url: Schema.NullOr(Schema.String), title: Schema.NullOr(Schema.String), text: Schema.String }))
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * `keyword_alerts` (Filter): `text[]` → `alert[]`: one alert per keyword per text where the
 * keyword occurs as a whole word (case-insensitive), with the text's URL and an excerpt of
 * `context_chars` around the first occurrence. No keywords → no alerts.
 */
export const keywordAlertsOp: GraphOperation<typeof AlertParams.Type, ReadonlyArray<typeof TextValue.Type>, ReadonlyArray<{ keyword: string; url: string | null; excerpt: string }>> = {
  name: "keyword_alerts",
  description: "Raises an alert for each watched keyword found (whole word, any case) in monitored texts, with the URL and an excerpt.",
  category: "filter",
  params: AlertParams,
  inputTypes: ["text[]"],
  outputType: "alert[]",
  input: Schema.Array(TextValue),
  output: Schema.Array(Schema.Struct({ keyword: Schema.String, url: Schema.NullOr(Schema.String), excerpt: Schema.String })),
  handler: async (p, texts) => {
    const alerts: Array<{ keyword: string; url: string | null; excerpt: string }> = []
    for (const t of texts) {
      const text = typeof t === "string" ? t : t.text
      for (const k of p.keywords) {
        if (k.trim() === "") continue
        const m = new RegExp(`(?<![\\p{L}\\p{N}])${escape(k.trim())}(?![\\p{L}\\p{N}])`, "iu").exec(text)
        if (!m) continue
        const from = Math.max(0, m.index - p.context_chars)
        const excerpt = text.slice(from, m.index + m[0].length + p.context_chars).replace(/\s+/g, " ").trim()
        alerts.push({ keyword: k, url: typeof t === "string" ? null : t.url, excerpt })
      }
    }
    return alerts
  }
}
