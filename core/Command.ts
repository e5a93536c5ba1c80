/**
 * The CLI's kernel side: the registry of commands (the kernel's and those plugins contribute,
 * `collectCommands`) and what every command shares: the `--config` flag, rendering of platform
 * errors (config errors with file:line:col, boot errors naming the plugin) and plain tables.
 *
 * Every command module imports this one, and the CLI answers `--help` and starts a command after
 * loading only it, @oclif/core and that command's module: so it imports nothing else at the top
 * (the registry and the kernel load inside `collectCommands`, which only the build and the
 * development entry call).
 */
import { Command, Flags } from "@oclif/core"
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { CODE_ROOT, MODULE_EXT } from "./Paths.ts"

/** `--config FILE` (also `PLATFORM_CONFIG`); default: cosmiconfig search from the working directory. */
export const configFlag = Flags.string({
  char: "c",
  summary: "Path to platform.yaml (default: search from the current directory; env PLATFORM_CONFIG).",
  env: "PLATFORM_CONFIG"
})

/** Base class: turns platform errors into one readable message and exit code 1. */
export abstract class PlatformCommand extends Command {
  static enableJsonFlag = true

  /** `--json` errors carry the message (oclif's default keeps only the exit code). */
  protected toErrorJson(err: unknown): unknown {
    const e = err as Error & { oclif?: { exit?: number } }
    return { error: { message: e.message, exit: e.oclif?.exit ?? 1 } }
  }

  /** A deliberate `this.exit(n)` has printed what it meant to (its `--json` document too): no error document follows. */
  async catch(err: Error & { code?: string; exitCode?: number }): Promise<any> {
    if (err?.code === "EEXIT") {
      process.exitCode = err.exitCode ?? (err as { oclif?: { exit?: number } }).oclif?.exit ?? 1
      throw err
    }
    return super.catch(err)
  }

  /**
   * Platform errors (by tag, so this module loads none of their modules) become one message and
   * exit 1 (an API's: one line on stderr); others are rethrown. With `--json`, an API's error answer (`ApiFailure`) is printed as
   * the API gave it (the API's own shape), then exit 1.
   */
  protected fail(error: unknown): never {
    const tag = (error as { _tag?: unknown })?._tag as string
    if (tag === "ApiFailure" && this.jsonEnabled()) {
      this.logJson((error as { body: unknown }).body)
      this.exit(1)
    }
    if ((tag === "ApiUnreachable" || tag === "ApiFailure") && !this.jsonEnabled()) {
      // One unwrapped line (oclif's error box wraps at the terminal's width): scripts grep it.
      this.logToStderr(`Error: ${(error as Error).message}`)
      this.exit(1)
    }
    if (PLATFORM_ERRORS.has(tag)) this.error((error as Error).message, { exit: 1 })
    throw error
  }
}

/**
 * Tags of the errors whose message is the whole story: config (file:line:col), boot (names the
 * plugin), duplicate contributions, an API that is down or refused (`ApiClient.ts`).
 */
const PLATFORM_ERRORS: ReadonlySet<string> = new Set(["ConfigErrors", "ConfigError", "BootError", "DuplicateContribution", "ApiUnreachable", "ApiFailure"])

/** Renders rows as an aligned text table (no colours, so it pipes cleanly). */
export const table = (headers: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string | number | null | undefined>>): string => {
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === null || c === undefined ? "-" : String(c))))]
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)))
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : (c ?? "").padEnd(widths[i]!))).join("  ")).join("\n")
}

/** An oclif command class, as the kernel and plugins contribute them. */
export type CommandClass = Command.Class

/**
 * The CLI commands a plugin contributes: `plugins/<name>/commands.ts` default-exports
 * `defineCommands("<name>", { "<topic> <command>": CommandClass })`. Ids are the words typed
 * after `platform` (`gateway pull`); a plugin's own topic is its name or its domain. The module
 * is separate from `plugin.ts` so the CLI never loads a plugin's runtime to list its commands;
 * commands import heavy parts inside `run()`.
 */
export interface PluginCommands {
  readonly _tag: "PluginCommands"
  readonly plugin: string
  readonly commands: Readonly<Record<string, CommandClass>>
}

/** Declares a plugin's CLI commands (see `PluginCommands`). */
export const defineCommands = (plugin: string, commands: Readonly<Record<string, CommandClass>>): PluginCommands => ({ _tag: "PluginCommands", plugin, commands })

/**
 * The CLI's command table (oclif's `explicit` command discovery): the kernel's `commands` and
 * those of every built-in plugin with a `commands.ts` under `pluginsDir`, keyed by oclif id
 * (`gateway:pull`). Rejects with `DuplicateContribution` naming both contributors when two give
 * the same id, and with a `BootError` when a `commands.ts` exports no `defineCommands(...)`.
 */
export const collectCommands = async (
  commands: Readonly<Record<string, CommandClass>>,
  pluginsDir = path.join(CODE_ROOT, "plugins")
): Promise<Record<string, CommandClass>> => {
  const [Effect, Registry, { BootError }] = await Promise.all([import("effect/Effect"), import("./Registry.ts"), import("./PluginLoader.ts")])
  const registry = Registry.make<CommandClass>("CLI command")
  const add = (owner: string, id: string, command: CommandClass) => {
    const added = Effect.runSync(Effect.either(registry.register(owner, id.trim().split(/[\s:]+/).join(":"), command)))
    if (added._tag === "Left") throw added.left
  }
  for (const [id, command] of Object.entries(commands)) add("kernel", id, command)
  for (const name of fs.readdirSync(pluginsDir).sort()) {
    const file = path.join(pluginsDir, name, `commands${MODULE_EXT}`)
    if (!fs.existsSync(file)) continue
    const contributed = (await import(pathToFileURL(file).href)).default as PluginCommands | undefined
    if (contributed?._tag !== "PluginCommands") throw BootError.of(`${file} exports no defineCommands(...) as default`, name)
    for (const [id, command] of Object.entries(contributed.commands)) add(name, id, command)
  }
  return Object.fromEntries(registry.values().map((e) => [e.id, e.value]))
}
