/**
 * The S3-compatible object client of the file store: put, get, delete and list (ListObjectsV2)
 * with path-style URLs (`<endpoint>/<bucket>/<key>`), which MinIO, Ceph, R2 and AWS all accept.
 * Requests are signed with AWS Signature Version 4 by `aws4fetch` (a small, widely used signer
 * over WebCrypto and `fetch`), not by hand; the four calls need no full SDK.
 */
import { AwsClient } from "aws4fetch"
import { createHash } from "node:crypto"

/** Connection settings of an S3-compatible bucket. */
export interface S3Settings {
  /** Base URL, e.g. `https://s3.eu-west-1.amazonaws.com` or `http://127.0.0.1:9000`. */
  readonly endpoint: string
  readonly bucket: string
  readonly region: string
  readonly access_key_id: string
  readonly secret_access_key: string
}

/** RFC 3986 encoding of one key segment, as S3 paths want it. */
const uriEncode = (s: string): string =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)

/** The text of an XML element's content (the five predefined entities and numeric references). */
const xmlText = (s: string): string =>
  s.replace(/&(#x[0-9a-fA-F]+|#\d+|amp|lt|gt|quot|apos);/g, (_, e: string) =>
    e[0] === "#" ? String.fromCodePoint(e[1] === "x" ? parseInt(e.slice(2), 16) : Number(e.slice(1))) : ({ amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'" } as Record<string, string>)[e]!)

/** Object operations on one bucket. Errors: rejects with an Error naming the S3 status. */
export class S3Client {
  private readonly aws: AwsClient

  constructor(private readonly s: S3Settings) {
    this.aws = new AwsClient({ accessKeyId: s.access_key_id, secretAccessKey: s.secret_access_key, region: s.region, service: "s3" })
  }

  private url(key: string): URL {
    const base = this.s.endpoint.replace(/\/+$/, "")
    return new URL(`${base}/${this.s.bucket}/${key.split("/").map(uriEncode).join("/")}`)
  }

  private send(method: string, key: string, body?: Uint8Array, headers: Record<string, string> = {}, query?: Record<string, string>): Promise<Response> {
    const url = this.url(key)
    for (const [k, v] of Object.entries(query ?? {})) url.searchParams.set(k, v)
    // Every body is in memory: its SHA-256 is signed (aws4fetch would send UNSIGNED-PAYLOAD for s3).
    const payloadHash = createHash("sha256").update(body ?? "").digest("hex")
    return this.aws.fetch(url, { method, headers: { ...headers, "x-amz-content-sha256": payloadHash }, ...(body ? { body } : {}) })
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
   * keys as stored (with the prefix), sizes in bytes. `maxKeys`: the page size asked for (S3's
   * `max-keys`; the server's default, 1000 on AWS, when absent).
   */
  async list(prefix: string, maxKeys?: number): Promise<Array<{ key: string; size: number }>> {
    const out: Array<{ key: string; size: number }> = []
    let token: string | undefined
    do {
      const r = await this.send("GET", "", undefined, {}, { "list-type": "2", prefix, ...(maxKeys ? { "max-keys": String(maxKeys) } : {}), ...(token ? { "continuation-token": token } : {}) })
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
