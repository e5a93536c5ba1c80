/**
 * Small graph operations for the engine's own tests (contributed by a test plugin, registered in
 * a real registry): they exercise stage modes, types, failures and cancellation without the
 * network. Template tests use the real operations of the platform's plugins.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { GraphOperation } from "../../../core/Contribution.ts"
import * as Registry from "../../../core/Registry.ts"
import { JobFailure } from "../../../plugins/jobs/Contract.ts"
import { mergeOp } from "../../../plugins/job-graph/Ops.ts"

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms)
    signal.addEventListener("abort", () => {
      clearTimeout(t)
      reject(signal.reason ?? new Error("aborted"))
    }, { once: true })
  })

/** Live counters the tests read. */
export const probe = { running: 0, maxRunning: 0, aborted: 0, calls: 0 }

const op = <P, I, O>(o: GraphOperation<P, I, O>): GraphOperation => o as GraphOperation

/** The test operations. */
export const TEST_OPS: ReadonlyArray<GraphOperation> = [
  op({
    name: "list_urls",
    description: "n URLs http://h/<i>",
    category: "discover",
    params: Schema.Struct({ n: Schema.Int, prefix: Schema.optionalWith(Schema.String, { default: () => "http://h/" }) }),
    inputTypes: [],
    outputType: "url[]",
    input: Schema.Null,
    output: Schema.Array(Schema.String),
    handler: async (p) => Array.from({ length: p.n }, (_, i) => `${p.prefix}${i}`)
  }),
  op({
    name: "page",
    description: "a Page for a url; fails for URLs in params.fail; waits params.ms",
    category: "acquire",
    params: Schema.Struct({ url: Schema.String, fail: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }), ms: Schema.optionalWith(Schema.Int, { default: () => 0 }) }),
    inputTypes: [],
    outputType: "html",
    input: Schema.Null,
    output: Schema.Struct({ url: Schema.String, final_url: Schema.String, status: Schema.Int, content_type: Schema.String, html: Schema.String }),
    handler: async (p, _i, ctx) => {
      probe.calls++
      probe.running++
      probe.maxRunning = Math.max(probe.maxRunning, probe.running)
      try {
        if (p.ms > 0) await sleep(p.ms, ctx.signal).catch((e) => {
          probe.aborted++
          throw e
        })
        if (p.fail.includes(p.url)) throw new JobFailure("NETWORK_ERROR", `page: ${p.url} answered 500`)
        return { url: p.url, final_url: p.url, status: 200, content_type: "text/html", html: `<p>${p.url}</p>` }
      } finally {
        probe.running--
      }
    }
  }),
  op({
    name: "text_of",
    description: "html[] → text[]",
    category: "transform",
    params: Schema.Struct({}),
    inputTypes: ["html[]", "html"],
    outputType: "text[]",
    input: Schema.Union(Schema.Struct({ html: Schema.String, url: Schema.String }), Schema.Array(Schema.Struct({ html: Schema.String, url: Schema.String }))),
    output: Schema.Array(Schema.String),
    handler: async (_p, i) => (Array.isArray(i) ? i : [i]).map((x) => x.html.replace(/<[^>]+>/g, ""))
  }),
  op({
    name: "count",
    description: "length of a list → int",
    category: "transform",
    params: Schema.Struct({}),
    inputTypes: ["any[]"],
    outputType: "int",
    input: Schema.Array(Schema.Unknown),
    output: Schema.Int,
    handler: async (_p, i) => i.length
  }),
  op({
    name: "say",
    description: "returns params.text",
    category: "synthesize",
    params: Schema.Struct({ text: Schema.String }),
    inputTypes: ["any"],
    outputType: "text",
    input: Schema.Unknown,
    output: Schema.String,
    handler: async (p) => p.text
  }),
  op({
    name: "store_note",
    description: "stores params.text as a file",
    category: "store",
    params: Schema.Struct({ text: Schema.String }),
    inputTypes: [],
    outputType: "json",
    input: Schema.Null,
    output: Schema.Struct({ url: Schema.String }),
    handler: async (p, _i, ctx) => ({ url: (await ctx.files.put("note.md", p.text, "text/markdown")).url })
  }),
  op({
    name: "boom",
    description: "always fails",
    category: "process",
    params: Schema.Struct({ message: Schema.optionalWith(Schema.String, { default: () => "exploded" }) }),
    inputTypes: [],
    outputType: "json",
    input: Schema.Null,
    output: Schema.Unknown,
    handler: async (p) => {
      throw new JobFailure("REMOTE_ERROR", `boom: ${p.message}`)
    }
  }),
  mergeOp
]

/** A registry holding the test operations. */
export const testRegistry = () => {
  const r = Registry.make<GraphOperation>("graph operation")
  for (const o of TEST_OPS) Effect.runSync(r.register("test", o.name, o))
  return r
}
