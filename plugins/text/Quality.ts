/**
 * Text quality measures for `quality_filter`: word counts, a boilerplate/link-text ratio,
 * word-shingle near-duplicate detection (Jaccard similarity) and a stopword-profile language
 * guess. All are deterministic and need no model, so a filter decision can be explained.
 */

/** Word tokens: runs of letters, digits, apostrophes (any script), lower-cased. */
export const words = (text: string): Array<string> => text.toLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}'’]*/gu) ?? []

/**
 * Phrases that mark a line as site furniture rather than content: cookie/consent notices,
 * copyright lines, sign-in and subscription prompts, sharing and legal links.
 */
const BOILERPLATE = new RegExp(
  [
    "\\bcookies?\\b.*\\b(?:use|accept|consent|policy|settings|preferences)\\b",
    "\\b(?:accept|reject|manage)\\b.*\\bcookies?\\b",
    "\\ball rights reserved\\b",
    "^\\s*(?:©|\\(c\\)|copyright\\b)",
    "\\b(?:privacy policy|terms of (?:use|service)|cookie policy)\\b",
    "\\b(?:sign (?:in|up)|log ?in|log ?out|create an account|register now)\\b",
    "\\bsubscribe\\b.*\\b(?:newsletter|updates|now)\\b",
    "\\bshare (?:this|on)\\b|\\bfollow us\\b",
    "\\b(?:skip to (?:main )?content|back to top|read more|load more)\\b",
    "\\bjavascript\\b.*\\b(?:enable|disabled|required)\\b"
  ].join("|"),
  "i"
)

const MD_LINK = /\[([^\]]*)\]\([^)]*\)/g
const BARE_URL = /\bhttps?:\/\/\S+/g

/**
 * The share (0..1) of a text's words that are boilerplate or link text. Words are counted as a
 * reader sees them: a Markdown link `[text](url)` is its text, a bare URL one word. A line counts
 * as boilerplate when it matches a furniture phrase (cookie notices, copyright, sign-in, legal
 * links), is a menu or breadcrumb (separators such as `|`, `·`, `»` and no closing sentence
 * punctuation), or is nothing but a link; in other lines, the words of link texts and bare URLs
 * count as link text. 0 for a text without words.
 */
export const boilerplateRatio = (text: string): number => {
  let total = 0
  let junk = 0
  for (const line of text.split(/\n/)) {
    const visible = line.replace(MD_LINK, "$1").replace(BARE_URL, " url ")
    const n = words(visible).length
    if (n === 0) continue
    total += n
    const menu = /[|·•»›]/.test(visible) && !/[.!?]["”’)]?\s*$/.test(visible)
    const linkOnly = /^\s*(?:[-*+]|\d+\.)?\s*(?:\[[^\]]*\]\([^)]*\)|https?:\/\/\S+)\s*$/.test(line)
    if (BOILERPLATE.test(visible) || menu || linkOnly) {
      junk += n
      continue
    }
    for (const m of line.matchAll(MD_LINK)) junk += words(m[1]!).length
    junk += (line.replace(MD_LINK, "").match(BARE_URL) ?? []).length
  }
  return total === 0 ? 0 : Math.min(1, junk / total)
}

/** The set of `k`-word shingles of a text (one shingle of all its words when shorter than `k`). */
export const shingles = (text: string, k = 5): Set<string> => {
  const w = words(text)
  const out = new Set<string>()
  if (w.length === 0) return out
  if (w.length < k) {
    out.add(w.join(" "))
    return out
  }
  for (let i = 0; i + k <= w.length; i++) out.add(w.slice(i, i + k).join(" "))
  return out
}

/** Jaccard similarity |A ∩ B| / |A ∪ B| (0..1); two empty sets are identical (1). */
export const jaccard = (a: ReadonlySet<string>, b: ReadonlySet<string>): number => {
  if (a.size === 0 && b.size === 0) return 1
  const [small, large] = a.size <= b.size ? [a, b] : [b, a]
  let inter = 0
  for (const s of small) if (large.has(s)) inter++
  return inter / (a.size + b.size - inter)
}

/**
 * The most frequent function words of the languages `detectLanguage` knows (ISO 639-1). Kept to
 * words of that language that are rare as words of the others, so the profiles separate well.
 */
export const STOPWORDS: Readonly<Record<string, ReadonlySet<string>>> = Object.fromEntries(
  Object.entries({
    en: "the of and to in is that it for was on are with as his they be at this have from or had by but not what all were we when your can said there an which she do their if will each about how up out them then many some so these would other into has more her two like him see could no than been who its now my over did down only way just",
    de: "der die und das ist nicht ein eine zu den von mit sich des auf für im dem auch es an als wird bei aus er hat dass sie nach noch wie einem über einen so zum aber vor nur oder bis ich mehr durch man sein wurde sind",
    fr: "le la les et des du un une est pas que qui dans pour sur au avec il elle ce se ne plus par sont mais ou comme nous vous leur été cette aux son sa ses être fait tout bien où même",
    es: "el los las del que y en un una es por con para como más pero sus al lo se le ha muy ya también fue este esta entre cuando todo sin sobre ser tiene son hay dos desde porque donde",
    it: "il lo la gli le di che e un una è per con del della non sono da dei nel alla anche come più ma si ha questo questa nella tra sul gli delle degli essere molto",
    pt: "o os as do da dos das que e em um uma é para com não se na no por mais ao pelo pela como mas foi ele ela são seu sua também já entre quando muito há isso",
    nl: "de het een en van is dat op te zijn met voor niet aan er maar om ook als dan bij nog wel naar uit wordt hij zij deze dit geen heeft kan werd door over"
  }).map(([lang, list]) => [lang, new Set(list.split(" "))])
)

/** Languages `detectLanguage` can name (the keys of `STOPWORDS`). */
export const LANGUAGES = ["en", "de", "fr", "es", "it", "pt", "nl"] as const

/**
 * A language guess from stopword profiles: the language whose function words make up the
 * largest share of the text's words, when that share is at least `minShare` (0.12: prose in a
 * language runs 30-50% function words; another language's list rarely covers 10%); null when
 * no language reaches it or the text has fewer than 20 words (too little to tell).
 */
export const detectLanguage = (text: string, minShare = 0.12): { language: string; share: number } | null => {
  const w = words(text)
  if (w.length < 20) return null
  let best: { language: string; share: number } | null = null
  for (const [language, set] of Object.entries(STOPWORDS)) {
    let hits = 0
    for (const t of w) if (set.has(t)) hits++
    const share = hits / w.length
    if (share >= minShare && (!best || share > best.share)) best = { language, share }
  }
  return best
}
