/**
 * `npm run bench`: runs every benchmark module under bench/ (each exports one `bench*` function
 * returning named figures) and prints the figures. `npm run bench -- chip gateway` runs a subset.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"

const dir = path.dirname(new URL(import.meta.url).pathname)
const wanted = new Set(process.argv.slice(2))
const modules = fs.readdirSync(dir).filter((f) => f.endsWith(".ts") && f !== "run.ts").sort()
const results: Record<string, Record<string, number> | { error: string }> = {}
process.env.PLATFORM_LOG_LEVEL ??= "warning"
for (const file of modules) {
  const name = file.replace(/\.ts$/, "")
  if (wanted.size && !wanted.has(name)) continue
  const mod = (await import(pathToFileURL(path.join(dir, file)).href)) as Record<string, unknown>
  const fn = Object.entries(mod).find(([k, v]) => k.startsWith("bench") && typeof v === "function")?.[1] as (() => Promise<Record<string, number>>) | undefined
  if (!fn) continue
  console.log(`\n== ${name} ==`)
  try {
    results[name] = await fn()
  } catch (e) {
    results[name] = { error: (e as Error).message }
    console.error(`${name}: ${(e as Error).stack}`)
  }
}
console.log("\n== summary ==")
console.log(JSON.stringify(results, null, 2))
process.exit(Object.values(results).some((r) => "error" in r) ? 1 : 0)
