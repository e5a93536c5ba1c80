/**
 * Plugin `text`: text extraction and transforms as graph operations: `to_markdown`, `to_text`,
 * `to_text_batch` (Readability + turndown on linkedom), `quality_filter`, and `ocr` through
 * Debian's `tesseract-ocr` command line. It depends on `jobs` so that graph jobs find its
 * operations in every worker process. Without tesseract the plugin still boots; `ocr` then fails
 * with a message naming the package.
 */
import * as Schema from "effect/Schema"
import { configOption, definePlugin, lazySetup } from "../../core/Plugin.ts"
import { ImageRef } from "./Api.ts"

const opt = configOption

/** Config of `plugins.text` in platform.yaml. */
export const TextConfig = Schema.Struct({
  tesseract_path: opt(Schema.String.pipe(Schema.minLength(1)), "tesseract", "the tesseract executable (Debian package tesseract-ocr), a name on PATH or a path"),
  ocr_languages: opt(Schema.String.pipe(Schema.pattern(/^[A-Za-z_]+(\+[A-Za-z_]+)*$/)), "eng", "tesseract languages for ocr, e.g. eng or eng+deu (each needs its tesseract-ocr-<lang> package)"),
  ocr_timeout_s: opt(Schema.Number.pipe(Schema.between(1, 3600)), 120, "longest tesseract run for one image, seconds"),
  max_image_bytes: opt(Schema.Int.pipe(Schema.between(1_024, 1024 * 1024 * 1024)), 20 * 1024 * 1024, "largest image ocr reads, bytes"),
  allow_file_urls: opt(Schema.Boolean, false, "let ocr read file:// image URLs from the worker's disk (single-machine setups, tests)")
}).annotations({ identifier: "TextConfig" })
export type TextConfig = typeof TextConfig.Type

const setup = lazySetup(() => import("./Setup.ts"))

export default definePlugin({
  name: "text",
  version: "0.1.0",
  description: "text extraction and transforms: to_markdown, to_text, to_text_batch (Readability + turndown), quality_filter, ocr (tesseract-ocr) graph operations.",
  dependsOn: ["jobs"],
  // No routes of its own; its graph operations run in graph jobs on the `jobs` listener.
  defaultListener: "jobs",
  config: TextConfig,
  resources: { TextImageRef: ImageRef },
  setup
})
