/** The `text` plugin's implementation, imported when the plugin is set up (see `plugin.ts`). */
import * as Effect from "effect/Effect"
import type { PluginContext } from "../../core/Plugin.ts"
import { ocrOp, qualityFilterOp, toMarkdownOp, toTextBatchOp, toTextOp } from "./GraphOps.ts"
import type { TextConfig } from "./plugin.ts"

/** `setup` of the plugin: its five graph operations, `ocr` configured from the plugin's section. */
export const setup = (ctx: PluginContext<TextConfig>) =>
  Effect.succeed({
    graphOps: [
      toMarkdownOp,
      toTextOp,
      toTextBatchOp,
      qualityFilterOp,
      ocrOp({
        tesseract: { path: ctx.config.tesseract_path, languages: ctx.config.ocr_languages, timeoutMs: ctx.config.ocr_timeout_s * 1000 },
        images: { maxBytes: ctx.config.max_image_bytes, allowFileUrls: ctx.config.allow_file_urls }
      })
    ]
  })
