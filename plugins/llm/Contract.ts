/**
 * The public contract of the `llm` plugin: the only module of it other plugins import. A plugin
 * that asks a model (a crawl scoring pages) spreads `llmConfigFields` into its config and builds
 * a client with `chatClientFor(config, listener)`, so `base_url: null` reaches the gateway the
 * same way everywhere; `entityStoreDir` + `EntityStore` read the stores `store_entity` writes.
 */
import * as path from "node:path"

export { type CallOverrides, type ChatCall, type ChatClient, chatClientFor, type ChatClientOptions, gatewayUrlOf, llmConfigFields, type LlmConfig, makeChatClient, responseSchema, type Structured } from "./Client.ts"
export { scoreRelevance } from "./Relevance.ts"
export { EntityStore, entityKey, mergeEntities, StoredEntities, StoreName, type StoreSummary } from "./EntityStore.ts"

/** The directory of the entity stores under a platform data directory (`PlatformInfo.dataDir`). */
export const entityStoreDir = (platformDataDir: string): string => path.join(platformDataDir, "llm", "entities")
