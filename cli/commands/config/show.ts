import { Flags } from "@oclif/core"
import * as path from "node:path"
import { configFlag, PlatformCommand } from "../../Base.ts"

type Json = null | boolean | number | string | Array<Json> | { [key: string]: Json }

const VAR = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g

/**
 * Where each value of `resolved` came from, by path (`listeners.0.port`), for the values that
 * were not written literally in the file: `env NAME` (a `${NAME}` set in the environment),
 * `default of ${NAME:-x}` (the variable was unset), or `default` (absent from the file: a kernel
 * or plugin Schema default). `written` is the file's value before interpolation.
 */
export const sourcesOf = (resolved: Json, written: Json | undefined, env: NodeJS.ProcessEnv, at: Array<string | number> = [], out: Record<string, string> = {}): Record<string, string> => {
  if (resolved !== null && typeof resolved === "object") {
    const entries: Array<[string | number, Json]> = Array.isArray(resolved) ? resolved.map((v, i) => [i, v]) : Object.entries(resolved)
    for (const [k, v] of entries) sourcesOf(v, written && typeof written === "object" ? (written as Record<string | number, Json>)[k] : undefined, env, [...at, k], out)
    return out
  }
  const key = at.join(".")
  if (written === undefined) out[key] = "default"
  else if (typeof written === "string" && written.includes("${")) {
    const vars = [...written.matchAll(VAR)]
    const fromEnv = vars.filter((m) => env[m[1]!] !== undefined && env[m[1]!] !== "").map((m) => `env ${m[1]}`)
    const defaulted = vars.filter((m) => !(env[m[1]!] !== undefined && env[m[1]!] !== "")).map((m) => `default of \${${m[1]}:-${m[2] ?? ""}}`)
    out[key] = [...fromEnv, ...defaulted].join(", ")
  }
  return out
}

/** `platform config show`: the resolved configuration (env interpolated, defaults applied), secrets redacted. */
export default class ConfigShow extends PlatformCommand {
  static summary = "Print the resolved configuration with secrets redacted; --resolved marks values from defaults and from environment variables."
  static description = "Environment variables are interpolated and kernel defaults applied; values of keys that look like secrets (token, secret, password, api_key, ...) are shown as ***. With --resolved, each plugin's section is decoded with its Schema too (its defaults filled in), and every value not written literally in the file is marked: `# env NAME`, `# default of ${NAME:-x}` or `# default`; --json then gives {config, sources} with sources keyed by path."
  static examples = ["<%= config.bin %> config show", "GATEWAY_TOKEN=abc <%= config.bin %> config show --json", "JOBS_PORT=9100 <%= config.bin %> config show --resolved"]
  static flags = { config: configFlag, resolved: Flags.boolean({ summary: "Also apply each plugin's defaults, and mark where every value came from." }) }

  async run(): Promise<unknown> {
    const { flags } = await this.parse(ConfigShow)
    try {
      const [{ loadConfig, redact }, YAML] = await Promise.all([import("../../../core/Config.ts"), import("yaml")])
      const loaded = await loadConfig({ path: flags.config })
      if (!flags.resolved) {
        const shown = redact({ file: loaded.file, ...loaded.config })
        if (!this.jsonEnabled()) this.log(YAML.stringify(shown))
        return shown
      }
      const { validateConfig } = await import("../../../core/Validate.ts")
      const { decoded } = await validateConfig(loaded)
      const plugins = Object.fromEntries(Object.entries(loaded.config.plugins).map(([name, entry]) => {
        const kernelKeys = Object.fromEntries(Object.entries(entry).filter(([k]) => ["enabled", "listener", "module"].includes(k)))
        return [name, decoded.has(name) ? { ...kernelKeys, ...(decoded.get(name) as object) } : entry]
      }))
      const config = redact({ ...loaded.config, plugins }) as Json
      const written = (path.basename(loaded.file) === "package.json" ? JSON.parse(loaded.text).platform : YAML.parse(loaded.text)) as Json
      const sources = sourcesOf(config, written, process.env)
      if (this.jsonEnabled()) return { file: loaded.file, config, sources }
      const doc = new YAML.Document(config)
      YAML.visit(doc, {
        Scalar(key, node, ancestors) {
          if (key === "key") return
          const at: Array<string | number> = []
          ancestors.forEach((a, i) => {
            if (YAML.isPair(a)) at.push((a.key as { value: string }).value)
            else if (YAML.isSeq(a)) at.push(a.items.indexOf((ancestors[i + 1] ?? node) as never))
          })
          const source = sources[at.join(".")]
          if (source) node.comment = ` ${source}`
        }
      })
      this.log(`# ${loaded.file}\n${doc.toString()}`)
      return { file: loaded.file, config, sources }
    } catch (e) {
      this.fail(e)
    }
  }
}
