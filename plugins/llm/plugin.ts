/**
 * Plugin `llm`: the language-model graph operations (`entities`, `topics`, `summarize`,
 * `integrate`, `chat`, `compare`, `to_report`) over an OpenAI-compatible chat completions API,
 * by default the platform's own gateway, and `store_entity` with its persisted entity stores.
 *
 * The gateway's address is looked up when an operation runs: listeners are bound after `setup`,
 * and in a process that serves no listener (a worker) the configured host and port are used.
 */
import * as path from "node:path"
import { Effect, Schema } from "effect"
import { parseConfig } from "../../core/Config.ts"
import type { ListenerInfo } from "../../core/Plugin.ts"
import { definePlugin } from "../../core/Plugin.ts"
import { chatClientFor, llmConfigFields } from "./Client.ts"
import { EntityStore, StoredEntities } from "./EntityStore.ts"
import { Comparison, llmOps, StoreEntityResult } from "./GraphOps.ts"

/** Config of `plugins.llm` in platform.yaml. */
export const LlmConfig = Schema.Struct(llmConfigFields).annotations({ identifier: "LlmConfig" })
export type LlmConfig = typeof LlmConfig.Type

/**
 * A listener as configured in `source` (host and port from the config text), for processes
 * that do not bind it themselves; undefined for an unknown name or port 0 (known only where bound).
 */
export const configuredListener = (source: { file: string; text: string }) => {
  let listeners: ReadonlyArray<{ name: string; host: string; port: number }> | undefined
  return (name: string): ListenerInfo | undefined => {
    try {
      listeners ??= parseConfig(source.file, source.text).config.listeners
    } catch {
      listeners = []
    }
    const l = listeners.find((x) => x.name === name)
    return l && l.port !== 0 ? { name, host: l.host, port: l.port, url: `http://${l.host.includes(":") ? `[${l.host}]` : l.host}:${l.port}` } : undefined
  }
}

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
  setup: (ctx) =>
    Effect.sync(() => {
      const fromConfig = configuredListener(ctx.source)
      const client = chatClientFor(ctx.config, (name) => ctx.listenerInfo(name) ?? fromConfig(name))
      const store = new EntityStore(path.join(ctx.dataDir, "entities"))
      return {
        graphOps: llmOps(client, store),
        status: () => ({ endpoint: ctx.config.base_url ?? `gateway (listener ${ctx.config.gateway_listener})`, model: ctx.config.model })
      }
    })
})
