/**
 * How a failed attempt and a refused payload are described: `classify` maps what a handler threw
 * to the spec's error kinds (JobFailure, TIMEOUT, NETWORK_ERROR, INTERNAL_ERROR), and
 * `formatIssues`/`issueList` turn Schema parse issues into VALIDATION_ERROR messages and details.
 */
import { issuesOf } from "../../../core/Issues.ts"
import { type JobErrorKind, JobFailure } from "../JobType.ts"

const NETWORK_CODES = new Set([
  "ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_SOCKET", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"
])

/**
 * Maps anything a handler threw to a failure kind and message: `JobFailure` keeps its kind;
 * abort/timeout errors are TIMEOUT; socket and DNS errors (also as the `cause` of a failed
 * `fetch`) are NETWORK_ERROR; the rest is INTERNAL_ERROR.
 */
export const classify = (e: unknown): { kind: JobErrorKind; message: string; retryable?: boolean; details?: Record<string, unknown> } => {
  if (e instanceof JobFailure) {
    return { kind: e.kind, message: e.message, ...(e.retryable !== undefined ? { retryable: e.retryable } : {}), ...(e.details !== undefined ? { details: e.details } : {}) }
  }
  const err = e as { name?: string; message?: string; code?: string; cause?: { code?: string; message?: string } }
  const message = err?.message ?? String(e)
  if (err?.name === "TimeoutError" || err?.name === "AbortError") return { kind: "TIMEOUT", message }
  const code = err?.code ?? err?.cause?.code
  if (code && NETWORK_CODES.has(code)) return { kind: "NETWORK_ERROR", message: err.cause?.message ? `${message}: ${err.cause.message}` : message }
  return { kind: "INTERNAL_ERROR", message }
}

/**
 * Formats Schema parse issues as `field.path: message; ...` (VALIDATION_ERROR messages); paths
 * start with `prefix` when given; an issue about the whole value is named `prefix` or `(body)`.
 */
export const formatIssues = (error: import("effect/ParseResult").ParseError, prefix?: string): string =>
  issueList(error, prefix).map((i) => `${i.path}: ${i.message}`).join("; ")

/** The issues of a decoding error as `{path, message}` (path dotted; `(body)` for the root). */
export const issueList = (error: import("effect/ParseResult").ParseError, prefix?: string): Array<{ path: string; message: string }> =>
  issuesOf(error).map((i) => {
    const p = [...(prefix ? [prefix] : []), ...i.path.map(String)]
    return { path: p.length > 0 ? p.join(".") : "(body)", message: i.message }
  })

