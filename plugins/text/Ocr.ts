/**
 * OCR through Debian's `tesseract-ocr` command line (`tesseract stdin stdout -l eng`): the image
 * goes in on stdin and the recognised text comes back on stdout, so nothing touches the disk. The
 * process is killed when the operation's signal aborts (cancel) or after `timeoutMs`.
 */
import { spawn } from "node:child_process"
import { readFile } from "node:fs/promises"
import { fileURLToPath } from "node:url"
import { JobFailure } from "../jobs/Contract.ts"

/** Where tesseract is and how to run it. */
export interface TesseractOptions {
  /** Executable (a name looked up on PATH, or a path). */
  readonly path: string
  /** Tesseract language(s), `eng` or `eng+deu`. */
  readonly languages: string
  /** Deadline of one recognition, ms. */
  readonly timeoutMs: number
}

const PACKAGE_HINT = "install Debian's tesseract-ocr and tesseract-ocr-eng (apt-get install tesseract-ocr tesseract-ocr-eng; scripts/setup.sh does)"

/**
 * The text tesseract reads in an image (PNG, JPEG, GIF, TIFF, WebP, BMP bytes), with its lines as
 * printed. Rejects with `JobFailure`: INTERNAL_ERROR naming the package when the executable or
 * its language data is missing, VALIDATION_ERROR when tesseract cannot read the image, TIMEOUT
 * past `timeoutMs`, CANCELLED when `signal` aborts (the process is killed at once).
 */
export const tesseract = (image: Uint8Array, o: TesseractOptions, signal: AbortSignal): Promise<string> =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new JobFailure("CANCELLED", "ocr: cancelled", false))
    // One thread per process: the op runs several images at once, and OpenMP threads on top of
    // that only contend for the same cores.
    const child = spawn(o.path, ["stdin", "stdout", "-l", o.languages], { env: { ...process.env, OMP_THREAD_LIMIT: "1" }, stdio: ["pipe", "pipe", "pipe"] })
    const out: Array<Buffer> = []
    let err = ""
    let settled = false
    const done = (f: () => void) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      signal.removeEventListener("abort", onAbort)
      f()
    }
    const kill = () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
    }
    const onAbort = () => done(() => {
      kill()
      reject(new JobFailure("CANCELLED", "ocr: cancelled", false))
    })
    const timer = setTimeout(() => done(() => {
      kill()
      reject(new JobFailure("TIMEOUT", `ocr: tesseract took longer than ${o.timeoutMs} ms`, true))
    }), o.timeoutMs)
    signal.addEventListener("abort", onAbort, { once: true })
    child.stdout.on("data", (b: Buffer) => out.push(b))
    child.stderr.on("data", (b: Buffer) => {
      if (err.length < 4000) err += b.toString("utf8")
    })
    child.on("error", (e: NodeJS.ErrnoException) => done(() => {
      reject(e.code === "ENOENT"
        ? new JobFailure("INTERNAL_ERROR", `ocr: tesseract is not installed (no "${o.path}" executable): ${PACKAGE_HINT}`, false)
        : new JobFailure("INTERNAL_ERROR", `ocr: cannot run tesseract: ${e.message}`, false))
    }))
    // tesseract may exit before reading all of a bad image: a broken stdin pipe is its answer, not ours.
    child.stdin.on("error", () => undefined)
    child.on("close", (code) => done(() => {
      if (code === 0) return resolve(Buffer.concat(out).toString("utf8"))
      if (/Failed loading language|Error opening data file/i.test(err)) {
        return reject(new JobFailure("INTERNAL_ERROR", `ocr: tesseract has no "${o.languages}" language data: ${PACKAGE_HINT} (or tesseract-ocr-<lang> for other languages)`, false))
      }
      const detail = err.split("\n").map((l) => l.trim()).filter((l) => l && !/^(Tesseract Open Source|Estimating resolution|Warning)/i.test(l)).join("; ")
      reject(new JobFailure("VALIDATION_ERROR", `ocr: tesseract could not read the image (exit ${code}): ${detail || "no detail"}`, false))
    }))
    child.stdin.end(Buffer.from(image.buffer, image.byteOffset, image.byteLength))
  })

/**
 * OCR output as paragraphs: tesseract separates blocks by blank lines; the lines inside a block
 * are joined with spaces (words hyphenated across a line break are joined), paragraphs by a
 * blank line. Form feeds (page breaks) count as blank lines.
 */
