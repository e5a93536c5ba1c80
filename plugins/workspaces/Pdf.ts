/**
 * Text of PDF reports for the workspace index, extracted with Mozilla's PDF.js (`pdfjs-dist`,
 * its legacy build, which runs on Node 20). Loaded on first use: most runs carry no PDF.
 */

type PdfJs = typeof import("pdfjs-dist/legacy/build/pdf.mjs")
let pdfjs: Promise<PdfJs> | undefined

/**
 * Imports PDF.js. On load it warns (console.log) that it cannot polyfill the canvas classes it
 * renders with; text extraction renders nothing, so those load-time lines are dropped, and only
 * while the import runs.
 */
const loadQuietly = async (): Promise<PdfJs> => {
  const log = console.log
  console.log = (...args: Array<unknown>) => {
    if (typeof args[0] === "string" && /^Warning: Cannot (load "@napi-rs\/canvas"|polyfill)/.test(args[0])) return
    log(...args)
  }
  try {
    return await import("pdfjs-dist/legacy/build/pdf.mjs")
  } finally {
    console.log = log
  }
}

/**
 * The text of every page of `bytes`, pages separated by a blank line, each page's text items
 * joined with spaces (line ends kept where PDF.js marks them). Rejects when `bytes` is not a PDF.
 */
export const extractPdfText = async (bytes: Uint8Array): Promise<string> => {
  pdfjs ??= loadQuietly()
  const { getDocument, VerbosityLevel } = await pdfjs
  // PDF.js takes ownership of (detaches) the buffer it is given: hand it a copy.
  const doc = await getDocument({ data: bytes.slice(), verbosity: VerbosityLevel.ERRORS, isEvalSupported: false, disableFontFace: true, useSystemFonts: false }).promise
  try {
    const pages: Array<string> = []
    for (let i = 1; i <= doc.numPages; i++) {
      const page = await doc.getPage(i)
      const content = await page.getTextContent()
      pages.push(content.items.map((item) => ("str" in item ? item.str + (item.hasEOL ? "\n" : " ") : "")).join("").replace(/[ \t]+\n/g, "\n").trim())
    }
    return pages.join("\n\n")
  } finally {
    await doc.destroy()
  }
}
