/**
 * Main-content extraction from fetched pages: Mozilla Readability (the Firefox Reader View
 * algorithm) on a linkedom DOM finds the article; turndown turns it into Markdown, and a small
 * block-aware walker turns it into plain paragraphs. Pages where Readability finds no article
 * fall back to `<body>` with the page furniture (navigation, footers, cookie banners) removed.
 *
 * Links and image sources are made absolute against the page's final URL (or its `<base href>`)
 * before anything else, so Markdown links still work once the text has left its page.
 */
import { Readability } from "@mozilla/readability"
import { parseHTML } from "linkedom"
import TurndownService from "turndown"

/** The slice of the DOM this module uses (linkedom's nodes; the project compiles without lib.dom). */
interface DomNode {
  readonly nodeType: number
  readonly nodeName: string
  readonly childNodes: ArrayLike<DomNode>
  readonly textContent: string | null
  readonly parentNode: DomNode | null
  remove(): void
}
interface DomElement extends DomNode {
  readonly tagName: string
  readonly innerHTML: string
  getAttribute(name: string): string | null
  setAttribute(name: string, value: string): void
  querySelectorAll(selector: string): ArrayLike<DomElement>
  querySelector(selector: string): DomElement | null
}
interface DomDocument {
  readonly body: DomElement | null
  readonly documentElement: DomElement | null
  querySelector(selector: string): DomElement | null
  querySelectorAll(selector: string): ArrayLike<DomElement>
  createElement(tag: string): DomElement & { appendChild(n: DomNode): void }
}

/**
 * A document with `<html>` and `<body>` whatever the input: linkedom (unlike a browser) builds
 * none for a fragment or bare text, and no body for `<html>` without one; Readability and the
 * fallback both need a body.
 */
const parseDocument = (html: string): DomDocument => {
  const { document } = parseHTML(html) as unknown as { document: DomDocument }
  const root = document.documentElement
  if (!root || root.tagName.toUpperCase() !== "HTML") {
    return (parseHTML(`<!doctype html><html><head></head><body>${html}</body></html>`) as unknown as { document: DomDocument }).document
  }
  // Not `document.body`: linkedom's getter appends an empty body when there is none.
  if (!Array.from(root.childNodes).some((n) => n.nodeName.toUpperCase() === "BODY")) {
    const body = document.createElement("body")
    for (const n of Array.from(root.childNodes)) if (n.nodeName.toUpperCase() !== "HEAD") body.appendChild(n)
    ;(root as unknown as { appendChild(n: DomNode): void }).appendChild(body)
  }
  return document
}

/** How a page's `content_type` is treated. */
export type ContentKind = "html" | "plain" | "other"

/**
 * The kind of a `content_type` header value: `html` for `text/html`, XHTML and an empty value
 * (fetchers that could not tell), `plain` for `text/plain` and `text/markdown`, `other` for
 * everything else (PDF, images, JSON...).
 */
export const contentKind = (contentType: string): ContentKind => {
  const mediaType = contentType.split(";")[0]!.trim().toLowerCase()
  if (mediaType === "" || mediaType === "text/html" || mediaType === "application/xhtml+xml") return "html"
  if (mediaType === "text/plain" || mediaType === "text/markdown") return "plain"
  return "other"
}

/** The main content of a page, as a detached DOM element, with its title. */
export interface MainContent {
  readonly title: string | null
  readonly element: DomElement
  /** False when Readability found no article and `element` is the cleaned `<body>`. */
  readonly article: boolean
}

/** Never content, whichever way the page is read. */
const ALWAYS_DROPPED = "script, style, noscript, template, iframe, object, embed, svg, canvas, link, meta"

/**
 * Page furniture: navigation, footers, sidebars, forms, dialogs, hidden elements. Readability
 * drops most of these by its own class-name heuristics; removing them first also covers the
 * `<body>` fallback.
 */
const FURNITURE = [
  "nav", "footer", "aside", "form", "dialog", "button",
  "[role=navigation]", "[role=banner]", "[role=contentinfo]", "[role=complementary]", "[role=dialog]", "[role=alertdialog]",
  "[aria-hidden=true]", "[hidden]"
].join(", ")

/**
 * Likely furniture, matched by name: cookie/consent/GDPR banners and site headers. Sites also put
 * such names on wrappers (`<body class="cookie-banner-shown">`), so a match is removed only when
 * it is not the page itself or its main content and holds no article, main or headline.
 */
const LIKELY_FURNITURE = "[id*=cookie], [class*=cookie], [id*=consent], [class*=consent], [id*=gdpr], [class*=gdpr], body > header, [class~=site-header]"
const CONTENT_TAGS = new Set(["HTML", "BODY", "MAIN", "ARTICLE"])

const collapse = (s: string): string => s.replace(/\s+/g, " ").trim()

