/** CLI commands of the `gateway` plugin: `platform gateway pull`, `gateway chat`, `gateway status`. */
import { defineCommands } from "../../core/Command.ts"
import GatewayChat from "./commands/chat.ts"
import GatewayPull from "./commands/pull.ts"
import GatewayStatus from "./commands/status.ts"

export default defineCommands("gateway", { "gateway pull": GatewayPull, "gateway chat": GatewayChat, "gateway status": GatewayStatus })
