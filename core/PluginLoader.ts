/**
 * Finding and importing a plugin module: a built-in (`plugins/<name>/plugin.ts`), a path, or an
 * npm package named by `plugins.<name>.module`. Apart from the kernel so that reading plugin
 * declarations (`platform config validate`, `schemas generate`) loads no server.
 */
import * as Schema from "effect/Schema"
import { createRequire } from "node:module"
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import type { PluginDefinition } from "./Plugin.ts"
import { isPluginDefinition } from "./Plugin.ts"
import { builtinModule, MODULE_EXT } from "./Paths.ts"

/** A boot failure: names the plugin (when one is at fault) and what to fix. */
export class BootError extends Schema.TaggedError<BootError>()("BootError", {
  reason: Schema.String,
  plugin: Schema.optional(Schema.String)
}) {
  get message(): string {
    return this.plugin ? `plugin ${this.plugin}: ${this.reason}` : this.reason
  }

  static of(reason: string, plugin?: string): BootError {
    return new BootError({ reason, ...(plugin !== undefined ? { plugin } : {}) })
  }
}

let tsxRegistered = false

/**
 * The compiled platform runs without a TypeScript loader: a plugin given as TypeScript source
 * (`module: ./my-plugin.ts`) gets tsx's, and its imports of the platform's sources are pointed at
 * the build the platform runs (`SourceRedirect.ts`), so both share one copy of every module.
 */
const typeScriptLoader = async (file: string): Promise<void> => {
  if (tsxRegistered || MODULE_EXT === ".ts" || !/\.[cm]?tsx?$/.test(file)) return
  ;(await import("tsx/esm/api")).register()
  // Registered after tsx, so it runs first and sees what tsx resolved.
  ;(await import("node:module")).register(new URL(`./SourceRedirect${MODULE_EXT}`, import.meta.url))
  tsxRegistered = true
}

/** Resolves and imports a plugin module; returns its definition. */
export const importPlugin = async (name: string, module: string | undefined, configDir: string): Promise<{ def: PluginDefinition; source: string }> => {
  let file: string
  let source: string
  if (module === undefined) {
    file = builtinModule(name, "plugin")
    source = "built-in"
    if (!fs.existsSync(file)) {
      throw BootError.of(`no built-in plugin named "${name}" (plugins/${name}/plugin.ts); set plugins.${name}.module to load one from elsewhere`, name)
    }
  } else if (module.startsWith(".") || path.isAbsolute(module)) {
    file = path.resolve(configDir, module)
    source = module
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) {
      file = ["plugin.ts", "plugin.js", "index.ts", "index.js"].map((f) => path.join(file, f)).find((f) => fs.existsSync(f)) ?? file
    }
    if (!fs.existsSync(file)) throw BootError.of(`plugins.${name}.module: ${file} does not exist`, name)
  } else {
    source = module
    try {
      file = createRequire(path.join(configDir, "platform.yaml")).resolve(module)
    } catch {
      throw BootError.of(`plugins.${name}.module: cannot resolve package "${module}" from ${configDir} (npm install it)`, name)
    }
  }
  let mod: Record<string, unknown>
  try {
    await typeScriptLoader(file)
    mod = await import(pathToFileURL(file).href)
  } catch (e) {
    throw BootError.of(`cannot load ${file}: ${(e as Error).message}`, name)
  }
  const def = [mod.default, mod.plugin, ...Object.values(mod)].find(isPluginDefinition)
  if (!def) throw BootError.of(`${file} exports no definePlugin(...) definition`, name)
  if (def.name !== name) throw BootError.of(`${file} defines plugin "${def.name}", but platform.yaml names it "${name}"`, name)
  return { def, source }
}
