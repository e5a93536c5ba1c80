/** The `llm` plugin's implementation, imported when the plugin is set up (see `plugin.ts`). */
import * as path from "node:path"
import * as Effect from "effect/Effect"
import { parseConfig } from "../../core/Config.ts"
import type { ListenerInfo } from "../../core/Plugin.ts"
import { chatClientFor } from "./Client.ts"
import { EntityStore } from "./EntityStore.ts"
import { llmOps } from "./GraphOps.ts"
import type { PluginContext } from "../../core/Plugin.ts"
import type { LlmConfig } from "./plugin.ts"

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

/** `setup` of the plugin: the chat client (the gateway found by listener when an operation runs) and the entity stores under the plugin's data folder, with the language-model operations over them. */
export const setup = (ctx: PluginContext<LlmConfig>) =>
  Effect.sync(() => {
    const fromConfig = configuredListener(ctx.source)
    const client = chatClientFor(ctx.config, (name) => ctx.listenerInfo(name) ?? fromConfig(name))
    const store = new EntityStore(path.join(ctx.dataDir, "entities"))
    return {
      graphOps: llmOps(client, store),
      status: () => ({ endpoint: ctx.config.base_url ?? `gateway (listener ${ctx.config.gateway_listener})`, model: ctx.config.model })
    }
  })
