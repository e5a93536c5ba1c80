// marked-terminal 7 ships no types (and @types/marked-terminal pins marked < 12): the one entry used.
declare module "marked-terminal" {
  import type { MarkedExtension } from "marked"
  /** The marked extension rendering Markdown for a terminal; options as in its README. */
  export function markedTerminal(options?: Record<string, unknown>, highlightOptions?: Record<string, unknown>): MarkedExtension
}
