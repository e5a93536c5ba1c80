import { Args } from "@oclif/core"
import { configFlag, PlatformCommand } from "../../../core/Command.ts"

/** `platform registry token revoke ID`: the token is refused from then on (like an unknown one). */
export default class RegistryTokenRevoke extends PlatformCommand {
  static summary = "Revoke a registry token by id (see token list); its writes are refused from then on."
  static examples = ["<%= config.bin %> registry token revoke 3f2a9c0d1e4b5a67"]
  static args = { id: Args.string({ description: "token id (16 hex digits)", required: true }) }
  static flags = { config: configFlag }

  async run(): Promise<{ id: string; revoked: boolean }> {
    const { args, flags } = await this.parse(RegistryTokenRevoke)
    const { withRegistry } = await import("./shared.ts")
    let revoked: boolean
    try {
      revoked = await withRegistry(flags.config, (r) => r.revokeToken(args.id))
    } catch (e) {
      this.error((e as Error).message, { exit: 1 })
    }
    if (!revoked) this.error(`no live token ${args.id} (unknown, or revoked already)`, { exit: 1 })
    if (!this.jsonEnabled()) this.log(`token ${args.id} revoked`)
    return { id: args.id, revoked }
  }
}
