/**
 * `platform.yaml`: finding, interpolating and decoding the platform configuration.
 *
 * - Found with cosmiconfig (`platform.yaml`, `.platformrc*`, `package.json#platform`), or given by
 *   `--config FILE` / `PLATFORM_CONFIG`.
 * - `${VAR}` and `${VAR:-default}` in string scalars are replaced from the environment; an
 *   unquoted scalar is re-read as YAML after replacement, so `port: ${PORT:-9004}` is a number.
 *   `$${` writes a literal `${`.
 * - The file is decoded with Effect `Schema`. Errors carry `file:line:col path: message`, where
 *   line and column come from the `yaml` parser's node ranges (1-based).
 */
import { cosmiconfig } from "cosmiconfig"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"
import * as nodePath from "node:path"
import * as YAML from "yaml"
import { issuesOf } from "./Issues.ts"
import { defaultLimits, ListenerLimits } from "./Limits.ts"

/** One HTTP listener. `port: 0` asks the OS for a free port (tests). */
export const Listener = Schema.Struct({
  name: Schema.String.pipe(Schema.pattern(/^[a-z][a-z0-9-]*$/)).annotations({ description: "listener name, referenced by plugins" }),
  host: Schema.optionalWith(Schema.String, { default: () => "127.0.0.1" }).annotations({ description: "bind address" }),
  port: Schema.Int.pipe(Schema.between(0, 65535)).annotations({ description: "TCP port; 0 picks a free one" }),
  limits: Schema.optionalWith(ListenerLimits, { default: () => defaultLimits }).annotations({ description: "request limits (body bytes, JSON depth, head size, request timeout, requests in flight), per route overridable" })
}).annotations({ identifier: "Listener", description: "An HTTP listener the platform opens" })
export type Listener = Schema.Schema.Type<typeof Listener>

/** Log settings: `format: auto` is pretty in a terminal and JSON lines otherwise. */
export const LogSettings = Schema.Struct({
  level: Schema.optionalWith(Schema.Literal("trace", "debug", "info", "warning", "error", "none"), { default: () => "info" as const }),
  format: Schema.optionalWith(Schema.Literal("auto", "json", "pretty"), { default: () => "auto" as const })
}).annotations({ identifier: "LogSettings" })

/**
 * The kernel's part of a plugin entry. The rest of the entry is the plugin's own config,
 * decoded later with the plugin's Schema.
 */
export const PluginEntry = Schema.Struct({
  enabled: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  listener: Schema.optional(Schema.String),
  module: Schema.optional(Schema.String).annotations({ description: "path (relative to the config file) or npm package name of a plugin outside this repository" })
}).annotations({ identifier: "PluginEntry" })

/** The whole file, as the kernel sees it (plugin sections kept as unknown records). */
export const PlatformConfig = Schema.Struct({
  data_dir: Schema.optionalWith(Schema.String, { default: () => "./data" }).annotations({ description: "data directory, relative to the config file" }),
  shutdown_grace_ms: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { default: () => 10_000 }).annotations({ description: "bound for in-flight requests at shutdown, in ms" }),
  log: Schema.optionalWith(LogSettings, { default: () => ({ level: "info" as const, format: "auto" as const }) }),
  listeners: Schema.Array(Listener),
  plugins: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.Record({ key: Schema.String, value: Schema.Unknown }) }), { default: () => ({}) })
}).annotations({ identifier: "PlatformConfig", description: "platform.yaml" })
export type PlatformConfig = Schema.Schema.Type<typeof PlatformConfig>

/** A config problem located in the file. `toString()` is the one-line form users see. */
export class ConfigError extends Schema.TaggedError<ConfigError>()("ConfigError", {
  file: Schema.String,
  line: Schema.optional(Schema.Number),
  column: Schema.optional(Schema.Number),
  path: Schema.String,
  detail: Schema.String,
  plugin: Schema.optional(Schema.String)
}) {
  get message(): string {
    return `${nodePath.basename(this.file)}${this.line !== undefined ? `:${this.line}:${this.column}` : ""} ${this.path ? `${this.path}: ` : ""}${this.detail}`
  }

  /** The error at `file:line:column`, `path` (empty for the whole file), naming `plugin` when one is at fault. */
  static at(file: string, line: number | undefined, column: number | undefined, path: string, detail: string, plugin?: string): ConfigError {
    return new ConfigError({ file, path, detail, ...(line !== undefined ? { line } : {}), ...(column !== undefined ? { column } : {}), ...(plugin !== undefined ? { plugin } : {}) })
  }
}

