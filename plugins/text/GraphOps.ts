/**
 * Graph operations of the text plugin (research-jobs spec, "Operations by category"):
 * Transform `to_markdown`, `to_text`, `to_text_batch`; Filter `quality_filter`; Process `ocr`.
 */
import { availableParallelism } from "node:os"
import * as Schema from "effect/Schema"
import type { GraphOpContext, GraphOperation } from "../../core/Contribution.ts"
import { Doc, Page, Text, textOf } from "../../core/GraphTypes.ts"
import { JobFailure } from "../jobs/Contract.ts"
import { ImageRef } from "./Api.ts"
import { blockText, contentKind, mainContent, normalizePlain, toMarkdown } from "./Extract.ts"
import { type ImageReader, ocrParagraphs, readImage, tesseract, type TesseractOptions } from "./Ocr.ts"
export { ImageRef } from "./Api.ts"
import { boilerplateRatio, detectLanguage, jaccard, LANGUAGES, shingles, words } from "./Quality.ts"

/** Params of `to_markdown`, `to_text` and `to_text_batch`. */
export const ExtractParams = Schema.Struct({
  main_content: Schema.optionalWith(Schema.Boolean.annotations({ description: "keep only the main content (Readability); false: the whole cleaned <body>" }), { default: () => true })
})

/**
 * What the extraction ops read: a Page, or a `snapshot` (a Page with the capture's facts). An
 * archived page's links are as the original site wrote them, so they resolve against its
 * original `url`, not the archive's `final_url`.
 */
export const PageInput = Schema.extend(Page, Schema.Struct({ archive_url: Schema.optional(Schema.String) })).annotations({ identifier: "TextPageInput" })
type PageInput = typeof PageInput.Type

/** The URL a page's text is attributed to: where it was read from. */
const pageUrl = (p: PageInput): string => p.final_url || p.url
/** The URL relative links resolve against (see PageInput). */
const linkBase = (p: PageInput): string => (p.archive_url !== undefined ? p.url : pageUrl(p))

/** Yields to the event loop so a cancel can land between CPU-bound pages. */
const breathe = async (signal: AbortSignal, op: string): Promise<void> => {
  await new Promise<void>((r) => setImmediate(r))
  if (signal.aborted) throw new JobFailure("CANCELLED", `${op}: cancelled`, false)
}

/** Progress that reports at most every 5 points (and the last one), so long lists do not flood the job's events. */
const throttled = (ctx: GraphOpContext) => {
  let last = -5
  return async (done: number, total: number, message: string) => {
    const pct = total === 0 ? 100 : Math.floor((100 * done) / total)
    if (pct - last >= 5 || done === total) {
      last = pct
      await ctx.progress(pct, message)
    }
  }
}

/**
 * A page as a `Doc` of readable text, or why it has none: `{ skip }` for content that is neither
 * HTML nor plain text. Plain text passes through (paragraphs and whitespace normalised).
 */
const pageText = (page: PageInput, main: boolean): Doc | { skip: string } => {
  const url = pageUrl(page)
  const kind = contentKind(page.content_type)
  if (kind === "other") return { skip: `${url} is ${page.content_type.split(";")[0]}, not HTML or plain text` }
  if (kind === "plain") return { url, title: null, text: normalizePlain(page.html) }
  const m = mainContent(page.html, linkBase(page), main)
  return { url, title: m.title, text: blockText(m.element) }
}

/** `to_markdown`: `html` → `markdown` (a Doc whose text is Markdown). Non-HTML, non-text content: VALIDATION_ERROR. */
export const toMarkdownOp: GraphOperation<typeof ExtractParams.Type, PageInput, Doc> = {
  name: "to_markdown",
  description: "Converts a page's main content (Mozilla Readability; the <body> when it finds no article) to Markdown: ATX headings, fenced code, absolute links.",
  category: "transform",
  inputTypes: ["html"],
  outputType: "markdown",
  params: ExtractParams,
  input: PageInput,
  output: Doc,
  handler: async (params, page) => {
    const url = pageUrl(page)
    const kind = contentKind(page.content_type)
    if (kind === "other") throw new JobFailure("VALIDATION_ERROR", `to_markdown: ${url} is ${page.content_type.split(";")[0]}, not HTML or plain text`, false)
    // Plain text is already valid Markdown (give or take a stray `*`): pass it through.
    if (kind === "plain") return { url, title: null, text: page.html.trim() }
    const m = mainContent(page.html, linkBase(page), params.main_content)
    return { url, title: m.title, text: toMarkdown(m.element, m.title) }
  }
}

