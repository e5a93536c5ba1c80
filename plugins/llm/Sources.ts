/**
 * How graph values become prompt text: inputs as numbered sources (`[1] title — url`), shortened
 * to a character budget so a prompt fits a model's context window, and what is read back from
 * inputs and answers (URLs, `[n]` citations, mention counts).
 */
import type { Chunk, Text } from "../../core/GraphTypes.ts"

/** One numbered source of a prompt: where it came from (`url`, `label`) and its text. */
export interface Source {
  readonly url: string | null
  /** Title, URL or a placeholder: what the prompt's `[n]` header shows. */
  readonly label: string
  readonly text: string
}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)
const isChunk = (u: unknown): u is Chunk => isObject(u) && typeof u.text === "string" && typeof u.index === "number" && "source" in u
const isDoc = (u: unknown): u is { url: string | null; title: string | null; text: string } =>
  isObject(u) && typeof u.text === "string" && "url" in u && "title" in u
const isEntity = (u: unknown): u is { name: string; type: string; mentions: number; sources: ReadonlyArray<string>; description?: string } =>
  isObject(u) && typeof u.name === "string" && typeof u.type === "string" && typeof u.mentions === "number" && Array.isArray(u.sources)
const isTopic = (u: unknown): u is { label: string; keywords: ReadonlyArray<string>; weight: number } =>
  isObject(u) && typeof u.label === "string" && Array.isArray(u.keywords) && typeof u.weight === "number"
const isPage = (u: unknown): u is { url: string; final_url: string; html: string } =>
  isObject(u) && typeof u.html === "string" && typeof u.url === "string"
const isReport = (u: unknown): u is { title: string; markdown: string } => isObject(u) && typeof u.markdown === "string" && typeof u.title === "string"

/** A source of one `text` value; `n` numbers untitled ones. */
const ofText = (t: Text, n: number): Source =>
  typeof t === "string"
    ? { url: null, label: `text ${n}`, text: t }
    : { url: t.url, label: t.title && t.url ? `${t.title} — ${t.url}` : t.title ?? t.url ?? `text ${n}`, text: t.text }

/**
 * Chunks grouped by `source` (first-seen order), each group's texts in `index` order joined by a
 * blank line: the chunks of one page are one source. Chunks without a source stay apart.
 */
export const groupChunks = (chunks: ReadonlyArray<Chunk>): Array<Source> => {
  const groups = new Map<string, Array<Chunk>>()
  chunks.forEach((c, i) => {
    const key = c.source ?? `\u0000${i}`
    const g = groups.get(key)
    if (g) g.push(c)
    else groups.set(key, [c])
  })
  return [...groups.values()].map((g, i) => {
    const source = g[0]!.source
    const text = [...g].sort((a, b) => a.index - b.index).map((c) => c.text).join("\n\n")
    return { url: source, label: source ?? `excerpt ${i + 1}`, text }
  })
}

/** The sources of a `text`, `text[]` or `chunk[]` input (chunks grouped by source). */
export const toSources = (input: Text | ReadonlyArray<Text> | ReadonlyArray<Chunk>): Array<Source> => {
  if (!Array.isArray(input)) return [ofText(input as Text, 1)]
  if (input.length > 0 && input.every(isChunk)) return groupChunks(input as ReadonlyArray<Chunk>)
  return (input as ReadonlyArray<Text>).map((t, i) => ofText(t, i + 1))
}

const stripTags = (html: string) =>
  html.replace(/<(script|style)[\s\S]*?<\/\1>/gi, " ").replace(/<[^>]+>/g, " ").replace(/&nbsp;/g, " ").replace(/[ \t]+/g, " ").replace(/\n\s*\n+/g, "\n\n").trim()

/**
 * The sources of a value of any graph type, for operations that take `any` (`chat`, `to_report`):
 * texts, docs, pages (tags stripped), chunks (grouped), reports (their Markdown) are sources of
 * their own; entity, topic and URL lists one source each (a line per item); other values (JSON
 * results, numbers) one source holding their JSON. Lists are walked one level at a time, so
 * several input states (one list of them) keep their order. null/undefined give none.
 */
export const renderAny = (value: unknown): Array<Source> => {
  const out: Array<Source> = []
  const walk = (v: unknown, depth: number): void => {
    if (v === null || v === undefined) return
    if (typeof v === "string") return void out.push({ url: null, label: `input ${out.length + 1}`, text: v })
    if (typeof v === "number" || typeof v === "boolean") return void out.push({ url: null, label: `input ${out.length + 1}`, text: String(v) })
    if (Array.isArray(v)) {
      if (v.length === 0) return
      if (v.every(isChunk)) return void out.push(...groupChunks(v))
      if (v.every((x) => typeof x === "string" && /^https?:\/\/\S+$/.test(x))) return void out.push({ url: null, label: "URLs", text: v.join("\n") })
      if (v.every(isEntity)) {
        const lines = v.map((e) => `- ${e.name} (${e.type}; ${e.mentions} mention${e.mentions === 1 ? "" : "s"}${e.sources.length ? `; ${e.sources.join(", ")}` : ""})${e.description ? `: ${e.description}` : ""}`)
        return void out.push({ url: null, label: "entities", text: lines.join("\n") })
      }
      if (v.every(isTopic)) {
        const lines = v.map((t) => `- ${t.label} (weight ${t.weight.toFixed(2)}): ${t.keywords.join(", ")}`)
        return void out.push({ url: null, label: "topics", text: lines.join("\n") })
      }
      if (depth < 3) return v.forEach((x) => walk(x, depth + 1))
    }
    if (isChunk(v)) return void out.push(...groupChunks([v]))
    if (isDoc(v)) return void out.push(ofText(v, out.length + 1))
    if (isPage(v)) return void out.push({ url: v.final_url || v.url, label: v.final_url || v.url, text: stripTags(v.html) })
    if (isReport(v)) return void out.push({ url: null, label: v.title, text: v.markdown })
    out.push({ url: null, label: `input ${out.length + 1}`, text: JSON.stringify(v, null, 2) })
  }
  walk(value, 0)
  return out
}