/** A loaded configuration: the interpolated plain value plus what is needed to locate errors. */
export interface LoadedConfig {
  /** Absolute path of the file (`<package.json>` for the package.json form). */
  readonly file: string
  readonly dir: string
  readonly raw: Record<string, unknown>
  /** The file's text as read (before interpolation), so a copy of the platform can boot from it. */
  readonly text: string
  readonly config: PlatformConfig
  /** Finds line/column of a path in the file (undefined when the source has no positions). */
  readonly locate: (p: ReadonlyArray<PropertyKey>, atKey?: boolean) => { line: number; column: number } | undefined
}

/** Renders a path as `plugins.gateway.engines[1].kind`. */
export const formatPath = (p: ReadonlyArray<PropertyKey>): string =>
  p.reduce<string>((acc, k) => typeof k === "number" ? `${acc}[${k}]` : acc === "" ? String(k) : `${acc}.${String(k)}`, "")

const VAR = /\$(\$)?\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g

/** Replaces `${VAR}` / `${VAR:-default}`; returns the missing variable name on failure. */
export const interpolate = (text: string, env: NodeJS.ProcessEnv): { value: string } | { missing: string } => {
  let missing: string | undefined
  const value = text.replace(VAR, (whole, escaped: string | undefined, name: string, def: string | undefined) => {
    if (escaped) return whole.slice(1)
    const v = env[name]
    if (v !== undefined && v !== "") return v
    if (def !== undefined) return def
    missing ??= name
    return ""
  })
  return missing ? { missing } : { value }
}

interface Parsed {
  readonly doc: YAML.Document.Parsed
  readonly lines: YAML.LineCounter
}

const parseYaml = (file: string, text: string): Parsed => {
  const lines = new YAML.LineCounter()
  const doc = YAML.parseDocument(text, { lineCounter: lines, prettyErrors: false })
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!
    const pos = lines.linePos(e.pos[0])
    throw ConfigError.at(file, pos.line, pos.col, "", `invalid YAML: ${e.message.split("\n")[0]}`)
  }
  return { doc, lines }
}

/** Walks the YAML AST, interpolating scalars in place (positions stay on the nodes). */
const interpolateDoc = (file: string, parsed: Parsed, env: NodeJS.ProcessEnv): void => {
  YAML.visit(parsed.doc, {
    Scalar(_key, node) {
      if (typeof node.value !== "string" || !node.value.includes("${")) return
      const r = interpolate(node.value, env)
      if ("missing" in r) {
        const pos = node.range ? parsed.lines.linePos(node.range[0]) : undefined
        throw ConfigError.at(file, pos?.line, pos?.col, "", `environment variable ${r.missing} is not set and has no default (write \${${r.missing}:-default})`)
      }
      const plain = node.type === "PLAIN" || node.type === undefined
      node.value = plain ? YAML.parse(r.value === "" ? '""' : r.value) ?? r.value : r.value
    }
  })
}

const locator = (parsed: Parsed | undefined) => (p: ReadonlyArray<PropertyKey>, atKey = false) => {
  if (!parsed) return undefined
  const at = (offset: number) => {
    const pos = parsed.lines.linePos(offset)
    return { line: pos.line, column: pos.col }
  }
  if (atKey && p.length > 0) {
    const parent = parsed.doc.getIn(p.slice(0, -1) as Array<unknown>, true)
    if (YAML.isMap(parent)) {
      const pair = parent.items.find((it) => YAML.isScalar(it.key) && it.key.value === p[p.length - 1])
      if (pair && YAML.isScalar(pair.key) && pair.key.range) return at(pair.key.range[0])
    }
  }
  // The value's own position; a missing key points at its closest existing parent.
  for (let n = p.length; n >= 0; n--) {
    const node = parsed.doc.getIn(p.slice(0, n) as Array<unknown>, true) as YAML.Node | undefined
    if (node && YAML.isNode(node) && node.range) return at(node.range[0])
  }
  return undefined
}

/**
 * Turns a Schema decode failure into `ConfigError`s located in the file.
 * `prefix` is prepended to each issue path (e.g. `["plugins", "gateway"]`).
 */
export const issuesToErrors = (
  loaded: Pick<LoadedConfig, "file" | "locate">,
  error: ParseResult.ParseError,
  prefix: ReadonlyArray<PropertyKey> = [],
  plugin?: string
): ReadonlyArray<ConfigError> => {
  // One issue per path (a union's members merged: `expected "a" | "b", actual "c"`).
  return issuesOf(error).map((first) => {
    const message = first.message.split("; ").map((m) => m.charAt(0).toLowerCase() + m.slice(1)).join("; ")
    const full = [...prefix, ...first.path]
    const pos = loaded.locate(full, first._tag === "Unexpected")
    return ConfigError.at(loaded.file, pos?.line, pos?.column, formatPath(full), message, plugin)
  })
}