/** `to_text`: `html` → `text` (Doc {url: final_url, title, text}). Non-HTML, non-text content: VALIDATION_ERROR. */
export const toTextOp: GraphOperation<typeof ExtractParams.Type, PageInput, Doc> = {
  name: "to_text",
  description: "Extracts a page's readable main text (paragraphs separated by blank lines; scripts, styles, navigation, footers and banners removed); text/plain passes through.",
  category: "transform",
  inputTypes: ["html"],
  outputType: "text",
  params: ExtractParams,
  input: PageInput,
  output: Doc,
  handler: async (params, page) => {
    const d = pageText(page, params.main_content)
    if ("skip" in d) throw new JobFailure("VALIDATION_ERROR", `to_text: ${d.skip}`, false)
    return d
  }
}

/**
 * `to_text_batch`: `html[]` → `text[]`, `to_text` per page in input order; pages that are not
 * HTML or plain text, and pages without any text, are left out (the progress message counts them).
 */
export const toTextBatchOp: GraphOperation<typeof ExtractParams.Type, ReadonlyArray<PageInput>, ReadonlyArray<Doc>> = {
  name: "to_text_batch",
  description: "to_text for every page of a list, in order; pages that are not HTML/plain text or have no text are left out.",
  category: "transform",
  inputTypes: ["html[]"],
  outputType: "text[]",
  params: ExtractParams,
  input: Schema.Array(PageInput),
  output: Schema.Array(Doc),
  handler: async (params, pages, ctx) => {
    const out: Array<Doc> = []
    const skipped: Array<string> = []
    let empty = 0
    const progress = throttled(ctx)
    for (const [i, page] of pages.entries()) {
      await breathe(ctx.signal, "to_text_batch")
      const d = pageText(page, params.main_content)
      if ("skip" in d) skipped.push(d.skip)
      else if (d.text === "") empty++
      else out.push(d)
      const notes = [skipped.length ? `skipped ${skipped.length} not HTML or text (${skipped.slice(0, 3).join("; ")}${skipped.length > 3 ? "; ..." : ""})` : "", empty ? `${empty} without text` : ""].filter(Boolean)
      await progress(i + 1, pages.length, `extracted text from ${out.length} of ${i + 1} pages${notes.length ? `; ${notes.join(", ")}` : ""}`)
    }
    return out
  }
}

/** `quality_filter` params. */
export const QualityParams = Schema.Struct({
  min_words: Schema.optionalWith(Schema.Int.pipe(Schema.nonNegative()).annotations({ description: "texts with fewer words are dropped" }), { default: () => 100 }),
  max_boilerplate_ratio: Schema.optionalWith(Schema.Number.pipe(Schema.between(0, 1)).annotations({ description: "texts whose share of boilerplate lines (cookie notices, copyright, sign-in, menus) and link text is above this are dropped" }), { default: () => 0.5 }),
  max_similarity: Schema.optionalWith(Schema.Number.pipe(Schema.between(0, 1)).annotations({ description: "a text whose 5-word-shingle Jaccard similarity to an earlier kept text is at least this is a near-duplicate and dropped (1: only exact shingle-set duplicates)" }), { default: () => 0.9 }),
  language: Schema.optionalWith(Schema.NullOr(Schema.Literal(...LANGUAGES)).annotations({ description: `keep only texts detected (stopword profile) as this language: ${LANGUAGES.join(", ")}; null: any` }), { default: () => null })
})

/**
 * `quality_filter`: `text[]` → `text[]`, the texts (as given, in order) that pass every check, in
 * this order: at least `min_words` words; boilerplate ratio at most `max_boilerplate_ratio`;
 * detected language equal to `language` when set; not a near-duplicate (shingle Jaccard ≥
 * `max_similarity`) of a text kept before it. The progress message counts the drops by reason.
 */
export const qualityFilterOp: GraphOperation<typeof QualityParams.Type, ReadonlyArray<Text>, ReadonlyArray<Text>> = {
  name: "quality_filter",
  description: "Drops short texts, boilerplate/link-heavy texts, near-duplicates (word-shingle Jaccard) and, optionally, texts not in a given language.",
  category: "filter",
  inputTypes: ["text[]"],
  outputType: "text[]",
  params: QualityParams,
  input: Schema.Array(Text),
  output: Schema.Array(Text),
  handler: async (params, texts, ctx) => {
    const kept: Array<Text> = []
    const keptShingles: Array<Set<string>> = []
    const dropped = { short: 0, boilerplate: 0, language: 0, duplicate: 0 }
    for (const [i, t] of texts.entries()) {
      if (i % 50 === 49) await breathe(ctx.signal, "quality_filter")
      const s = textOf(t)
      if (words(s).length < params.min_words) {
        dropped.short++
        continue
      }
      if (boilerplateRatio(s) > params.max_boilerplate_ratio) {
        dropped.boilerplate++
        continue
      }
      if (params.language !== null && detectLanguage(s)?.language !== params.language) {
        dropped.language++
        continue
      }
      const sh = shingles(s)
      // Jaccard(A, B) <= min/max of the sizes: skip pairs whose sizes alone rule a match out.
      if (keptShingles.some((k) => Math.min(k.size, sh.size) / Math.max(k.size, sh.size) >= params.max_similarity && jaccard(k, sh) >= params.max_similarity)) {
        dropped.duplicate++
        continue
      }
      kept.push(t)
      keptShingles.push(sh)
    }
    const reasons = [
      dropped.short && `${dropped.short} under ${params.min_words} words`,
      dropped.boilerplate && `${dropped.boilerplate} mostly boilerplate or links`,
      dropped.language && `${dropped.language} not in language ${params.language}`,
      dropped.duplicate && `${dropped.duplicate} near-duplicates`
    ].filter(Boolean)
    await ctx.progress(100, `kept ${kept.length} of ${texts.length} texts; dropped ${texts.length - kept.length}${reasons.length ? `: ${reasons.join(", ")}` : ""}`)
    return kept
  }
}


