/**
 * The public contract of the `llm` plugin: the only module of it other plugins import. A plugin
 * that asks a model (a crawl scoring pages) spreads `llmConfigFields` into its config and builds
 * a client with `chatClientFor(config, listener)`, so `base_url: null` reaches the gateway the
 * same way everywhere; `entityStoreDir` + `EntityStore` read the stores `store_entity` writes.
 */
import * as path from "node:path"
import { type CallOverrides, type ChatClient } from "./Client.ts"
import { RelevanceAnswer, relevancePrompt } from "./Prompts.ts"
import { fitBudget } from "./Sources.ts"

export { type CallOverrides, type ChatCall, type ChatClient, chatClientFor, type ChatClientOptions, gatewayUrlOf, llmConfigFields, type LlmConfig, makeChatClient, responseSchema, type Structured } from "./Client.ts"
export { EntityStore, entityKey, mergeEntities, StoredEntities, StoreName, type StoreSummary } from "./EntityStore.ts"

/** The directory of the entity stores under a platform data directory (`PlatformInfo.dataDir`). */
export const entityStoreDir = (platformDataDir: string): string => path.join(platformDataDir, "llm", "entities")

/**
 * How relevant `text` is to `query`, by the model: `score` 0 (unrelated) .. 10 (on the query),
 * clamped, and a one-sentence `reason`. `text` is shortened to the client's `max_input_chars`.
 * Rejects with `JobFailure` as every model call does (REMOTE_ERROR for an answer that does not
 * parse; the message starts with `op`, default "relevance").
 */
export const scoreRelevance = async (
  client: ChatClient,
  query: string,
  text: string,
  signal: AbortSignal,
  call: CallOverrides & { op?: string } = {}
): Promise<{ score: number; reason: string }> => {
  const [fitted] = fitBudget([{ text }], client.options.maxInputChars).items
  const { system, user } = relevancePrompt(query, fitted!.text)
  const r = await client.json({ op: call.op ?? "relevance", system, user, signal, baseUrl: call.baseUrl, model: call.model }, RelevanceAnswer)
  return { score: Number.isFinite(r.score) ? Math.min(10, Math.max(0, r.score)) : 0, reason: r.reason.trim() }
}