/** Several config errors at once; the message lists each on its own line. */
export class ConfigErrors extends Schema.TaggedError<ConfigErrors>()("ConfigErrors", {
  errors: Schema.Array(ConfigError)
}) {
  get message(): string {
    return this.errors.map((e) => e.message).join("\n")
  }

  static of(errors: ReadonlyArray<ConfigError>): ConfigErrors {
    return new ConfigErrors({ errors })
  }
}

const SEARCH_PLACES = [
  "platform.yaml",
  "platform.yml",
  ".platformrc",
  ".platformrc.yaml",
  ".platformrc.yml",
  ".platformrc.json",
  "package.json"
]

/** Finds the config file: explicit path, then `PLATFORM_CONFIG`, then cosmiconfig's search from `cwd`. */
export const findConfigFile = async (options: { path?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<string> => {
  const env = options.env ?? process.env
  const cwd = options.cwd ?? process.cwd()
  const explicit = options.path ?? env.PLATFORM_CONFIG
  if (explicit) {
    const abs = path.resolve(cwd, explicit)
    if (!fs.existsSync(abs)) throw ConfigError.at(abs, undefined, undefined, "", `config file not found: ${abs}`)
    return abs
  }
  const explorer = cosmiconfig("platform", {
    searchPlaces: SEARCH_PLACES,
    searchStrategy: "project",
    // Only locate here; parsing is ours so that positions survive.
    loaders: { ".yaml": (f) => ({ found: f }), ".yml": (f) => ({ found: f }), noExt: (f) => ({ found: f }), ".json": (f, content) => f.endsWith("package.json") ? JSON.parse(content) : { found: f } }
  })
  const result = await explorer.search(cwd)
  if (!result) {
    throw ConfigError.at(path.join(cwd, "platform.yaml"), undefined, undefined, "", `no platform.yaml found from ${cwd} (searched ${SEARCH_PLACES.join(", ")}; or pass --config FILE / set PLATFORM_CONFIG)`)
  }
  return result.filepath
}

/**
 * Parses, interpolates and decodes a config text. `file` names it in errors.
 * Throws `ConfigError` (YAML syntax, missing variable) or `ConfigErrors` (Schema).
 */
export const parseConfig = (file: string, text: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig => {
  let parsed: Parsed | undefined
  let raw: unknown
  if (path.basename(file) === "package.json") {
    const pkg = JSON.parse(text) as { platform?: unknown }
    raw = pkg.platform
    // package.json has no YAML positions; interpolate through a YAML document of the value.
    parsed = parseYaml(file, YAML.stringify(raw ?? {}))
    interpolateDoc(file, parsed, env)
    raw = parsed.doc.toJS()
    parsed = undefined
  } else if (file.endsWith(".json")) {
    parsed = parseYaml(file, text) // JSON is YAML; keeps positions
    interpolateDoc(file, parsed, env)
    raw = parsed.doc.toJS()
  } else {
    parsed = parseYaml(file, text)
    interpolateDoc(file, parsed, env)
    raw = parsed.doc.toJS()
  }
  const locate = locator(parsed)
  const loaded = { file, locate }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw ConfigErrors.of([ConfigError.at(file, 1, 1, "", "expected a mapping at the top level")])
  }
  const decoded = Schema.decodeUnknownEither(PlatformConfig)(raw, { errors: "all", onExcessProperty: "error" })
  if (Either.isLeft(decoded)) throw ConfigErrors.of(issuesToErrors(loaded, decoded.left))
  const config = decoded.right
  const errors: Array<ConfigError> = []
  const names = new Set<string>()
  config.listeners.forEach((l, i) => {
    if (names.has(l.name)) {
      const pos = locate(["listeners", i, "name"])
      errors.push(ConfigError.at(file, pos?.line, pos?.column, `listeners[${i}].name`, `duplicate listener "${l.name}"`))
    }
    names.add(l.name)
  })
  if (errors.length) throw ConfigErrors.of(errors)
  return { file, dir: path.dirname(file), raw: raw as Record<string, unknown>, text, config, locate }
}

/** Finds and loads the config file (see `findConfigFile`, `parseConfig`). */
export const loadConfig = async (options: { path?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<LoadedConfig> => {
  const file = await findConfigFile(options)
  return parseConfig(file, fs.readFileSync(file, "utf8"), options.env ?? process.env)
}

const SECRET_KEY = /(token|secret|password|passwd|api_?key|access_?key|private_?key|credentials?)$/i

/** A deep copy with secret-looking values (by key name) replaced by `"***"`, for `config show`. */
export const redact = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(redact)
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, SECRET_KEY.test(k) && v !== null && v !== "" && typeof v !== "object" ? "***" : redact(v)])
    )
  }
  return value
}
