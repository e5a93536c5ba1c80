/**
 * A minimal S3-compatible object client (AWS Signature Version 4 over `fetch` and `node:crypto`),
 * enough for the file store: put, get, delete and list (ListObjectsV2) with path-style URLs
 * (`<endpoint>/<bucket>/<key>`), which MinIO, Ceph, R2 and AWS all accept. No SDK dependency.
 */
import { createHash, createHmac } from "node:crypto"

/** Connection settings of an S3-compatible bucket. */
export interface S3Settings {
  /** Base URL, e.g. `https://s3.eu-west-1.amazonaws.com` or `http://127.0.0.1:9000`. */
  readonly endpoint: string
  readonly bucket: string
  readonly region: string
  readonly access_key_id: string
  readonly secret_access_key: string
}

const sha256Hex = (data: string | Uint8Array): string => createHash("sha256").update(data).digest("hex")
const hmac = (key: string | Buffer, data: string): Buffer => createHmac("sha256", key).update(data).digest()

/** RFC 3986 encoding as SigV4 wants it (`/` kept in paths). */
const uriEncode = (s: string, keepSlash: boolean): string => {
  const encoded = encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  // (A /$^/ pattern for "no slashes" would match the empty string: "" must stay "".)
  return keepSlash ? encoded.replace(/%2F/g, "/") : encoded
}

/** What `signV4` needs about one request. `headers` are signed as given (lower-cased names). */
export interface SignInput {
  readonly method: string
  readonly url: URL
  readonly headers: Record<string, string>
  /** Hex SHA-256 of the body, or `UNSIGNED-PAYLOAD`. */
  readonly payloadHash: string
  readonly region: string
  readonly service?: string
  readonly accessKeyId: string
  readonly secretAccessKey: string
  /** Signing time; defaults to now. */
  readonly date?: Date
}

/**
 * Signs a request with AWS SigV4. Returns the headers to send: the given ones plus `host`,
 * `x-amz-date`, `x-amz-content-sha256` and `authorization`. Pure apart from reading the clock.
 */
export const signV4 = (input: SignInput): Record<string, string> => {
  const date = input.date ?? new Date()
  const amzDate = date.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "")
  const day = amzDate.slice(0, 8)
  const service = input.service ?? "s3"
  const headers: Record<string, string> = {}
  for (const [k, v] of Object.entries(input.headers)) headers[k.toLowerCase()] = v
  headers["host"] = input.url.host
  headers["x-amz-date"] = amzDate
  headers["x-amz-content-sha256"] = input.payloadHash
  const names = Object.keys(headers).sort()
  const canonicalHeaders = names.map((n) => `${n}:${headers[n]!.trim().replace(/\s+/g, " ")}\n`).join("")
  const signedHeaders = names.join(";")
  const query = [...input.url.searchParams.entries()]
    .map(([k, v]) => [uriEncode(k, false), uriEncode(v, false)] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join("&")
  const canonicalPath = uriEncode(decodeURIComponent(input.url.pathname), true)
  const canonical = [input.method, canonicalPath, query, canonicalHeaders, signedHeaders, input.payloadHash].join("\n")
  const scope = `${day}/${input.region}/${service}/aws4_request`
  const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256Hex(canonical)].join("\n")
  const key = hmac(hmac(hmac(hmac(`AWS4${input.secretAccessKey}`, day), input.region), service), "aws4_request")
  const signature = createHmac("sha256", key).update(toSign).digest("hex")
  headers["authorization"] =
    `AWS4-HMAC-SHA256 Credential=${input.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`
  return headers
}

/** The text of an XML element's content (the five predefined entities and numeric references). */
const xmlText = (s: string): string =>
  s.replace(/&(#x[0-9a-fA-F]+|#\d+|amp|lt|gt|quot|apos);/g, (_, e: string) =>
    e[0] === "#" ? String.fromCodePoint(e[1] === "x" ? parseInt(e.slice(2), 16) : Number(e.slice(1))) : ({ amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'" } as Record<string, string>)[e]!)

/** Object operations on one bucket. Errors: rejects with an Error naming the S3 status. */
export class S3Client {
  constructor(private readonly s: S3Settings) {}

  private url(key: string): URL {
    const base = this.s.endpoint.replace(/\/+$/, "")
    return new URL(`${base}/${this.s.bucket}/${key.split("/").map((p) => uriEncode(p, false)).join("/")}`)
  }

  private async send(method: string, key: string, body?: Uint8Array, extra: Record<string, string> = {}, query?: Record<string, string>): Promise<Response> {
    const url = this.url(key)
    for (const [k, v] of Object.entries(query ?? {})) url.searchParams.set(k, v)
    const headers = signV4({
      method,
      url,
      headers: extra,
      payloadHash: body ? sha256Hex(body) : sha256Hex(""),
      region: this.s.region,
      accessKeyId: this.s.access_key_id,
      secretAccessKey: this.s.secret_access_key
    })
    delete headers["host"] // fetch sets it; undici refuses an explicit one
    return fetch(url, { method, headers, body })
  }

  /** Stores `body` at `key`. */
  async put(key: string, body: Uint8Array, contentType: string): Promise<void> {
    const r = await this.send("PUT", key, body, { "content-type": contentType })
    if (!r.ok) throw new Error(`S3 PUT ${key}: HTTP ${r.status} ${await r.text()}`)
  }

  /** The object's response (body streamable), or undefined for 404. */
  async get(key: string): Promise<Response | undefined> {
    const r = await this.send("GET", key)
    if (r.status === 404) return undefined
    if (!r.ok) throw new Error(`S3 GET ${key}: HTTP ${r.status}`)
    return r
  }

  /**
   * Every object whose key starts with `prefix` (ListObjectsV2, following continuation tokens):
   * keys as stored (with the prefix), sizes in bytes.
   */
  async list(prefix: string): Promise<Array<{ key: string; size: number }>> {
    const out: Array<{ key: string; size: number }> = []
    let token: string | undefined
    do {
      const r = await this.send("GET", "", undefined, {}, { "list-type": "2", prefix, ...(token ? { "continuation-token": token } : {}) })
      if (!r.ok) throw new Error(`S3 LIST ${prefix}: HTTP ${r.status} ${await r.text()}`)
      const xml = await r.text()
      for (const m of xml.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)) {
        const key = /<Key>([\s\S]*?)<\/Key>/.exec(m[1]!)?.[1]
        const size = /<Size>(\d+)<\/Size>/.exec(m[1]!)?.[1]
        if (key !== undefined) out.push({ key: xmlText(key), size: Number(size ?? 0) })
      }
      token = /<IsTruncated>true<\/IsTruncated>/.test(xml) ? /<NextContinuationToken>([\s\S]*?)<\/NextContinuationToken>/.exec(xml)?.[1] : undefined
      if (token !== undefined) token = xmlText(token)
    } while (token !== undefined)
    return out
  }

  /** Deletes `key` (S3 answers 204 also when it did not exist). */
  async delete(key: string): Promise<void> {
    const r = await this.send("DELETE", key)
    if (!r.ok && r.status !== 404) throw new Error(`S3 DELETE ${key}: HTTP ${r.status}`)
  }
}
