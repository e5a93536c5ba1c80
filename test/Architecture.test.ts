/**
 * The import boundaries the architecture rests on (README "Architecture"): the kernel knows no
 * plugin, a plugin reaches another only through its public contract module, and the CLI reaches
 * plugins only through the commands they contribute.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { ROOT } from "../core/Kernel.ts"

/** Every `.ts` file under `dir` (relative to ROOT). */
const files = (dir: string): Array<string> =>
  fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith(".ts") ? [path.join(dir, e.name)] : []
  )

/** `[file, imported path relative to ROOT]` for each relative import of the files under `dir`. */
const imports = (dir: string): Array<[string, string]> =>
  files(dir).flatMap((file) =>
    [...fs.readFileSync(path.join(ROOT, file), "utf8").matchAll(/(?:from|import)\s*\(?\s*"(\.[^"]+)"/g)].map(
      (m): [string, string] => [file, path.relative(ROOT, path.resolve(ROOT, path.dirname(file), m[1]!))]
    )
  )

describe("import boundaries", () => {
  it("core/ imports no plugin", () => {
    expect(imports("core").filter(([, to]) => to.startsWith("plugins/"))).toEqual([])
  })

  it("a plugin imports another plugin's Contract.ts only", () => {
    const crossing = imports("plugins").filter(([from, to]) => to.startsWith("plugins/") && from.split("/")[1] !== to.split("/")[1])
    expect(crossing.length).toBeGreaterThan(0)
    expect(crossing.filter(([, to]) => !/^plugins\/[^/]+\/Contract\.ts$/.test(to))).toEqual([])
  })

  it("cli/ imports no plugin at all: plugins contribute their commands (plugins/<name>/commands.ts)", () => {
    expect(imports("cli").filter(([, to]) => to.startsWith("plugins/"))).toEqual([])
  })
})
