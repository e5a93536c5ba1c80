/**
 * Module resolve hook (`module.register`) of the compiled platform: an import that resolves to a
 * TypeScript source of the platform itself (`<root>/core|plugins|cli/X.ts`, as a plugin loaded
 * from its own TypeScript source writes `../../plugins/jobs/Contract.ts`) gets the compiled
 * `<root>/dist/X.js` the running platform uses, so there is one copy of each module: classes such
 * as `JobFailure` stay the ones the kernel checks with `instanceof`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const ROOT = path.dirname(DIST)

interface Resolved {
  readonly url: string
  readonly format?: string | null
}

/** Node's `resolve` hook: defers to the next resolver, then swaps a platform source for its build. */
export const resolve = async (specifier: string, context: unknown, nextResolve: (s: string, c: unknown) => Promise<Resolved>): Promise<Resolved> => {
  const resolved = await nextResolve(specifier, context)
  if (!resolved.url.startsWith("file:")) return resolved
  const rel = path.relative(ROOT, fileURLToPath(resolved.url))
  if (!/^(core|plugins|cli)\/.*\.ts$/.test(rel.split(path.sep).join("/"))) return resolved
  const compiled = path.join(DIST, rel.replace(/\.ts$/, ".js"))
  return fs.existsSync(compiled) ? { url: pathToFileURL(compiled).href, format: "module" } : resolved
}
