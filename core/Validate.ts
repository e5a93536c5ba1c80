/**
 * `platform config validate` without booting anything: after the file's own schema (checked by
 * `loadConfig`), the listeners (no two on one address and port) and each plugin entry (its kernel
 * keys, its module loads and is a plugin, its listener is declared, its dependencies are enabled,
 * its section decodes with the plugin's Schema). Each plugin is reported `valid`, `invalid` (with
 * located errors) or `disabled`; no plugin's `setup` runs, nothing listens.
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { ConfigError, LoadedConfig } from "./Config.ts"
import { issuesToErrors, PluginEntry } from "./Config.ts"
import { importPlugin } from "./PluginLoader.ts"

/** One listener as checked. */
export interface ListenerCheck {
  readonly name: string
  readonly host: string
  readonly port: number
  readonly status: "valid" | "invalid"
  readonly errors: ReadonlyArray<string>
  /** Plugins configured to serve on it (none: nothing would answer there). */
  readonly plugins: ReadonlyArray<string>
}

/** One plugin entry as checked. */
export interface PluginCheck {
  readonly name: string
  readonly status: "valid" | "invalid" | "disabled"
  readonly source: string
  readonly listener: string | null
  readonly errors: ReadonlyArray<string>
}

/** What was checked and found; `valid` when every listener and enabled plugin is. */
export interface Validation {
  readonly file: string
  readonly valid: boolean
  readonly checked: ReadonlyArray<string>
  readonly listeners: ReadonlyArray<ListenerCheck>
  readonly plugins: ReadonlyArray<PluginCheck>
  /** The decoded section of each valid plugin (its Schema's defaults applied), by name. */
  readonly decoded: ReadonlyMap<string, unknown>
}

const KERNEL_KEYS = new Set(["enabled", "listener", "module"])

const WILDCARD = new Set(["0.0.0.0", "::", ""])

const messages = (errors: ReadonlyArray<ConfigError>): Array<string> => errors.map((e) => e.message)

/** Checks `loaded` (already decoded by `loadConfig`) as described above. Never throws for config problems. */
export const validateConfig = async (loaded: LoadedConfig): Promise<Validation> => {
  const { config } = loaded
  const declared = new Set(config.listeners.map((l) => l.name))
  const at = (p: ReadonlyArray<PropertyKey>) => {
    const pos = loaded.locate(p)
    return `${loaded.file.split("/").pop()}${pos ? `:${pos.line}:${pos.column}` : ""}`
  }

  const entries = Object.entries(config.plugins)
  const enabled = new Set(entries.filter(([, e]) => e.enabled !== false).map(([n]) => n))
  const decoded = new Map<string, unknown>()
  const plugins = await Promise.all(entries.map(async ([name, entry]): Promise<PluginCheck> => {
    const kernelPart = Object.fromEntries(Object.entries(entry).filter(([k]) => KERNEL_KEYS.has(k)))
    const kernel = Schema.decodeUnknownEither(PluginEntry)(kernelPart, { errors: "all" })
    if (Either.isLeft(kernel)) {
      return { name, status: "invalid", source: "built-in", listener: null, errors: messages(issuesToErrors(loaded, kernel.left, ["plugins", name], name)) }
    }
    const { enabled: on, listener, module } = kernel.right
    const source = module ?? "built-in"
    if (!on) return { name, status: "disabled", source, listener: listener ?? null, errors: [] }
    let def
    try {
      def = (await importPlugin(name, module, loaded.dir)).def
    } catch (e) {
      return { name, status: "invalid", source, listener: listener ?? null, errors: [`${at(["plugins", name])} ${(e as Error).message}`] }
    }
    const errors: Array<string> = []
    const listenerName = listener ?? def.defaultListener ?? null
    if (!listenerName) errors.push(`${at(["plugins", name])} plugins.${name}: needs a listener (set plugins.${name}.listener)`)
    else if (!declared.has(listenerName)) {
      errors.push(`${at(listener ? ["plugins", name, "listener"] : ["plugins", name])} plugins.${name}.listener: "${listenerName}" is not declared under listeners (declared: ${[...declared].join(", ") || "none"})`)
    }
    for (const d of def.dependsOn) {
      if (!enabled.has(d)) errors.push(`${at(["plugins", name])} plugins.${name}: depends on plugin "${d}", which is ${d in config.plugins ? "disabled" : "not configured"}`)
    }
    const section = Object.fromEntries(Object.entries(entry).filter(([k]) => !KERNEL_KEYS.has(k)))
    const r = Schema.decodeUnknownEither(def.config)(section, { errors: "all", onExcessProperty: "error" })
    if (Either.isLeft(r)) errors.push(...messages(issuesToErrors(loaded, r.left, ["plugins", name], name)))
    else decoded.set(name, r.right)
    return { name, status: errors.length ? "invalid" : "valid", source, listener: listenerName, errors }
  }))

  const listeners = config.listeners.map((l, i): ListenerCheck => {
    const errors: Array<string> = []
    if (l.port !== 0) {
      const clash = config.listeners.find((o, j) => j < i && o.port === l.port && (o.host === l.host || WILDCARD.has(o.host) || WILDCARD.has(l.host)))
      // Reported on the later of the two, as the file is read.
      if (clash) errors.push(`${at(["listeners", i, "port"])} listeners[${i}].port: ${l.host}:${l.port} is also listener "${clash.name}"'s address`)
    }
    return { name: l.name, host: l.host, port: l.port, status: errors.length ? "invalid" : "valid", errors, plugins: plugins.filter((p) => p.status !== "disabled" && p.listener === l.name).map((p) => p.name) }
  })

  return {
    file: loaded.file,
    valid: listeners.every((l) => l.status === "valid") && plugins.every((p) => p.status !== "invalid"),
    checked: [
      "the file against the platform schema (YAML, environment variables, top-level keys)",
      `${listeners.length} listener${listeners.length === 1 ? "" : "s"}: names and addresses (host:port)`,
      `${plugins.length} plugin section${plugins.length === 1 ? "" : "s"}: kernel keys, module, listener, dependencies, the plugin's config schema`
    ],
    listeners,
    plugins,
    decoded
  }
}