/** Makes `href`/`src` attributes absolute against `base` (values that do not parse are left alone). */
const absolutize = (doc: DomDocument, pageUrl: string): void => {
  let base = pageUrl
  const baseHref = doc.querySelector("base[href]")?.getAttribute("href")
  if (baseHref) {
    try {
      base = new URL(baseHref, pageUrl).href
    } catch {
      // a malformed <base>: keep the page URL
    }
  }
  for (const [attr, selector] of [["href", "a[href], area[href]"], ["src", "img[src], source[src], video[src], audio[src]"]] as const) {
    for (const el of Array.from(doc.querySelectorAll(selector))) {
      const v = el.getAttribute(attr)!
      // Fragment-only and script links mean nothing outside the page.
      if (v.startsWith("#") || /^\s*javascript:/i.test(v)) continue
      try {
        el.setAttribute(attr, new URL(v, base).href)
      } catch {
        // unparseable against a non-URL base (a page without a URL): leave as written
      }
    }
  }
}

const removeAll = (root: DomDocument | DomElement, selector: string): void => {
  for (const el of Array.from(root.querySelectorAll(selector))) el.remove()
}

const removeFurniture = (doc: DomDocument): void => {
  removeAll(doc, FURNITURE)
  for (const el of Array.from(doc.querySelectorAll(LIKELY_FURNITURE))) {
    if (!CONTENT_TAGS.has(el.tagName.toUpperCase()) && !el.querySelector("main, article, h1")) el.remove()
  }
}

/**
 * The main content of an HTML document. `pageUrl` resolves relative links (pass "" when there is
 * none). `mainContent: false` skips Readability and reads the cleaned `<body>` whole. The title is
 * the first `<h1>` when the document title contains it (titles are often "Headline | Site"), else
 * Readability's title, else `<title>`, else null.
 */
export const mainContent = (html: string, pageUrl: string, mainContent = true): MainContent => {
  const parse = (): DomDocument => {
    const document = parseDocument(html)
    if (pageUrl) absolutize(document, pageUrl)
    removeAll(document, ALWAYS_DROPPED)
    return document
  }
  let document = parse()
  const docTitle = collapse(document.querySelector("title")?.textContent ?? "") || null
  const h1 = collapse(document.querySelector("h1")?.textContent ?? "") || null
  removeFurniture(document)
  const article = mainContent && document.body
    ? new Readability<DomElement>(document as never, { serializer: (n) => n as unknown as DomElement }).parse()
    : null
  const found = Boolean(article?.content && collapse(article.content.textContent ?? "") !== "")
  if (article && !found) {
    // Readability took the document apart while looking: read the body of a fresh parse.
    document = parse()
    removeFurniture(document)
  }
  const element = found ? article!.content! : (document.body ?? document.documentElement)!
  const readabilityTitle = article?.title ? collapse(article.title) : null
  const title = h1 && (docTitle ?? readabilityTitle ?? "").includes(h1) ? h1 : readabilityTitle ?? docTitle ?? h1
  return { title, element, article: found }
}

/** Elements that start a new paragraph in plain text. */
const BLOCKS = new Set([
  "ADDRESS", "ARTICLE", "BLOCKQUOTE", "BR", "DD", "DETAILS", "DIV", "DL", "DT", "FIELDSET", "FIGCAPTION", "FIGURE",
  "H1", "H2", "H3", "H4", "H5", "H6", "HEADER", "HR", "LI", "MAIN", "OL", "P", "PRE", "SECTION", "SUMMARY",
  "TABLE", "TBODY", "THEAD", "TFOOT", "TR", "UL"
])
const CELLS = new Set(["TD", "TH"])

/**
 * The readable text of an element: one paragraph per block (paragraphs, headings, list items,
 * table rows, preformatted blocks), joined by blank lines; whitespace inside a paragraph is
 * collapsed to single spaces, except in `<pre>`, whose lines are kept. Table cells are separated
 * by " | ".
 */
export const blockText = (root: DomNode): string => {
  const paragraphs: Array<string> = []
  let current = ""
  const flush = () => {
    const p = current.includes("\n") ? current.replace(/^\s*\n|\s+$/g, "") : collapse(current)
    if (p.trim()) paragraphs.push(p)
    current = ""
  }
  const walk = (n: DomNode, inPre: boolean) => {
    if (n.nodeType === 3) {
      current += inPre ? (n.textContent ?? "") : (n.textContent ?? "").replace(/\s+/g, " ")
      return
    }
    if (n.nodeType !== 1 && n.nodeType !== 9 && n.nodeType !== 11) return
    const tag = n.nodeName.toUpperCase()
    const block = BLOCKS.has(tag)
    if (block) flush()
    if (CELLS.has(tag) && current.trim()) current += " | "
    const pre = inPre || tag === "PRE"
    for (const c of Array.from(n.childNodes)) walk(c, pre)
    if (block) flush()
  }
  walk(root, false)
  flush()
  return paragraphs.join("\n\n")
}

/** Plain text with whitespace normalised the way `blockText` does: paragraphs split on blank lines. */
export const normalizePlain = (text: string): string =>
  text.split(/\n\s*\n/).map(collapse).filter((p) => p !== "").join("\n\n")

const turndown = new TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-", emDelimiter: "_" })

/**
 * Markdown of an element (turndown: ATX headings, fenced code blocks, `-` bullets), headed by
 * `# title` unless the content already has a level-1 heading (Readability usually removes the
 * headline it took the title from).
 */
export const toMarkdown = (element: DomElement, title: string | null): string => {
  const body = turndown.turndown(element.innerHTML).trim()
  if (!title || /^# /m.test(body)) return body
  return body ? `# ${title}\n\n${body}` : `# ${title}`
}
