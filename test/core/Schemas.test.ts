import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { ROOT } from "../../core/Kernel.ts"
import { generateSchemas, readmeWithReference } from "../../core/Schemas.ts"

describe("schemas/", () => {
  it("matches what the code generates (run `platform schemas generate` after changing a Schema)", async () => {
    const { files, reference, errors } = await generateSchemas()
    expect(errors).toEqual([])
    const committed = (fs.readdirSync(path.join(ROOT, "schemas"), { recursive: true }) as Array<string>)
      .filter((f) => /\.(json|d\.ts)$/.test(f))
      .map((f) => path.join("schemas", f))
      .sort()
    expect(committed).toEqual(Object.keys(files).sort())
    for (const [rel, content] of Object.entries(files)) {
      expect(fs.readFileSync(path.join(ROOT, rel), "utf8"), rel).toBe(content)
    }
    const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8")
    expect(readmeWithReference(readme, reference), "README config reference").toBe(readme)
  }, 120_000)
})