/** `ocr` params. */
export const OcrParams = Schema.Struct({
  language: Schema.optionalWith(Schema.NullOr(Schema.String.pipe(Schema.pattern(/^[A-Za-z_]+(\+[A-Za-z_]+)*$/))).annotations({ description: "tesseract language(s), e.g. eng or eng+deu; null: the plugin's ocr_languages" }), { default: () => null })
})

/** What `ocr` needs from the plugin. */
export interface OcrOptions {
  readonly tesseract: TesseractOptions
  readonly images: Omit<ImageReader, "timeoutMs">
}

/**
 * `ocr`: `screenshot[]`, `image[]` or `url[]` (image URLs) → `text[]`, one Doc per image with
 * text, in input order; `url` is the page the image shows when known, else the image URL. Images
 * run `maxParallel` (at most the CPU count) at a time through tesseract. An image that cannot be
 * read or recognised is left out (the progress message says so) unless every image fails, which
 * fails the operation with the first error; a missing tesseract fails it at once.
 */
export const ocrOp = (o: OcrOptions): GraphOperation<typeof OcrParams.Type, ReadonlyArray<string | typeof ImageRef.Type>, ReadonlyArray<Doc>> => ({
  name: "ocr",
  description: "Reads the text in screenshots or images (stored files or http(s) image URLs) with Debian's tesseract-ocr.",
  category: "process",
  inputTypes: ["screenshot[]", "image[]", "url[]"],
  outputType: "text[]",
  params: OcrParams,
  input: Schema.Array(Schema.Union(Schema.String, ImageRef)),
  output: Schema.Array(Doc),
  handler: async (params, input, ctx) => {
    const refs = input.map((r) => (typeof r === "string" ? { file_url: r, url: null } : r))
    const t = { ...o.tesseract, languages: params.language ?? o.tesseract.languages }
    const reader: ImageReader = { ...o.images, timeoutMs: ctx.limits.fetchTimeoutMs }
    const results: Array<Doc | JobFailure | undefined> = new Array(refs.length)
    let next = 0
    let finished = 0
    let fatal: JobFailure | undefined
    const worker = async () => {
      while (next < refs.length && !fatal) {
        const i = next++
        const ref = refs[i]!
        try {
          const image = await readImage(ref.file_url, reader, ctx.signal)
          const text = ocrParagraphs(await tesseract(image, t, ctx.signal))
          results[i] = { url: ref.url ?? ref.file_url, title: null, text }
        } catch (e) {
          const f = e instanceof JobFailure ? e : new JobFailure("INTERNAL_ERROR", `ocr: ${(e as Error).message}`, false)
          // Cancel and a missing tesseract end every image the same way: stop now.
          if (f.kind === "CANCELLED" || f.kind === "INTERNAL_ERROR") fatal ??= f
          results[i] = f
        }
        finished++
        await ctx.progress(Math.floor((100 * finished) / refs.length), `read ${finished} of ${refs.length} images`)
      }
    }
    await Promise.all(Array.from({ length: Math.max(1, Math.min(ctx.limits.maxParallel, availableParallelism(), refs.length)) }, worker))
    if (fatal) throw fatal
    const failures = results.filter((r): r is JobFailure => r instanceof JobFailure)
    if (refs.length > 0 && failures.length === refs.length) throw new JobFailure(failures[0]!.kind, failures[0]!.message, failures[0]!.retryable)
    const docs = results.filter((r): r is Doc => r !== undefined && !(r instanceof JobFailure) && r.text !== "")
    const blank = refs.length - failures.length - docs.length
    await ctx.progress(100, `read text in ${docs.length} of ${refs.length} images${blank ? `; ${blank} without text` : ""}${failures.length ? `; ${failures.length} failed (${failures[0]!.message})` : ""}`)
    return docs
  }
})
