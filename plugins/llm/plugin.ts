/**
 * Plugin `llm`: the language-model graph operations (`entities`, `topics`, `summarize`,
 * `integrate`, `chat`, `compare`, `to_report`) over an OpenAI-compatible chat completions API,
 * by default the platform's own gateway, and `store_entity` with its persisted entity stores.
 *
 * The gateway's address is looked up when an operation runs: listeners are bound after `setup`,
 * and in a process that serves no listener (a worker) the configured host and port are used.
 */
import * as Schema from "effect/Schema"
import { definePlugin, lazySetup } from "../../core/Plugin.ts"
import { llmConfigFields } from "./Config.ts"
import { StoredEntities } from "./EntityStore.ts"
import { Comparison, StoreEntityResult } from "./GraphOps.ts"

/** Config of `plugins.llm` in platform.yaml. */
export const LlmConfig = Schema.Struct(llmConfigFields).annotations({ identifier: "LlmConfig" })
export type LlmConfig = typeof LlmConfig.Type

const setup = lazySetup(() => import("./Setup.ts"))

export default definePlugin({
  name: "llm",
  version: "0.1.0",
  description: "Language-model graph operations (entities, topics, summarize, integrate, chat, compare, to_report) over an OpenAI-compatible API, by default the platform's gateway; store_entity into persisted entity stores.",
  // Graph operations run inside graph jobs: depending on `jobs` boots this plugin in every worker
  // process and thread too (they boot `jobs` and its dependents), where the graph engine runs them.
  dependsOn: ["jobs"],
  // No routes of its own; the graph operations run in graph jobs on the `jobs` listener.
  defaultListener: "jobs",
  config: LlmConfig,
  resources: { LlmComparison: Comparison, LlmStoreEntityResult: StoreEntityResult, EntityStoreFile: StoredEntities },
  setup
})
