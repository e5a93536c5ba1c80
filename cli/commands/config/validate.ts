import * as path from "node:path"
import type { Validation } from "../../../core/Validate.ts"
import { configFlag, PlatformCommand, table } from "../../Base.ts"

/** `platform config validate`: the file's schema, the listeners and every plugin's section; boots nothing. */
export default class ConfigValidate extends PlatformCommand {
  static summary = "Validate platform.yaml: its schema, the listeners and ports, and each plugin's section (valid/invalid per plugin)."
  static description = "Checks, in order: the file against the platform schema (YAML syntax, ${VAR} interpolation, top-level keys); the listeners (names, no two on one host:port); each plugin entry (enabled/listener/module keys, the plugin module loads, its listener is declared, the plugins it depends on are enabled, its section decodes with the plugin's Schema). No plugin is started and nothing listens. Errors name the file, line, column and path, e.g. `platform.yaml:14:7 plugins.gateway.engines[1].kind: expected \"llama-cpp\" | \"upstream\"`. Exits 1 when anything is invalid."
  static examples = ["<%= config.bin %> config validate", "<%= config.bin %> config validate --config ./platform.yaml --json"]
  static flags = { config: configFlag }

  async run(): Promise<Omit<Validation, "decoded">> {
    const { flags } = await this.parse(ConfigValidate)
    try {
      const [{ loadConfig }, { validateConfig }] = await Promise.all([import("../../../core/Config.ts"), import("../../../core/Validate.ts")])
      const loaded = await loadConfig({ path: flags.config })
      const { decoded: _, ...validation } = await validateConfig(loaded)
      const name = path.basename(validation.file)
      this.log(`${validation.file}\nchecked:\n${validation.checked.map((c) => `  - ${c}`).join("\n")}\n`)
      this.log(table(["CHECK", "NAME", "RESULT", "DETAIL"], [
        ["schema", name, "valid", ""],
        ...validation.listeners.map((l) => ["listener", l.name, l.status, `${l.host}:${l.port}${l.plugins.length ? ` (${l.plugins.join(", ")})` : " (no plugin serves here)"}`]),
        ...validation.plugins.map((p) => ["plugin", p.name, p.status, p.source === "built-in" ? `on ${p.listener ?? "-"}` : `${p.source}, on ${p.listener ?? "-"}`])
      ]))
      const errors = [...validation.listeners.flatMap((l) => l.errors), ...validation.plugins.flatMap((p) => p.errors)]
      if (errors.length) this.logToStderr(`\n${errors.join("\n")}`)
      this.log(`\n${name}: ${validation.valid ? "valid" : `invalid (${errors.length} error${errors.length === 1 ? "" : "s"})`}`)
      if (!validation.valid) process.exitCode = 1
      return validation
    } catch (e) {
      this.fail(e)
    }
  }
}
