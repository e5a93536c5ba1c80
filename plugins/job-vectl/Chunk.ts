/**
 * Splitting texts into the overlapping word windows that vectl embeds (spec: "stored text is
 * chunked into overlapping 512-word segments"). Overlap: 64 words by default (one eighth), so a
 * sentence cut by one window boundary appears whole in the neighbouring window; the stride is
 * `size - overlap` (448 words).
 */

/** A window of a text: its position and its words joined by single spaces. */
export interface Chunk {
  /** 0-based window number within its text. */
  readonly index: number
  /** Index of the first word of the window in the text. */
  readonly start: number
  readonly words: number
  readonly text: string
}

/**
 * Windows of `size` words overlapping by `overlap` words (0 <= overlap < size). A text of at most
 * `size` words is one window; the last window ends at the last word (it may overlap its
 * predecessor by more than `overlap`, so no window is a short tail). Whitespace is normalised.
 * Returns [] for a text without words. Throws RangeError on bad sizes.
 */
export const chunkWords = (text: string, size = 512, overlap = 64): Array<Chunk> => {
  if (!(size >= 1) || !(overlap >= 0) || overlap >= size) throw new RangeError(`bad chunking: size ${size}, overlap ${overlap}`)
  const words = text.split(/\s+/).filter((w) => w.length > 0)
  if (words.length === 0) return []
  const stride = size - overlap
  const out: Array<Chunk> = []
  for (let start = 0, index = 0; ; start += stride, index++) {
    const s = Math.min(start, Math.max(0, words.length - size))
    const slice = words.slice(s, s + size)
    out.push({ index, start: s, words: slice.length, text: slice.join(" ") })
    if (s + size >= words.length) break
  }
  return out
}
