// Where the shared golden programs live: `../shared/chip-sim/golden` beside the repository root
// (shared/README.md). Not a test file itself; the tests import it.
import { readFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const ROOT = fileURLToPath(new URL("../../../../", import.meta.url))

/** The golden folder; `CHIP_SIM_GOLDEN` overrides it for checkouts laid out differently. */
export const GOLDEN = process.env.CHIP_SIM_GOLDEN ?? resolve(ROOT, "../shared/chip-sim/golden")

export interface GoldenProgram {
  readonly name: string
  readonly source: string
  readonly image: string
  readonly org: number
}

/** The programs of `manifest.json`, each with its source, image and load address. */
export const goldenPrograms = (): Array<GoldenProgram> =>
  (JSON.parse(readFileSync(join(GOLDEN, "manifest.json"), "utf8")).programs as Array<GoldenProgram>).map(
    ({ name, source, image, org }) => ({ name, source, image, org })
  )
