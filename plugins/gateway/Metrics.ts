/**
 * The gateway's Prometheus metrics, kept as plain counters: the hot paths (a refusal, a token)
 * only bump numbers, and `render` formats them on scrape.
 */

/** Upper bounds of the time-to-first-token histogram, in seconds. */
const TTFT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]

const label = (v: string) => v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")

interface Histogram { counts: number[]; sum: number; count: number }

/** Counters by engine; an engine of `"none"` is a request refused before an engine was chosen. */
export class Metrics {
  private readonly requests = new Map<string, number>()
  private readonly refusals = new Map<string, number>()
  private readonly tokens = new Map<string, number>()
  private readonly ttft = new Map<string, Histogram>()
  private readonly inFlight = new Map<string, number>()

  /** Counts one answered request with its HTTP status (499: the client went away). */
  request(engine: string, status: number): void {
    const k = `${engine}\u0000${status}`
    this.requests.set(k, (this.requests.get(k) ?? 0) + 1)
  }

  /** Counts one 503 refusal: `reason` is `busy` or `unavailable`. */
  refusal(engine: string, reason: "busy" | "unavailable"): void {
    const k = `${engine}\u0000${reason}`
    this.refusals.set(k, (this.refusals.get(k) ?? 0) + 1)
  }

  /** Adds `n` generated tokens. */
  generated(engine: string, n: number): void {
    if (n > 0) this.tokens.set(engine, (this.tokens.get(engine) ?? 0) + n)
  }

  /** Records one time to first token, in seconds. */
  firstToken(engine: string, seconds: number): void {
    let h = this.ttft.get(engine)
    if (!h) { h = { counts: TTFT_BUCKETS.map(() => 0), sum: 0, count: 0 }; this.ttft.set(engine, h) }
    for (let i = 0; i < TTFT_BUCKETS.length; i++) if (seconds <= TTFT_BUCKETS[i]!) h.counts[i]!++
    h.sum += seconds
    h.count++
  }

  /** Marks an engine busy (1) or idle (0). */
  busy(engine: string, busy: boolean): void {
    this.inFlight.set(engine, busy ? 1 : 0)
  }

  /** Total requests counted for `engine` with `status` (tests, bench). */
  requestCount(engine: string, status: number): number {
    return this.requests.get(`${engine}\u0000${status}`) ?? 0
  }

  /** Prometheus text exposition format 0.0.4. `engines` are listed even before any traffic. */
  render(engines: ReadonlyArray<string>): string {
    const out: string[] = []
    out.push("# HELP gateway_requests_total Chat completion requests answered, by engine and HTTP status.")
    out.push("# TYPE gateway_requests_total counter")
    for (const [k, v] of this.requests) {
      const [engine, status] = k.split("\u0000")
      out.push(`gateway_requests_total{engine="${label(engine!)}",status="${status}"} ${v}`)
    }
    out.push("# HELP gateway_refusals_total Requests refused with 503 (engine busy or unavailable).")
    out.push("# TYPE gateway_refusals_total counter")
    for (const e of engines) {
      for (const reason of ["busy", "unavailable"]) {
        out.push(`gateway_refusals_total{engine="${label(e)}",reason="${reason}"} ${this.refusals.get(`${e}\u0000${reason}`) ?? 0}`)
      }
    }
    out.push("# HELP gateway_tokens_generated_total Tokens generated (upstream streams: chunks).")
    out.push("# TYPE gateway_tokens_generated_total counter")
    for (const e of engines) out.push(`gateway_tokens_generated_total{engine="${label(e)}"} ${this.tokens.get(e) ?? 0}`)
    out.push("# HELP gateway_engine_busy 1 while the engine is generating.")
    out.push("# TYPE gateway_engine_busy gauge")
    for (const e of engines) out.push(`gateway_engine_busy{engine="${label(e)}"} ${this.inFlight.get(e) ?? 0}`)
    out.push("# HELP gateway_time_to_first_token_seconds Time from accepting a request to its first generated token.")
    out.push("# TYPE gateway_time_to_first_token_seconds histogram")
    for (const e of engines) {
      const h = this.ttft.get(e) ?? { counts: TTFT_BUCKETS.map(() => 0), sum: 0, count: 0 }
      TTFT_BUCKETS.forEach((b, i) => out.push(`gateway_time_to_first_token_seconds_bucket{engine="${label(e)}",le="${b}"} ${h.counts[i]}`))
      out.push(`gateway_time_to_first_token_seconds_bucket{engine="${label(e)}",le="+Inf"} ${h.count}`)
      out.push(`gateway_time_to_first_token_seconds_sum{engine="${label(e)}"} ${h.sum}`)
      out.push(`gateway_time_to_first_token_seconds_count{engine="${label(e)}"} ${h.count}`)
    }
    return out.join("\n") + "\n"
  }
}
