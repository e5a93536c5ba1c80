/**
 * CLI commands of the `registry` plugin: `platform registry token mint`, `token list`,
 * `token revoke`. They work on the configured store directly; the store modules load inside `run()`.
 */
import { defineCommands } from "../../core/Command.ts"
import RegistryTokenList from "./commands/list.ts"
import RegistryTokenMint from "./commands/mint.ts"
import RegistryTokenRevoke from "./commands/revoke.ts"

export default defineCommands("registry", {
  "registry token mint": RegistryTokenMint,
  "registry token list": RegistryTokenList,
  "registry token revoke": RegistryTokenRevoke
})
