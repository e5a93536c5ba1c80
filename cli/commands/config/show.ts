import * as YAML from "yaml"
import { configFlag, PlatformCommand } from "../../Base.ts"

/** `platform config show`: the resolved configuration (env interpolated, defaults applied), secrets redacted. */
export default class ConfigShow extends PlatformCommand {
  static summary = "Print the resolved configuration with secrets redacted."
  static description = "Environment variables are interpolated and kernel defaults applied; values of keys that look like secrets (token, secret, password, api_key, ...) are shown as ***."
  static examples = ["<%= config.bin %> config show", "GATEWAY_TOKEN=abc <%= config.bin %> config show --json"]
  static flags = { config: configFlag }

  async run(): Promise<unknown> {
    const { flags } = await this.parse(ConfigShow)
    try {
      const { loadConfig, redact } = await import("../../../core/Config.ts")
      const loaded = await loadConfig({ path: flags.config })
      const shown = redact({ file: loaded.file, ...loaded.config })
      if (!this.jsonEnabled()) this.log(YAML.stringify(shown))
      return shown
    } catch (e) {
      this.fail(e)
    }
  }
}
