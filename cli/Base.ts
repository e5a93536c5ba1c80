/**
 * Shared pieces of the oclif commands: the `--config` flag, rendering of platform errors
 * (config errors with file:line:col, boot errors naming the plugin) and plain tables.
 */
import { Command, Flags } from "@oclif/core"
import { ConfigError, ConfigErrors } from "../core/Config.ts"
import { BootError } from "../core/Kernel.ts"
import { DuplicateContribution } from "../core/Registry.ts"

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

  protected fail(error: unknown): never {
    if (error instanceof ConfigErrors || error instanceof ConfigError || error instanceof BootError || error instanceof DuplicateContribution) {
      this.error(error.message, { exit: 1 })
    }
    throw error
  }
}

/** Renders rows as an aligned text table (no colours, so it pipes cleanly). */
export const table = (headers: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string | number | null | undefined>>): string => {
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === null || c === undefined ? "-" : String(c))))]
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)))
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : (c ?? "").padEnd(widths[i]!))).join("  ")).join("\n")
}
