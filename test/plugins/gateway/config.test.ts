/** The gateway's config Schema and metrics text, without booting anything. */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import { GatewayConfig } from "../../../plugins/gateway/Config.ts"
import { Metrics } from "../../../plugins/gateway/Metrics.ts"

const decode = Schema.decodeUnknownEither(GatewayConfig)

describe("gateway config", () => {
  it("applies defaults per engine kind", () => {
    const r = decode({
      token: "t",
      engines: [
        { id: "model-linear", kind: "llama-cpp", model_path: "./m.gguf" },
        { id: "remote", kind: "upstream", url: "http://127.0.0.1:8080/v1", streaming: false }
      ]
    })
    expect(Either.isRight(r)).toBe(true)
    const c = Either.getOrThrow(r)
    expect(c.engines[0]).toMatchObject({ device: "cpu", streaming: true, default: false, context_size: 4096, batch_size: 512, max_tokens: 1024 })
    expect(c.engines[1]).toMatchObject({ streaming: false, timeout_ms: 600_000 })
    expect(c.retry_after_s).toBe(1)
  })

  it("refuses duplicate ids, two defaults, an unknown kind and an upstream without url", () => {
    const bad = [
      { token: "t", engines: [{ id: "a", kind: "upstream", url: "http://x/v1" }, { id: "a", kind: "upstream", url: "http://y/v1" }] },
      { token: "t", engines: [{ id: "a", kind: "upstream", url: "http://x/v1", default: true }, { id: "b", kind: "upstream", url: "http://y/v1", default: true }] },
      { token: "t", engines: [{ id: "a", kind: "gpu" }] },
      { token: "t", engines: [{ id: "a", kind: "upstream" }] },
      { token: "", engines: [{ id: "a", kind: "upstream", url: "http://x/v1" }] },
      { token: "t", engines: [] }
    ]
    for (const c of bad) expect(Either.isLeft(decode(c)), JSON.stringify(c)).toBe(true)
  })

  it("accepts an empty admin token (an unset env var) as loopback-only", () => {
    expect(Either.isRight(decode({ token: "t", admin_token: null, engines: [{ id: "a", kind: "upstream", url: "http://x/v1" }] }))).toBe(true)
  })
})

describe("gateway metrics", () => {
  it("renders Prometheus text with every engine listed", () => {
    const m = new Metrics()
    m.request("a", 200)
    m.request("a", 503)
    m.refusal("a", "busy")
    m.generated("a", 12)
    m.firstToken("a", 0.02)
    const text = m.render(["a", "b"])
    expect(text).toContain('gateway_requests_total{engine="a",status="200"} 1')
    expect(text).toContain('gateway_refusals_total{engine="a",reason="busy"} 1')
    expect(text).toContain('gateway_refusals_total{engine="b",reason="busy"} 0')
    expect(text).toContain('gateway_tokens_generated_total{engine="a"} 12')
    expect(text).toContain('gateway_time_to_first_token_seconds_bucket{engine="a",le="0.025"} 1')
    expect(text).toContain('gateway_time_to_first_token_seconds_bucket{engine="a",le="0.01"} 0')
    expect(text).toContain('gateway_time_to_first_token_seconds_count{engine="a"} 1')
    expect(text.endsWith("\n")).toBe(true)
  })
})
