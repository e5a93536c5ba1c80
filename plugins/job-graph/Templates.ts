/**
 * Graph templates: the ten built-in templates (YAML files in `templates/`, read-only) and custom
 * templates registered over HTTP, persisted one YAML file each in `<data_dir>/job-graph/templates`.
 *
 * A template is a graph definition whose `name` is its template name (`^[a-z][a-z0-9_]{0,63}$`).
 * Registering validates it as a whole (no job params); a built-in name cannot be taken; writes
 * are atomic (temp file + rename), so a crash never leaves half a template.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { parse } from "yaml"

/** Where the built-in templates live. */
export const BUILTIN_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), "templates")
/** Template names. */
export const TEMPLATE_NAME = /^[a-z][a-z0-9_]{0,63}$/

/** A template as stored: its YAML text and where it came from. */
export interface TemplateEntry {
  readonly name: string
  readonly builtin: boolean
  readonly yaml: string
}

/** Summary facts of a template's YAML (for listings); tolerant of invalid YAML (fields null). */
export const summarize = (yaml: string): { description: string | null; version: string | null; inputs: Array<unknown>; outputs: Array<unknown> } => {
  try {
    const v = parse(yaml) as Record<string, unknown> | null
    return {
      description: typeof v?.description === "string" ? v.description : null,
      version: v?.version === undefined || v?.version === null ? null : String(v.version),
      inputs: Array.isArray(v?.inputs) ? v.inputs : [],
      outputs: Array.isArray(v?.outputs) ? v.outputs : []
    }
  } catch {
    return { description: null, version: null, inputs: [], outputs: [] }
  }
}

/** The name a YAML text declares (`name:`), or null. */
export const declaredName = (yaml: string): string | null => {
  try {
    const v = parse(yaml) as Record<string, unknown> | null
    return typeof v?.name === "string" ? v.name : null
  } catch {
    return null
  }
}

/** Built-in and custom templates. */
export class TemplateStore {
  private readonly builtins: ReadonlyMap<string, string>

  constructor(private readonly customDir: string, builtinDir = BUILTIN_DIR) {
    const m = new Map<string, string>()
    for (const f of fs.existsSync(builtinDir) ? fs.readdirSync(builtinDir).sort() : []) {
      if (f.endsWith(".yaml")) m.set(f.slice(0, -5), fs.readFileSync(path.join(builtinDir, f), "utf8"))
    }
    this.builtins = m
    fs.mkdirSync(customDir, { recursive: true })
  }

  isBuiltin(name: string): boolean {
    return this.builtins.has(name)
  }

  /** The template `name`, or undefined. Custom templates are read from disk each time (other instances may add them). */
  get(name: string): TemplateEntry | undefined {
    if (!TEMPLATE_NAME.test(name)) return undefined
    const b = this.builtins.get(name)
    if (b !== undefined) return { name, builtin: true, yaml: b }
    try {
      return { name, builtin: false, yaml: fs.readFileSync(path.join(this.customDir, `${name}.yaml`), "utf8") }
    } catch {
      return undefined
    }
  }

  /** Every template, built-ins first, each group by name. */
  list(): Array<TemplateEntry> {
    const custom = fs.readdirSync(this.customDir).filter((f) => f.endsWith(".yaml")).map((f) => f.slice(0, -5)).sort()
    return [
      ...[...this.builtins].map(([name, yaml]) => ({ name, builtin: true, yaml })),
      ...custom.flatMap((n) => (this.builtins.has(n) ? [] : [this.get(n)].filter((e): e is TemplateEntry => e !== undefined)))
    ]
  }

  /** Stores custom template `name` (the caller validated it). Returns whether it replaced one. */
  put(name: string, yaml: string): boolean {
    const file = path.join(this.customDir, `${name}.yaml`)
    const existed = fs.existsSync(file)
    const tmp = `${file}.${process.pid}.${Date.now()}.tmp`
    fs.writeFileSync(tmp, yaml)
    fs.renameSync(tmp, file)
    return existed
  }

  /** Deletes custom template `name`; false when there is none. */
  delete(name: string): boolean {
    try {
      fs.unlinkSync(path.join(this.customDir, `${name}.yaml`))
      return true
    } catch {
      return false
    }
  }
}
