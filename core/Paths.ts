/**
 * Where the platform lives on disk, the same from TypeScript sources (under tsx) and from the
 * compiled `dist/` build: `ROOT` is the repository (package.json, README, schemas/, data),
 * `CODE_ROOT` the tree the running modules come from (the repository, or `dist/`), and
 * `MODULE_EXT` their extension (`.ts` or `.js`). Built-in plugins are found as
 * `CODE_ROOT/plugins/<name>/plugin<MODULE_EXT>`. No dependencies: the CLI loads it at start.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const here = fileURLToPath(import.meta.url)

/** The tree the running platform modules come from: the repository root or its `dist/`. */
export const CODE_ROOT: string = path.resolve(path.dirname(here), "..")

/** Extension of the running platform modules: `.ts` from source, `.js` from the build. */
export const MODULE_EXT: ".ts" | ".js" = here.endsWith(".ts") ? ".ts" : ".js"

/** The repository root: the nearest folder at or above `CODE_ROOT` holding a package.json. */
export const ROOT: string = (() => {
  for (let dir = CODE_ROOT; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, "package.json"))) return dir
    if (path.dirname(dir) === dir) return CODE_ROOT
  }
})()

/** The module file of a built-in plugin part (`plugin`, `commands`) of plugin `name`. */
export const builtinModule = (name: string, part: string): string => path.join(CODE_ROOT, "plugins", name, part + MODULE_EXT)
