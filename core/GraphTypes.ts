/**
 * The value types of graph pipelines: the vocabulary graph operations declare their input and
 * output in, and the engine checks a graph against before it runs (research-jobs spec, "Graph
 * definition": `string`, `int`, `bool`, lists such as `string[]`, `url[]`; "Operations by
 * category": `url[]`, `html[]`, `text[]`, `chunk[]`, `vector[]`, `entity[]`).
 *
 * A type is a base name, optionally followed by `[]` (a list of it). `fits(actual, accepted)`
 * decides whether a state holding `actual` may feed an operation accepting `accepted`:
 * - `any` on either side fits everything of the same arity, and `any` alone fits lists too;
 * - a base fits itself and its ancestors (`url` → `string` → `text`, `markdown` → `text`,
 *   `int` → `float`);
 * - a single value never fits a list or the reverse (an op that takes both declares both).
 *
 * The shared shapes (`Page`, `Doc`, `Chunk`, `Vector`, `Entity`, ...) are the contract between
 * operations of different plugins: an op producing `html[]` outputs `Page[]`, one consuming
 * `chunk[]` reads `Chunk[]`. Every shape is JSON (the result of a graph is stored as JSON).
 */
import * as Schema from "effect/Schema"

/** Base type names and their parent (`null`: a root). */
export const GRAPH_BASE_TYPES = {
  any: null,
  text: null,
  string: "text",
  url: "string",
  markdown: "text",
  int: "float",
  float: null,
  bool: null,
  json: null,
  html: null,
  snapshot: "html",
  chunk: null,
  vector: null,
  entity: null,
  topic: null,
  video: null,
  transcript: "text",
  screenshot: null,
  image: null,
  report: null,
  alert: null
} as const satisfies Record<string, string | null>

export type GraphBaseType = keyof typeof GRAPH_BASE_TYPES
/** A graph type: `url`, `url[]`, `chunk[]`. */
export type GraphType = GraphBaseType | `${GraphBaseType}[]`

const isBase = (s: string): s is GraphBaseType => Object.prototype.hasOwnProperty.call(GRAPH_BASE_TYPES, s)

/** Parses a type name; undefined when it is not in the vocabulary. */
export const parseGraphType = (t: string): { base: GraphBaseType; list: boolean } | undefined => {
  const list = t.endsWith("[]")
  const base = list ? t.slice(0, -2) : t
  return isBase(base) ? { base, list } : undefined
}

/** True when `t` names a graph type. */
export const isGraphType = (t: string): t is GraphType => parseGraphType(t) !== undefined

/** True when `base` is `ancestor` or descends from it. */
const descends = (base: GraphBaseType, ancestor: GraphBaseType): boolean => {
  for (let b: GraphBaseType | null = base; b !== null; b = GRAPH_BASE_TYPES[b]) if (b === ancestor) return true
  return false
}

/** True when a value of type `actual` may be given where `accepted` is expected (rules above). */
export const fits = (actual: GraphType, accepted: GraphType): boolean => {
  const a = parseGraphType(actual)
  const b = parseGraphType(accepted)
  if (!a || !b) return false
  if (b.base === "any" && !b.list) return true
  if (a.base === "any" && !a.list) return true
  if (a.list !== b.list) return false
  return a.base === "any" || b.base === "any" || descends(a.base, b.base)
}

/** The element type of a list type (`url[]` → `url`); `any` for `any`; undefined for a non-list. */
export const elementType = (t: GraphType): GraphType | undefined => {
  const p = parseGraphType(t)
  if (!p) return undefined
  if (p.list) return p.base
  return p.base === "any" ? "any" : undefined
}

/** A fetched web page (`html`): the body decoded as text, with where it came from. */
export const Page = Schema.Struct({
  url: Schema.String,
  final_url: Schema.String,
  status: Schema.Int,
  content_type: Schema.String,
  html: Schema.String
}).annotations({ identifier: "GraphPage", description: "html: a fetched page" })
export type Page = typeof Page.Type

/** A text with provenance; a `text` value is a plain string or a `Doc`. */
export const Doc = Schema.Struct({
  url: Schema.NullOr(Schema.String),
  title: Schema.NullOr(Schema.String),
  text: Schema.String
}).annotations({ identifier: "GraphDoc", description: "text with its source URL and title" })
export type Doc = typeof Doc.Type

/** `text`: a string or a `Doc`. */
export const Text = Schema.Union(Schema.String, Doc).annotations({ identifier: "GraphText" })
export type Text = typeof Text.Type

/** The string of a `text` value. */
export const textOf = (t: Text): string => (typeof t === "string" ? t : t.text)
/** The source URL of a `text` value, when it has one. */
export const sourceOf = (t: Text): string | null => (typeof t === "string" ? null : t.url)

/** A `chunk`: a window of a text, with its source and position; `score` once a filter ranked it. */
export const Chunk = Schema.Struct({
  text: Schema.String,
  source: Schema.NullOr(Schema.String),
  index: Schema.Int,
  score: Schema.optional(Schema.Number)
}).annotations({ identifier: "GraphChunk" })
export type Chunk = typeof Chunk.Type

/** A `vector`: an embedded chunk (unit-length, `dimensions` long), with the model that made it. */
export const Vector = Schema.Struct({
  id: Schema.String,
  model: Schema.String,
  text: Schema.String,
  source: Schema.NullOr(Schema.String),
  vector: Schema.Array(Schema.Number)
}).annotations({ identifier: "GraphVector" })
export type Vector = typeof Vector.Type

/** An `entity`: a named thing found in text (`type` e.g. person, organization, location, date, event). */
export const Entity = Schema.Struct({
  name: Schema.String,
  type: Schema.String,
  mentions: Schema.Int,
  sources: Schema.Array(Schema.String),
  description: Schema.optional(Schema.String)
}).annotations({ identifier: "GraphEntity" })
export type Entity = typeof Entity.Type

/** A `topic`: a theme of a text collection, its keywords and its share (0..1). */
export const Topic = Schema.Struct({
  label: Schema.String,
  keywords: Schema.Array(Schema.String),
  weight: Schema.Number
}).annotations({ identifier: "GraphTopic" })
export type Topic = typeof Topic.Type

/** A `report`: a Markdown document stored in the file store. */
export const Report = Schema.Struct({
  title: Schema.String,
  markdown: Schema.String,
  file_url: Schema.String
}).annotations({ identifier: "GraphReport" })
export type Report = typeof Report.Type

/** An `alert`: a keyword seen in monitored content. */
export const Alert = Schema.Struct({
  keyword: Schema.String,
  url: Schema.NullOr(Schema.String),
  excerpt: Schema.String
}).annotations({ identifier: "GraphAlert" })
export type Alert = typeof Alert.Type
