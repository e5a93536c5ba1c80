import { configFlag, PlatformCommand, table } from "../../../core/Command.ts"
import type { TokenInfo } from "../Registry.ts"

/** `platform registry token list`: ids, states (minted, bound, revoked), handles; never a token. */
export default class RegistryTokenList extends PlatformCommand {
  static summary = "List registry tokens: id, state (minted, bound, revoked), handle, label, times. Tokens themselves are never stored."
  static examples = ["<%= config.bin %> registry token list", "<%= config.bin %> registry token list --json"]
  static flags = { config: configFlag }

  async run(): Promise<ReadonlyArray<TokenInfo>> {
    const { flags } = await this.parse(RegistryTokenList)
    const { withRegistry } = await import("./shared.ts")
    let tokens: ReadonlyArray<TokenInfo>
    try {
      tokens = await withRegistry(flags.config, (r) => r.tokens())
    } catch (e) {
      this.error((e as Error).message, { exit: 1 })
    }
    this.log(table(["ID", "STATE", "HANDLE", "LABEL", "MINTED", "CLAIMED", "REVOKED"], tokens.map((t) => [t.id, t.state, t.handle, t.label || null, t.minted_at, t.claimed_at, t.revoked_at])))
    return tokens
  }
}
