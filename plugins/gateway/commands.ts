/** CLI commands of the `gateway` plugin: `platform gateway pull`, `platform gateway chat`. */
import { defineCommands } from "../../core/Command.ts"
import GatewayChat from "./commands/chat.ts"
import GatewayPull from "./commands/pull.ts"

export default defineCommands("gateway", { "gateway pull": GatewayPull, "gateway chat": GatewayChat })
