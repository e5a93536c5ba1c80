/**
 * The example cartridges shipped with the plugin (`console/examples/*.s`): a counter, a sprite
 * moved by the controller byte, and a tiny game that raises `status`. Their tiles are drawn
 * here; each example is a ready POST /v1/cartridge request.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { CartridgeRequest } from "./Cartridge.ts"

const DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), "examples")

const fill = (c: string) => Array.from({ length: 8 }, () => c.repeat(8))
/** Tile 0 blank, 1 lit cell (diffusion with a metal rim), 2 ball (polysilicon), 3 wall (metal bricks). */
export const EXAMPLE_TILES: ReadonlyArray<ReadonlyArray<string>> = [
  fill("0"),
  ["33333333", "31111113", "31111113", "31111113", "31111113", "31111113", "31111113", "33333333"],
  ["00222200", "02222220", "22222222", "22222222", "22222222", "22222222", "02222220", "00222200"],
  ["33303330", "33303330", "00000000", "30333033", "30333033", "00000000", "33303330", "33303330"]
]

/** An example: its request and the controller byte it is verified with. */
export interface Example {
  readonly name: string
  readonly request: CartridgeRequest
}

const example = (name: string, blurb: string, width: number, height: number, extra: Partial<CartridgeRequest> = {}): Example => ({
  name,
  request: {
    rom: { source: fs.readFileSync(path.join(DIR, `${name}.s`), "utf8") },
    console: { tick: 0x0d, input: 0x02, screen: 0x0500, width, height, ...(extra.console ?? {}) },
    tiles: { pixels: EXAMPLE_TILES },
    meta: { name, author: "platform", blurb },
    frames: extra.frames ?? 4,
    ...(extra.input !== undefined ? { input: extra.input } : {})
  }
})

/** The three examples. */
export const EXAMPLES: ReadonlyArray<Example> = [
  example("counter", "one more cell lights up every frame", 16, 1),
  example("sprite", "a ball moved by the controller byte", 16, 8, { input: 0x05 }),
  example("game", "a bar that grows until the game is over", 8, 2, { console: { width: 8, height: 2, status: 0x03 }, frames: 6, input: 0x01 })
]
