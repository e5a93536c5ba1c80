import { describe, expect, it } from "vitest"
import { backoffSeconds, newJobId, shouldRetry } from "../../../../plugins/jobs/runtime/Job.ts"
import { classify } from "../../../../plugins/jobs/runtime/Classify.ts"
import { JobFailure } from "../../../../plugins/jobs/Contract.ts"

const policy = { max_retries: 3, retry_on: ["TIMEOUT", "NETWORK_ERROR"] as const, no_retry_on: ["VALIDATION_ERROR"] as const }

describe("job rules", () => {
  it("backs off min(30 s * 2^(attempt-1), 3600 s)", () => {
    expect([1, 2, 3, 4, 7, 8, 20].map((a) => backoffSeconds(a, 30, 3600))).toEqual([30, 60, 120, 240, 1920, 3600, 3600])
  })

  it("retries kinds in retry_on while attempts <= max_retries; never no_retry_on or CANCELLED", () => {
    expect(shouldRetry(policy, 1, "NETWORK_ERROR")).toBe(true)
    expect(shouldRetry(policy, 3, "TIMEOUT")).toBe(true)
    expect(shouldRetry(policy, 4, "TIMEOUT")).toBe(false)
    expect(shouldRetry(policy, 1, "REMOTE_ERROR")).toBe(false)
    expect(shouldRetry(policy, 1, "REMOTE_ERROR", true)).toBe(true)
    expect(shouldRetry(policy, 1, "NETWORK_ERROR", false)).toBe(false)
    expect(shouldRetry({ ...policy, retry_on: ["VALIDATION_ERROR"] }, 1, "VALIDATION_ERROR", true)).toBe(false)
    expect(shouldRetry(policy, 1, "CANCELLED")).toBe(false)
  })

  it("makes time-ordered unguessable ids", () => {
    const a = newJobId(1_000)
    const b = newJobId(2_000)
    expect(a).toMatch(/^job_[0-9a-z]{26}$/)
    expect(a < b).toBe(true)
    expect(newJobId(1_000)).not.toBe(a)
  })

  it("classifies handler errors into failure kinds", () => {
    expect(classify(new JobFailure("REMOTE_ERROR", "x", true))).toEqual({ kind: "REMOTE_ERROR", message: "x", retryable: true })
    const refused = Object.assign(new TypeError("fetch failed"), { cause: { code: "ECONNREFUSED", message: "connect ECONNREFUSED" } })
    expect(classify(refused)).toMatchObject({ kind: "NETWORK_ERROR" })
    expect(classify(new DOMException("timed out", "TimeoutError"))).toMatchObject({ kind: "TIMEOUT" })
    expect(classify(new Error("boom"))).toEqual({ kind: "INTERNAL_ERROR", message: "boom" })
  })
})