export const ocrParagraphs = (raw: string): string =>
  raw.replace(/\f/g, "\n\n").split(/\n\s*\n/)
    .map((p) => p.split("\n").map((l) => l.trim()).filter(Boolean).reduce((acc, l) => acc.endsWith("-") ? acc.slice(0, -1) + l : acc ? `${acc} ${l}` : l, ""))
    .filter((p) => p !== "").join("\n\n")

/** How image bytes are read. */
export interface ImageReader {
  /** Largest image read, bytes. */
  readonly maxBytes: number
  /** Whether `file://` URLs may be read (tests and single-machine setups; off by default: a graph must not read the worker's disk). */
  readonly allowFileUrls: boolean
  readonly timeoutMs: number
}

/**
 * The bytes of the image at `url`: `http(s)://` through fetch (within `timeoutMs`, aborted with
 * `signal`), `file://` from disk when allowed. Rejects with `JobFailure`: VALIDATION_ERROR for
 * other schemes, a refused `file://`, a non-image answer or one over `maxBytes`; REMOTE_ERROR for
 * an HTTP error status; NETWORK_ERROR / TIMEOUT when the fetch fails.
 */
export const readImage = async (url: string, r: ImageReader, signal: AbortSignal): Promise<Uint8Array> => {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    throw new JobFailure("VALIDATION_ERROR", `ocr: "${url}" is not a URL`, false)
  }
  if (u.protocol === "file:") {
    if (!r.allowFileUrls) throw new JobFailure("VALIDATION_ERROR", `ocr: file:// URLs are not allowed (${url}); set allow_file_urls in the text plugin's config`, false)
    const b = await readFile(fileURLToPath(u), { signal }).catch((e: NodeJS.ErrnoException) => {
      if (signal.aborted) throw new JobFailure("CANCELLED", "ocr: cancelled", false)
      throw new JobFailure("VALIDATION_ERROR", `ocr: cannot read ${url}: ${e.code ?? e.message}`, false)
    })
    if (b.byteLength > r.maxBytes) throw new JobFailure("VALIDATION_ERROR", `ocr: ${url} is ${b.byteLength} bytes, over the ${r.maxBytes}-byte limit`, false)
    return b
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new JobFailure("VALIDATION_ERROR", `ocr: cannot read ${u.protocol} URLs (${url})`, false)
  let res: Response
  try {
    res = await fetch(u, { signal: AbortSignal.any([signal, AbortSignal.timeout(r.timeoutMs)]) })
  } catch (e) {
    if (signal.aborted) throw new JobFailure("CANCELLED", "ocr: cancelled", false)
    if ((e as Error).name === "TimeoutError") throw new JobFailure("TIMEOUT", `ocr: ${url} did not answer within ${r.timeoutMs} ms`, true)
    throw new JobFailure("NETWORK_ERROR", `ocr: cannot fetch ${url}: ${((e as Error).cause as Error | undefined)?.message ?? (e as Error).message}`, true)
  }
  if (!res.ok) {
    await res.body?.cancel()
    throw new JobFailure("REMOTE_ERROR", `ocr: ${url} answered ${res.status}`, res.status === 429 || res.status >= 500)
  }
  const type = (res.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase()
  if (type && !type.startsWith("image/") && type !== "application/octet-stream") {
    await res.body?.cancel()
    throw new JobFailure("VALIDATION_ERROR", `ocr: ${url} is ${type}, not an image`, false)
  }
  const declared = Number(res.headers.get("content-length") ?? 0)
  if (declared > r.maxBytes) {
    await res.body?.cancel()
    throw new JobFailure("VALIDATION_ERROR", `ocr: ${url} is ${declared} bytes, over the ${r.maxBytes}-byte limit`, false)
  }
  const chunks: Array<Uint8Array> = []
  let size = 0
  try {
    for await (const c of res.body as unknown as AsyncIterable<Uint8Array>) {
      size += c.byteLength
      if (size > r.maxBytes) throw new JobFailure("VALIDATION_ERROR", `ocr: ${url} is over the ${r.maxBytes}-byte limit`, false)
      chunks.push(c)
    }
  } catch (e) {
    if (e instanceof JobFailure) throw e
    if (signal.aborted) throw new JobFailure("CANCELLED", "ocr: cancelled", false)
    throw new JobFailure("NETWORK_ERROR", `ocr: reading ${url} failed: ${(e as Error).message}`, true)
  }
  return Buffer.concat(chunks)
}
