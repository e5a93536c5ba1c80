/**
 * Renders a console screen (one tile index per cell, row major) with the cartridge's tiles and
 * the console palette: as ANSI truecolour text (two pixel rows per character with the upper half
 * block) and as a PNG (pngjs, a well-kept pure-JavaScript encoder).
 */
import { PNG } from "pngjs"
import { PALETTE, pixelOf } from "./Tiles.ts"

const rgb = PALETTE.map((hex) => [parseInt(hex.slice(1, 3), 16), parseInt(hex.slice(3, 5), 16), parseInt(hex.slice(5, 7), 16)] as const)

/** Colour index (0..3) of screen pixel (x, y): the cell's tile, or colour 0 for a tile past the set. */
const colourAt = (screen: Uint8Array, width: number, chr: Uint8Array, x: number, y: number): number =>
  pixelOf(chr, screen[Math.floor(y / 8) * width + Math.floor(x / 8)]!, x % 8, y % 8)

/** ANSI truecolour lines of the screen, `width` x `height` cells of 8x8 pixels; 4 text rows per cell row. */
export const renderAnsi = (screen: Uint8Array, width: number, height: number, chr: Uint8Array): string => {
  const lines: Array<string> = []
  for (let y = 0; y < height * 8; y += 2) {
    let line = ""
    for (let x = 0; x < width * 8; x++) {
      const [tr, tg, tb] = rgb[colourAt(screen, width, chr, x, y)]!
      const [br, bg, bb] = rgb[colourAt(screen, width, chr, x, y + 1)]!
      line += `\x1b[38;2;${tr};${tg};${tb}m\x1b[48;2;${br};${bg};${bb}m\u2580`
    }
    lines.push(`${line}\x1b[0m`)
  }
  return lines.join("\n")
}

/** PNG bytes of the screen, each pixel drawn as a `scale` x `scale` square. */
export const renderPng = (screen: Uint8Array, width: number, height: number, chr: Uint8Array, scale = 4): Buffer => {
  const png = new PNG({ width: width * 8 * scale, height: height * 8 * scale })
  for (let y = 0; y < png.height; y++) {
    for (let x = 0; x < png.width; x++) {
      const [r, g, b] = rgb[colourAt(screen, width, chr, Math.floor(x / scale), Math.floor(y / scale))]!
      const i = (y * png.width + x) * 4
      png.data[i] = r
      png.data[i + 1] = g
      png.data[i + 2] = b
      png.data[i + 3] = 255
    }
  }
  return PNG.sync.write(png)
}
