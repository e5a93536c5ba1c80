/**
 * Decoding errors as one issue per path, the form every error body and message of the platform
 * uses. Effect's `ArrayFormatter` reports each member of a union at the same path (`Expected
 * "a", actual "c"`, `Expected "b", actual "c"`), and an optional field's `undefined` member too
 * (`Expected undefined, actual -1` beside the real problem); here they become one issue:
 * `Expected "a" | "b", actual "c"`, the `undefined` member left out once a value was given.
 */
import * as ParseResult from "effect/ParseResult"

const EXPECTED = /^Expected (.+), actual (.+)$/s

/** Merges the issues of one path (see the module comment). */
const mergeGroup = (group: ReadonlyArray<ParseResult.ArrayFormatterIssue>): ParseResult.ArrayFormatterIssue => {
  if (group.length === 1) return group[0]!
  const parsed = group.map((issue) => ({ issue, m: EXPECTED.exec(issue.message) }))
  const keptParsed = parsed.filter(({ m }) => !(m !== null && m[1] === "undefined"))
  const kept = keptParsed.map(({ issue }) => issue)
  const keptParts = keptParsed.map(({ m }) => m)
  if (kept.length === 0) return group[0]!
  if (kept.length === 1) return kept[0]!
  if (keptParts.every((m) => m !== null && m[2] === keptParts[0]![2])) {
    const expected = [...new Set(keptParts.map((m) => m![1]!))]
    return { ...kept[0]!, message: `Expected ${expected.join(" | ")}, actual ${keptParts[0]![2]}` }
  }
  return { ...kept[0]!, message: [...new Set(kept.map((i) => i.message))].join("; ") }
}

/** The issues of `error`, one per path, in first-seen order. */
export const issuesOf = (error: ParseResult.ParseError): Array<ParseResult.ArrayFormatterIssue> => {
  const byPath = new Map<string, Array<ParseResult.ArrayFormatterIssue>>()
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(error)) {
    const key = JSON.stringify(issue.path)
    const group = byPath.get(key)
    if (group) group.push(issue)
    else byPath.set(key, [issue])
  }
  return [...byPath.values()].map(mergeGroup)
}
