#!/usr/bin/env node
/**
 * Builds what `bin/platform.js` runs: the platform and its CLI as JavaScript in `dist/` (tsc,
 * type-checking left to `npm run typecheck`), the files the code reads beside itself (worker
 * scripts, templates, examples) copied along, and `oclif.manifest.json`, so that `--help` and
 * command lookup read one JSON file and running a command loads that command's module only.
 *
 * The manifest covers the kernel's commands (`cli/index.ts`) and every command a plugin
 * contributes in `plugins/<name>/commands.ts`; each entry points oclif at the compiled module
 * that defines the command (found among the modules the contributing file imports), or at a
 * small generated module reading it from the plugin's `commands.js` when the class is defined
 * there. Run by `npm install`/`npm ci` (`prepare`), `scripts/setup.sh` and `npm run build`;
 * `--if-stale` skips the work when `dist/` is newer than every source file.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const DIST = path.join(ROOT, "dist")
const MANIFEST = path.join(ROOT, "oclif.manifest.json")
const SOURCES = ["core", "plugins", "cli"]

/** Every file under the source folders, relative to the root. */
const sourceFiles = () =>
  SOURCES.flatMap((dir) => fs.readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(ROOT, path.join(e.parentPath ?? e.path, e.name))))

/** True when the manifest exists and is newer than every source file and package.json. */
const isFresh = () => {
  if (!fs.existsSync(MANIFEST)) return false
  const built = fs.statSync(MANIFEST).mtimeMs
  return [...sourceFiles(), "package.json", "tsconfig.json", "tsconfig.build.json", "scripts/build.mjs"]
    .every((f) => fs.statSync(path.join(ROOT, f)).mtimeMs <= built)
}

if (process.argv.includes("--if-stale") && isFresh()) process.exit(0)
const started = Date.now()
fs.rmSync(MANIFEST, { force: true })

// 1. JavaScript. --noCheck: emitting needs no type information (isolatedModules), and `tsc
// --noEmit` checks types in CI and before each commit; this keeps the build at seconds.
execFileSync(process.execPath, [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json", "--noCheck"], { cwd: ROOT, stdio: "inherit" })

// 2. Files the modules read beside themselves (new URL(..., import.meta.url), __dirname-style paths).
const sources = new Set(sourceFiles())
for (const f of sources) {
  if (f.endsWith(".ts")) continue
  const to = path.join(DIST, f)
  fs.mkdirSync(path.dirname(to), { recursive: true })
  fs.copyFileSync(path.join(ROOT, f), to)
}
// Compiled modules whose source is gone (a renamed or deleted .ts) must not linger and be found.
for (const e of fs.readdirSync(DIST, { recursive: true, withFileTypes: true })) {
  const rel = path.relative(DIST, path.join(e.parentPath ?? e.path, e.name))
  if (e.isFile() && rel.endsWith(".js") && !sources.has(rel.replace(/\.js$/, ".ts")) && !sources.has(rel)) fs.rmSync(path.join(DIST, rel))
}

// A relative import left with its `.ts` extension would fail only when that code path runs:
// tsc (5.9) does not rewrite dynamic imports inside an `export default` expression.
const unrewritten = [...fs.readdirSync(DIST, { recursive: true, withFileTypes: true })]
  .filter((e) => e.isFile() && e.name.endsWith(".js"))
  .map((e) => path.join(e.parentPath ?? e.path, e.name))
  .filter((f) => /\bimport\s*\(\s*["']\.{1,2}\/[^"']+\.ts["']/.test(fs.readFileSync(f, "utf8")))
if (unrewritten.length) {
  console.error(`build: relative .ts imports left in ${unrewritten.map((f) => path.relative(ROOT, f)).join(", ")} (bind the import outside \`export default\`)`)
  process.exit(1)
}

// 3. The manifest: oclif builds it from the explicit command table, then each entry is pointed at its module.
const { Plugin } = await import("@oclif/core")
const pjson = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"))
const explicit = { ...pjson, oclif: { ...pjson.oclif, commands: { strategy: "explicit", target: "./dist/cli/index.js", identifier: "default" } } }
const plugin = new Plugin({ root: ROOT, isRoot: true, pjson: explicit, ignoreManifest: true, errorOnManifestCreate: true })
await plugin.load()
const table = (await import(pathToFileURL(path.join(DIST, "cli/index.js")).href)).default

/** Compiled modules a contributing file imports (relative specifiers), resolved to absolute paths. */
const importsOf = (file) => [...fs.readFileSync(file, "utf8").matchAll(/\b(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)]
  .map((m) => path.resolve(path.dirname(file), m[1]))
  .filter((f) => f.endsWith(".js") && fs.existsSync(f))

const contributors = [path.join(DIST, "cli/index.js"), ...fs.readdirSync(path.join(DIST, "plugins")).sort()
  .map((name) => path.join(DIST, "plugins", name, "commands.js")).filter((f) => fs.existsSync(f))]
const fileOf = new Map()
for (const contributor of contributors) {
  for (const file of importsOf(contributor)) {
    for (const value of Object.values(await import(pathToFileURL(file).href))) if (typeof value === "function" && !fileOf.has(value)) fileOf.set(value, file)
  }
}

const shims = path.join(DIST, "cli/.commands")
fs.rmSync(shims, { recursive: true, force: true })

/** A module whose default export is command `id`, defined inside the plugin contributor that registers it. */
const shimFor = async (id, cls) => {
  for (const contributor of contributors.slice(1)) {
    const declared = (await import(pathToFileURL(contributor).href)).default?.commands ?? {}
    const key = Object.keys(declared).find((k) => declared[k] === cls)
    if (key === undefined) continue
    const file = path.join(shims, `${id.replace(/:/g, "-")}.js`)
    const from = path.relative(shims, contributor).split(path.sep).join("/")
    fs.mkdirSync(shims, { recursive: true })
    fs.writeFileSync(file, `// Generated by scripts/build.mjs: command "${id}" of ${path.relative(DIST, contributor)}.\n` +
      `import contributed from ${JSON.stringify(from)}\nexport default contributed.commands[${JSON.stringify(key)}]\n`)
    return file
  }
  throw new Error(`build: no module defines command "${id}"`)
}

const commands = {}
for (const [id, entry] of Object.entries(plugin.manifest.commands)) {
  const cls = table[id]
  const direct = fileOf.get(cls)
  const file = direct && (await import(pathToFileURL(direct).href)).default === cls ? direct : await shimFor(id, cls)
  commands[id] = { ...entry, isESM: true, relativePath: path.relative(ROOT, file).split(path.sep) }
}

fs.writeFileSync(MANIFEST, JSON.stringify({ ...plugin.manifest, commands }, null, 2) + "\n")
process.stdout.write(`build: dist/ and oclif.manifest.json (${Object.keys(commands).length} commands) in ${((Date.now() - started) / 1000).toFixed(1)} s\n`)
