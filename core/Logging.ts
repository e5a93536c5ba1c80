/**
 * Logger layer from `log` settings: JSON lines (production) or pretty (a terminal), with a
 * minimum level. `PLATFORM_LOG_LEVEL` / `PLATFORM_LOG_FORMAT` override the file (tests use them).
 */
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"

const LEVELS: Record<string, LogLevel.LogLevel> = {
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  none: LogLevel.None
}

/** `format: auto` picks pretty when stdout is a TTY, JSON lines otherwise. */
export const layer = (settings: { level: string; format: string }) => {
  const level = LEVELS[process.env.PLATFORM_LOG_LEVEL ?? settings.level] ?? LogLevel.Info
  const format = process.env.PLATFORM_LOG_FORMAT ?? settings.format
  const pretty = format === "pretty" || (format === "auto" && process.stdout.isTTY === true)
  return Layer.merge(pretty ? Logger.pretty : Logger.json, Logger.minimumLogLevel(level))
}
