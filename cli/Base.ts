/** The shared command pieces, kept at this path for the commands under `cli/commands/`. */
export { configFlag, PlatformCommand, table } from "../core/Command.ts"
