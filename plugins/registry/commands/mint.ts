import { Flags } from "@oclif/core"
import { configFlag, PlatformCommand } from "../../../core/Command.ts"

/**
 * `platform registry token mint`: a new registry token, printed once (only its hash is kept;
 * a lost token cannot be recovered, mint another). `--json` gives `{id, token}`.
 */
export default class RegistryTokenMint extends PlatformCommand {
  static summary = "Mint a registry token (shown once; hand it to one builder, who claims a handle with it)."
  static examples = ["<%= config.bin %> registry token mint --label ada", "<%= config.bin %> registry token mint --json"]
  static flags = {
    config: configFlag,
    label: Flags.string({ summary: "A note kept with the token (who it is for); shown by token list.", default: "" })
  }

  async run(): Promise<{ id: string; token: string }> {
    const { flags } = await this.parse(RegistryTokenMint)
    const { withRegistry } = await import("./shared.ts")
    let minted: { id: string; token: string }
    try {
      minted = await withRegistry(flags.config, (r) => r.mintToken(flags.label))
    } catch (e) {
      this.error((e as Error).message, { exit: 1 })
    }
    if (!this.jsonEnabled()) {
      this.log(minted.token)
      this.logToStderr(`token ${minted.id} minted; it is shown this once (only its hash is stored)`)
    }
    return minted
  }
}
