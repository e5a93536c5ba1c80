/** Relevance scoring by the model, shared by the `llm` operations and, through `Contract.ts`, the crawl job. */
import type { CallOverrides, ChatClient } from "./Client.ts"
import { RelevanceAnswer, relevancePrompt } from "./Prompts.ts"
import { fitBudget } from "./Sources.ts"

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
