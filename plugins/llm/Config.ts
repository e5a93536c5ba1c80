/**
 * The config keys of a model-calling plugin, apart from the client (which loads the `openai`
 * package): a plugin's declaration imports these, its setup the client.
 */
import * as Schema from "effect/Schema"
import { configOption } from "../../core/Plugin.ts"

const opt = configOption

/**
 * Config keys of a plugin that calls a model. The `llm` plugin's config is exactly these;
 * another plugin spreads them into its own config and builds a client with `chatClientFor`.
 */
export const llmConfigFields = {
  base_url: opt(
    Schema.NullOr(Schema.String.pipe(Schema.pattern(/^https?:\/\/\S+$/))),
    null,
    "OpenAI-compatible API base URL (e.g. http://127.0.0.1:8080/v1); null: the platform's own gateway, found on listener `gateway_listener` when an operation runs"
  ),
  gateway_listener: opt(Schema.String, "gateway", "listener the gateway plugin is mounted on (used when base_url is null)"),
  api_key: opt(Schema.String, "", "bearer token sent to the API (the gateway's `token`); write `${GATEWAY_TOKEN:-...}` so it comes from the environment; empty: no Authorization header"),
  model: opt(Schema.String.pipe(Schema.minLength(1)), "model-linear", "model id sent in `model`; an operation's param `model` overrides it"),
  timeout_s: opt(Schema.Number.pipe(Schema.between(0.1, 86_400)), 300, "deadline of one model call, retries included, seconds"),
  max_retries: opt(Schema.Int.pipe(Schema.between(0, 20)), 4, "retries of a call answered 408/409/429/5xx or not connected; the gateway's busy 503 carries Retry-After-ms, which is honoured"),
  max_input_chars: opt(Schema.Int.pipe(Schema.between(500, 10_000_000)), 12_000, "characters of input text one prompt carries at most; longer inputs are shortened with a note (12,000 characters is about 3,000 tokens, which fits the default 4,096-token engine with room for the answer)"),
  max_tokens: opt(Schema.NullOr(Schema.Int.pipe(Schema.between(1, 1_000_000))), null, "completion token limit sent with each call; null: the server's default")
}

/** The decoded `llmConfigFields`. */
export type LlmConfig = Schema.Struct.Type<typeof llmConfigFields>
