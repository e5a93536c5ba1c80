/**
 * Shared setup of the web plugin's tests: the plugin's ops built from a decoded config the way
 * `setup` builds them (`makeWebDeps`), with a real provider registry, and `runOp`, which calls an
 * op the way the graph engine does (params and input decoded by the op's Schemas, the output
 * checked by its output Schema).
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { GraphOpContext, GraphOperation } from "../../../core/Contribution.ts"
import * as Registry from "../../../core/Registry.ts"
import type { SearchProvider } from "../../../plugins/web/Contract.ts"
import { WebConfig } from "../../../plugins/web/plugin.ts"
import { makeWebDeps, webOps } from "../../../plugins/web/Setup.ts"

/** The web ops of a config (`overrides` of platform.yaml keys), by name, with their deps. */
export const webOpsFor = (overrides: Record<string, unknown> = {}) => {
  const config = Schema.decodeUnknownSync(WebConfig)(overrides)
  const providers = Registry.make<SearchProvider>("search provider")
  const { deps, searxng } = makeWebDeps(config, providers)
  Effect.runSync(providers.register("web", searxng.id, searxng))
  const ops = Object.fromEntries(webOps(deps).map((o) => [o.name, o])) as Record<string, GraphOperation>
  return { config, deps, providers, ops, close: () => deps.tor.close() }
}

/** Runs `op` as the engine would: decodes `params` and `input`, checks the output. */
export const runOp = async <O = any>(op: GraphOperation, params: Record<string, unknown>, input: unknown, ctx: GraphOpContext): Promise<O> => {
  const p = Schema.decodeUnknownSync(op.params)(params)
  const i = Schema.decodeUnknownSync(op.input)(input)
  const out = await op.handler(p, i, ctx)
  return Schema.decodeUnknownSync(op.output)(Schema.encodeSync(op.output)(out)) as O
}
