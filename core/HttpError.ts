/**
 * An HTTP-shaped failure a handler can raise with its exact status, body and headers.
 *
 * Plugins whose service fixes its own error body (OpenAI's `{error:{...}}`, chip-sim's
 * `{error, line}`) fail with `HttpError`; it implements `HttpServerRespondable`, so the kernel
 * sends it as is. Plugin-specific `Schema.TaggedError` classes may instead carry an
 * `HttpApiSchema.annotations({ status })` and are sent as their encoded JSON.
 */
import * as HttpServerRespondable from "@effect/platform/HttpServerRespondable"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

export class HttpError extends Schema.TaggedError<HttpError>()("HttpError", {
  status: Schema.Number,
  body: Schema.Unknown,
  headers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
}) {
  get message(): string {
    const b = this.body as { error?: unknown } | undefined
    return typeof b?.error === "string" ? b.error : `HTTP ${this.status}`
  }

  [HttpServerRespondable.symbol]() {
    return Effect.succeed(
      HttpServerResponse.unsafeJson(this.body, { status: this.status, headers: this.headers ?? {} })
    )
  }

  /** `{error: message}` with a status: the common case. */
  static of(status: number, message: string, extra?: Record<string, unknown>): HttpError {
    return new HttpError({ status, body: { error: message, ...extra } })
  }
}
