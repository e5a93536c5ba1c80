/**
 * `{{ expr }}` expressions and stage conditions of graphs, evaluated with Jexl (a sandboxed
 * expression language: no access to JavaScript globals, no `eval`). Identifiers name graph
 * inputs, state values, the element of a `parallel_foreach` (its `as` name) and a loop's
 * `iteration`; members (`page.title`), indexes (`urls[0]`), filters (`items[.score > 5]`),
 * comparisons, `&&`/`||`/`!`, `? :` and the functions below work as in Jexl.
 *
 * Functions (also usable as transforms, `urls|length`): `length(x)` (list/string/object size;
 * 0 for null), `lower(s)`, `upper(s)`, `trim(s)`, `join(list, sep = ", ")`, `split(s, sep)`,
 * `contains(listOrString, x)`, `keys(obj)`, `default(x, fallback)` (fallback when x is null or
 * undefined), `now()` (ISO 8601 UTC), `today()` (YYYY-MM-DD), `days_ago(n)` (the date n days
 * before today, YYYY-MM-DD), `slice(list, start, end)`, `first(list)`, `last(list)`,
 * `unique(list)`, `json(x)`, `int(x)`, `str(x)`.
 */
import * as Schema from "effect/Schema"
import { Jexl } from "jexl"

type Fn = (...args: Array<any>) => unknown

const size = (x: unknown): number =>
  x === null || x === undefined ? 0 : typeof x === "string" || Array.isArray(x) ? x.length : typeof x === "object" ? Object.keys(x).length : 0
const isoDate = (ms: number): string => new Date(ms).toISOString().slice(0, 10)

/** The functions expressions may call (see the module docstring). */
export const FUNCTIONS: Readonly<Record<string, Fn>> = {
  length: size,
  lower: (s: unknown) => String(s ?? "").toLowerCase(),
  upper: (s: unknown) => String(s ?? "").toUpperCase(),
  trim: (s: unknown) => String(s ?? "").trim(),
  join: (l: unknown, sep: unknown = ", ") => (Array.isArray(l) ? l.map(String).join(String(sep)) : String(l ?? "")),
  split: (s: unknown, sep: unknown = ",") => String(s ?? "").split(String(sep)).map((x) => x.trim()).filter((x) => x.length > 0),
  contains: (h: unknown, n: unknown) =>
    Array.isArray(h) ? h.includes(n) : typeof h === "string" ? h.toLowerCase().includes(String(n).toLowerCase()) : false,
  keys: (o: unknown) => (o !== null && typeof o === "object" ? Object.keys(o) : []),
  default: (x: unknown, d: unknown) => (x === null || x === undefined ? d : x),
  now: () => new Date().toISOString(),
  today: () => isoDate(Date.now()),
  days_ago: (n: unknown) => isoDate(Date.now() - Number(n) * 86_400_000),
  slice: (l: unknown, a: unknown = 0, b?: unknown) => (Array.isArray(l) || typeof l === "string" ? l.slice(Number(a), b === undefined ? undefined : Number(b)) : []),
  first: (l: unknown) => (Array.isArray(l) ? l[0] ?? null : null),
  last: (l: unknown) => (Array.isArray(l) ? l[l.length - 1] ?? null : null),
  unique: (l: unknown) => (Array.isArray(l) ? [...new Set(l)] : []),
  json: (x: unknown) => JSON.stringify(x ?? null),
  int: (x: unknown) => Math.trunc(Number(x)),
  str: (x: unknown) => (x === null || x === undefined ? "" : typeof x === "string" ? x : JSON.stringify(x))
}

const jexl = new Jexl()
for (const [name, fn] of Object.entries(FUNCTIONS)) {
  jexl.addFunction(name, fn)
  jexl.addTransform(name, fn)
}

/** A syntax error in an expression: `message` is Jexl's, or `empty expression`. */
export class ExprSyntaxError extends Schema.TaggedError<ExprSyntaxError>()("ExprSyntaxError", { message: Schema.String }) {}

interface AstNode {
  readonly type: string
  readonly [k: string]: unknown
}

/** Parses `expr`; throws `ExprSyntaxError` with Jexl's message. */
export const compile = (expr: string) => {
  if (expr.trim() === "") throw new ExprSyntaxError({ message: "empty expression" })
  try {
    const e = jexl.compile(expr)
    ;(e as unknown as { _getAst: () => AstNode })._getAst()
    return e
  } catch (e) {
    throw new ExprSyntaxError({ message: (e as Error).message ?? String(e) })
  }
}

/**
 * The free identifiers of an expression (top-level names, not members or relative names) and
 * the functions it calls. Throws `ExprSyntaxError`.
 */
export const references = (expr: string): { names: Set<string>; functions: Set<string> } => {
  const ast = (compile(expr) as unknown as { _getAst: () => AstNode })._getAst()
  const names = new Set<string>()
  const functions = new Set<string>()
  const walk = (n: unknown): void => {
    if (n === null || typeof n !== "object") return
    if (Array.isArray(n)) return n.forEach(walk)
    const node = n as AstNode
    if (node.type === "Identifier") {
      if (node.from !== undefined) return walk(node.from)
      if (node.relative !== true) names.add(String(node.value))
      return
    }
    if (node.type === "FunctionCall") functions.add(String(node.name))
    for (const [k, v] of Object.entries(node)) if (k !== "type") walk(v)
  }
  walk(ast)
  return { names, functions }
}

/** Evaluates `expr` against `context`; throws `ExprSyntaxError` or the evaluation's error. */
export const evaluate = (expr: string, context: Record<string, unknown>): unknown => compile(expr).evalSync(context)

const TEMPLATE = /\{\{([\s\S]*?)\}\}/g
const WHOLE = /^\s*\{\{([\s\S]*?)\}\}\s*$/

/** The expressions inside a string's `{{ }}` markers, in order. */
export const templateExpressions = (s: string): Array<string> => [...s.matchAll(TEMPLATE)].map((m) => m[1]!.trim())

/** True when `s` contains a `{{ }}` marker. */
export const isTemplate = (s: string): boolean => s.includes("{{")

const render = (v: unknown): string =>
  v === null || v === undefined ? "" : Array.isArray(v) ? v.map(render).join(", ") : typeof v === "object" ? JSON.stringify(v) : String(v)

/**
 * Fills a template string: a string that is exactly one `{{ expr }}` becomes the expression's
 * value with its own type (a list stays a list, an int an int); otherwise each marker is replaced
 * by its value as text (lists joined with ", ", objects as JSON, null as "").
 */
export const fillString = (s: string, context: Record<string, unknown>): unknown => {
  const whole = WHOLE.exec(s)
  if (whole && !whole[1]!.includes("}}") && templateExpressions(s).length === 1) return evaluate(whole[1]!.trim(), context)
  return s.replace(TEMPLATE, (_, e: string) => render(evaluate(e.trim(), context)))
}

/** Fills every template string inside `value` (objects and lists walked deeply). */
export const fill = (value: unknown, context: Record<string, unknown>): unknown => {
  if (typeof value === "string") return isTemplate(value) ? fillString(value, context) : value
  if (Array.isArray(value)) return value.map((v) => fill(v, context))
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, context)]))
  return value
}

/** Truthiness of a condition's value: Jexl's, except that an empty list or object is false. */
export const truthy = (v: unknown): boolean =>
  Array.isArray(v) ? v.length > 0 : v !== null && typeof v === "object" ? Object.keys(v).length > 0 : Boolean(v)