/**
 * Shortens texts so their lengths sum to at most `budget` characters, sharing it fairly (short
 * texts keep everything, long ones split the rest equally). A shortened text ends with a note
 * saying how much was kept, so the model knows it reads an excerpt. `truncated` counts them.
 */
export const fitBudget = <S extends { readonly text: string }>(items: ReadonlyArray<S>, budget: number): { items: Array<S>; truncated: number } => {
  const total = items.reduce((n, s) => n + s.text.length, 0)
  if (total <= budget) return { items: [...items], truncated: 0 }
  const order = items.map((s, i) => [s.text.length, i] as const).sort((a, b) => a[0] - b[0])
  const share = new Array<number>(items.length)
  let left = budget
  order.forEach(([len, i], k) => {
    const fair = Math.floor(left / (order.length - k))
    share[i] = Math.min(len, fair)
    left -= share[i]!
  })
  let truncated = 0
  const out = items.map((s, i) => {
    const keep = share[i]!
    if (keep >= s.text.length) return s
    truncated++
    // Cut at a word boundary near the share, so no word is half shown.
    const cut = s.text.slice(0, keep).replace(/\s+\S*$/, "")
    return { ...s, text: `${cut}\n[… shortened to fit the context window: ${cut.length} of ${s.text.length} characters shown]` }
  })
  return { items: out, truncated }
}

/** The prompt block of numbered sources: `SOURCES:`, `[n] label` headers with their texts, `END OF SOURCES`. */
export const sourcesBlock = (sources: ReadonlyArray<Source>): string =>
  `SOURCES:\n\n${sources.map((s, i) => `[${i + 1}] ${s.label}\n${s.text.trim()}`).join("\n\n")}\nEND OF SOURCES`

const URL_IN_TEXT = /https?:\/\/[^\s<>"'`)\]}]+/g

/** Every http(s) URL in a value (strings searched, objects and lists walked), in first-seen order, without trailing punctuation. */
export const collectUrls = (value: unknown): Array<string> => {
  const seen = new Set<string>()
  const walk = (v: unknown): void => {
    if (typeof v === "string") {
      for (const m of v.matchAll(URL_IN_TEXT)) seen.add(m[0].replace(/[.,;:!?]+$/, ""))
    } else if (Array.isArray(v)) v.forEach(walk)
    else if (isObject(v)) Object.values(v).forEach(walk)
  }
  walk(value)
  return [...seen]
}

/** The source numbers an answer cites (`[2]`, `[1, 3]`, `[1][4]`), ascending, within 1..max. */
export const citedNumbers = (answer: string, max: number): Array<number> => {
  const cited = new Set<number>()
  for (const m of answer.matchAll(/\[(\d+(?:\s*,\s*\d+)*)\]/g)) {
    for (const n of m[1]!.split(",").map((x) => Number(x.trim()))) if (n >= 1 && n <= max) cited.add(n)
  }
  return [...cited].sort((a, b) => a - b)
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** How often `name` occurs in `text` as a whole phrase (case-insensitive, letters and digits as word characters). */
export const countMentions = (name: string, text: string): number => {
  const phrase = name.trim()
  if (!phrase) return 0
  const re = new RegExp(`(?<![\\p{L}\\p{N}])${escapeRegExp(phrase).replace(/\s+/g, "\\s+")}(?![\\p{L}\\p{N}])`, "giu")
  return [...text.matchAll(re)].length
}

/**
 * `text` cut to at most `maxWords` words, ending at the last sentence end within them when one
 * exists (else at the word limit, with an ellipsis). Texts within the limit come back as they are.
 */
export const limitWords = (text: string, maxWords: number): string => {
  const words = text.split(/\s+/).filter(Boolean)
  if (words.length <= maxWords) return text
  const head = text.split(/(\s+)/).filter(Boolean)
  let count = 0
  let out = ""
  for (const piece of head) {
    if (/\S/.test(piece) && ++count > maxWords) break
    out += piece
  }
  const end = Math.max(out.lastIndexOf(". "), out.lastIndexOf(".\n"), out.endsWith(".") ? out.length - 1 : -1)
  return end > out.length / 2 ? out.slice(0, end + 1).trim() : `${out.trim()}…`
}
