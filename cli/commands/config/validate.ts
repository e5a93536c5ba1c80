import { loadConfig } from "../../../core/Config.ts"
import { inspect } from "../../../core/Kernel.ts"
import { configFlag, PlatformCommand } from "../../Base.ts"

/** `platform config validate`: decodes the file and every plugin section; boots nothing that listens. */
export default class ConfigValidate extends PlatformCommand {
  static summary = "Validate platform.yaml and every enabled plugin's configuration."
  static description = "Decodes the whole file with the kernel's and each plugin's Schema. Errors name the file, line, column and path, e.g. `platform.yaml:14:7 plugins.gateway.engines[1].kind: expected \"llama-cpp\" | \"upstream\"`."
  static examples = ["<%= config.bin %> config validate", "<%= config.bin %> config validate --config ./deploy/platform.yaml --json"]
  static flags = { config: configFlag }

  async run(): Promise<{ valid: true; file: string; plugins: Array<{ name: string; status: string; reason?: string }> }> {
    const { flags } = await this.parse(ConfigValidate)
    try {
      const loaded = await loadConfig({ path: flags.config })
      const kernel = await inspect({ file: loaded.file })
      const plugins = kernel.plugins.map((p) => ({ name: p.name, status: p.status, ...(p.reason ? { reason: p.reason } : {}) }))
      this.log(`${loaded.file}: valid`)
      for (const p of plugins) this.log(`  ${p.name}: ${p.status}${p.reason ? ` (${p.reason})` : ""}`)
      return { valid: true, file: loaded.file, plugins }
    } catch (e) {
      this.fail(e)
    }
  }
}
