/**
 * Shared material of the llm tests: a small corpus about two companies (entities, dates and
 * places the model fixture finds by pattern) and a chat client pointed at a fixture.
 */
import type { Chunk, Doc } from "../../../core/GraphTypes.ts"
import { type ChatClientOptions, makeChatClient } from "../../../plugins/llm/Contract.ts"

export const NEWS: Doc = {
  url: "https://news.example/acme",
  title: "Acme expands",
  text: "Acme Robotics opened a new factory in Berlin on March 3, 2026. Maria Lopez, the chief executive of Acme Robotics, said the plant will build delivery robots. The factory employs 400 workers. Maria Lopez announced the plan at the Hannover Robotics Summit."
}

export const BLOG: Doc = {
  url: "https://blog.example/robots",
  title: "Robots in retail",
  text: "Delivery robots from Acme Robotics now serve shops in Paris. John Chen of Bolt Corp said competition is rising. Bolt Corp plans to enter Berlin on 2026-05-01. Analysts expect robot delivery prices to fall."
}

/** The two documents as chunks (two per document), the shape `semantic_filter` hands `integrate`. */
export const CHUNKS: Array<Chunk> = [
  { text: "Acme Robotics opened a new factory in Berlin on March 3, 2026. Maria Lopez, the chief executive of Acme Robotics, said the plant will build delivery robots.", source: NEWS.url, index: 0 },
  { text: "Delivery robots from Acme Robotics now serve shops in Paris. John Chen of Bolt Corp said competition is rising.", source: BLOG.url, index: 0 },
  { text: "The factory employs 400 workers. Maria Lopez announced the plan at the Hannover Robotics Summit.", source: NEWS.url, index: 1, score: 0.8 },
  { text: "Bolt Corp plans to enter Berlin on 2026-05-01. Analysts expect robot delivery prices to fall.", source: BLOG.url, index: 1 }
]

/** A client of the fixture at `url` (no retries, short deadline) with `over` on top. */
export const clientOf = (url: string, over: Partial<ChatClientOptions> = {}) =>
  makeChatClient({
    baseUrl: url,
    gateway: () => undefined,
    gatewayListener: "gateway",
    apiKey: "test-key",
    model: "model-linear",
    timeoutMs: 10_000,
    maxRetries: 0,
    maxInputChars: 12_000,
    maxTokens: null,
    ...over
  })

/** The user message of a recorded chat request. */
export const userOf = (body: any): string => body.messages.find((m: any) => m.role === "user").content
