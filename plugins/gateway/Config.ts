/**
 * The gateway's section of `platform.yaml`: the engines it serves and the tokens guarding it.
 * Field names are snake_case, as everywhere in `platform.yaml`.
 */
import * as Schema from "effect/Schema"

const EngineId = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/)).annotations({
  description: "model id clients send in `model`"
})

const common = {
  id: EngineId,
  streaming: Schema.optionalWith(Schema.Boolean, { default: () => true }).annotations({
    description: "whether `stream: true` is accepted"
  }),
  default: Schema.optionalWith(Schema.Boolean, { default: () => false }).annotations({
    description: "serves requests without `model`; the first engine when none is marked"
  })
}

/** An in-process llama.cpp engine (node-llama-cpp) over a GGUF file. */
export const LlamaCppEngineConfig = Schema.Struct({
  ...common,
  kind: Schema.Literal("llama-cpp"),
  device: Schema.optionalWith(Schema.Literal("cpu", "gpu"), { default: () => "cpu" as const }).annotations({
    description: "cpu: weights memory-mapped, no offloading; gpu: every layer offloaded to VRAM"
  }),
  model_path: Schema.String.annotations({ description: "GGUF file, relative to the config file" }),
  threads: Schema.optional(Schema.Int.pipe(Schema.between(0, 1024)).annotations({
    description: "CPU threads generating tokens; 0 or absent: the thread policy's default (the engine's share of the physical cores left after `reserved_cores`, at least 1; see the README's thread policy)"
  })),
  threads_batch: Schema.optional(Schema.Int.pipe(Schema.between(0, 1024)).annotations({
    description: "CPU threads evaluating prompts (batches of more than one token); 0 or absent: the same as `threads`"
  })),
  embedding_model_path: Schema.optional(Schema.String.annotations({
    description: "GGUF file serving /v1/embeddings for this engine, relative to the config file (may be `model_path` itself); absent: embeddings are refused with 400"
  })),
  context_size: Schema.optionalWith(Schema.Int.pipe(Schema.between(16, 1 << 20)), { default: () => 4096 }).annotations({
    description: "context window in tokens: a prompt plus its completion budget over it is a 400 `context_length_exceeded` (the KV cache holds one token more; it bounds RAM/VRAM use)"
  }),
  batch_size: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 1 << 16)), { default: () => 512 }).annotations({
    description: "prompt evaluation batch size in tokens"
  }),
  max_tokens: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { default: () => 1024 }).annotations({
    description: "completion length when a request sets neither `max_completion_tokens` nor `max_tokens` (shortened to the room the prompt leaves in the context)"
  })
}).annotations({ identifier: "GatewayLlamaCppEngine" })
export type LlamaCppEngineConfig = Schema.Schema.Type<typeof LlamaCppEngineConfig>

/** Forwards to an OpenAI-compatible server. */
export const UpstreamEngineConfig = Schema.Struct({
  ...common,
  kind: Schema.Literal("upstream"),
  url: Schema.String.pipe(Schema.pattern(/^https?:\/\//)).annotations({
    description: "base URL of the OpenAI API, e.g. http://127.0.0.1:8080/v1 (POSTs go to <url>/chat/completions)"
  }),
  api_key: Schema.optional(Schema.String).annotations({ description: "sent upstream as a bearer token" }),
  upstream_model: Schema.optional(Schema.String).annotations({
    description: "replaces `model` in forwarded requests; absent forwards the engine id"
  }),
  timeout_ms: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { default: () => 600_000 }).annotations({
    description: "socket inactivity bound for one upstream call, in ms"
  })
}).annotations({ identifier: "GatewayUpstreamEngine" })
export type UpstreamEngineConfig = Schema.Schema.Type<typeof UpstreamEngineConfig>

/** One engine entry, discriminated by `kind`. */
export const EngineConfig = Schema.Union(LlamaCppEngineConfig, UpstreamEngineConfig)
export type EngineConfig = Schema.Schema.Type<typeof EngineConfig>

/** The whole `plugins.gateway` section. */
export const GatewayConfig = Schema.Struct({
  token: Schema.String.pipe(Schema.minLength(1)).annotations({
    description: "bearer token for /v1/*; write `${GATEWAY_TOKEN:-...}` so it comes from the environment"
  }),
  // Null/empty (an unset `${GATEWAY_ADMIN_TOKEN:-}`) means loopback clients only.
  admin_token: Schema.optional(Schema.NullOr(Schema.String)).annotations({
    description: "bearer token that opens /healthz and /metrics to non-loopback clients; empty: loopback only"
  }),
  retry_after_s: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { default: () => 1 }).annotations({
    description: "Retry-After of a busy refusal while the engine's pace is unknown (no generation measured yet), in seconds; otherwise it is derived from the running generation's remaining budget"
  }),
  reserved_cores: Schema.optional(Schema.Int.pipe(Schema.between(0, 1024)).annotations({
    description: "physical cores the thread policy leaves to the rest of the process (event loop, chip-sim and jobs workers) before sharing the others among the CPU llama-cpp engines; absent: max(1, floor(physical cores / 4)), physical cores as counted from /proc and /sys, else os.availableParallelism()"
  })),
  engines: Schema.Array(EngineConfig).pipe(Schema.minItems(1))
}).pipe(
  Schema.filter((c) => {
    const ids = c.engines.map((e) => e.id)
    const dup = ids.find((id, i) => ids.indexOf(id) !== i)
    if (dup !== undefined) return { path: ["engines"], message: `duplicate engine id "${dup}"` }
    if (c.engines.filter((e) => e.default).length > 1) return { path: ["engines"], message: "at most one engine may be `default: true`" }
    return true
  })
).annotations({ identifier: "GatewayConfig", description: "the inference gateway: engines and tokens" })
export type GatewayConfig = Schema.Schema.Type<typeof GatewayConfig>
