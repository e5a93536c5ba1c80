/**
 * The `text` plugin's public shapes, apart from its implementation so that the plugin's
 * declaration (`plugin.ts`) loads no extraction or OCR library.
 */
import * as Schema from "effect/Schema"

/** An image reference: a stored image (`file_url`) and the page it shows (`url`), as `screenshot` outputs. */
export const ImageRef = Schema.Struct({
  file_url: Schema.String,
  url: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null })
}).annotations({ identifier: "TextImageRef", description: "an image: file_url, and the page url it was taken of when known" })
