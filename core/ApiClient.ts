/**
 * What CLI commands that manage a running platform share: the `--api-url` flag (a service's base
 * URL, also from an environment variable ending in `_API_URL`) and one HTTP call answering the
 * status and parsed JSON body, or failing with one readable line: `ApiUnreachable` (nothing
 * answers: connection refused, DNS, timeout) or `ApiFailure` (the API answered 4xx/5xx; `body`
 * is its error document). Both carry a `_tag`, so `PlatformCommand.fail` prints their message
 * and exits 1. Uses only `fetch`: the commands start without loading the platform, nor Effect
 * (so the two are plain `Error`s with a `_tag`, not `Data.TaggedError`s: effect/Data is about 62 modules).
 */
import { Flags } from "@oclif/core"

/** `--api-url URL`: the flag, else environment variable `env` (a name ending in `_API_URL`), else `fallback`. */
export const apiUrlFlag = (env: `${string}_API_URL`, fallback: string) =>
  Flags.string({ summary: `Base URL of the API (env ${env}; default ${fallback}).`, env, default: fallback })

/** Nothing answered at the API's address. */
export class ApiUnreachable extends Error {
  readonly _tag = "ApiUnreachable"
  constructor(readonly url: string, cause: string) {
    super(`cannot reach the API at ${url} (${cause}): is \`platform serve\` running there? Set --api-url or PLATFORM_API_URL.`)
  }
}

/** The API answered with an error status; `body` is what it said (parsed JSON, or text). */
export class ApiFailure extends Error {
  readonly _tag = "ApiFailure"
  constructor(readonly status: number, readonly body: unknown, what: string) {
    const said = (body as { error?: unknown })?.error
    const detail = typeof said === "string" ? said : typeof said === "object" && said !== null && "message" in said ? String((said as { message: unknown }).message) : typeof body === "string" && body ? body.slice(0, 200) : JSON.stringify(body)
    super(`${what}: HTTP ${status}: ${detail}`)
  }
}

/** A response: status and body (JSON parsed when it is JSON, else the text). */
export interface ApiResponse<A = unknown> {
  readonly status: number
  readonly body: A
}

/** Why a fetch failed, in a few words (`ECONNREFUSED`, `timed out after 10 s`). */
const causeOf = (e: unknown, timeoutMs: number): string => {
  const err = e as Error & { cause?: { code?: string; message?: string } }
  if (err?.name === "TimeoutError") return `no answer within ${timeoutMs / 1000} s`
  return err?.cause?.code ?? err?.cause?.message ?? err?.message ?? String(e)
}

/**
 * `method base+path` with an optional JSON `body`. Resolves with any status in `accept` (default:
 * 2xx); rejects with `ApiFailure` for other statuses, `ApiUnreachable` when nothing answers within
 * `timeoutMs` (default 10 s).
 */
export const callApi = async <A = unknown>(
  base: string,
  method: string,
  path: string,
  options: { readonly body?: unknown; readonly accept?: ReadonlyArray<number>; readonly timeoutMs?: number } = {}
): Promise<ApiResponse<A>> => {
  const url = `${base.replace(/\/+$/, "")}${path}`
  const timeoutMs = options.timeoutMs ?? 10_000
  let res: Response
  let text: string
  try {
    res = await fetch(url, {
      method,
      headers: options.body === undefined ? { accept: "application/json" } : { accept: "application/json", "content-type": "application/json" },
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      signal: AbortSignal.timeout(timeoutMs)
    })
    text = await res.text()
  } catch (e) {
    throw new ApiUnreachable(base, causeOf(e, timeoutMs))
  }
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {
    // Not JSON (a proxy's error page): kept as text.
  }
  const ok = options.accept ? options.accept.includes(res.status) : res.status >= 200 && res.status < 300
  if (!ok) throw new ApiFailure(res.status, body, `${method} ${path}`)
  return { status: res.status, body: body as A }
}
