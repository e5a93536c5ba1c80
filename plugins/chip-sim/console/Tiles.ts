/**
 * Tiles of the console (spec: chip-simulation.md, "Tiles"): 8x8 pixels, 2 bits per pixel, 16
 * bytes per tile. Bytes 0..7 are bit 0 of each pixel (one byte per row, the most significant bit
 * the leftmost pixel), bytes 8..15 bit 1; colour = (plane1 << 1) | plane0. Art arrives as `chr`
 * (hex of that binary form) or `pixels` (per tile, eight strings of eight characters `0`-`3`);
 * both forms are kept.
 */

/** Bytes per tile, and the most tiles a cartridge holds (tile indices are one byte). */
export const TILE_BYTES = 16
export const MAX_TILES = 256

/** The console palette, colour 0..3 (colour 0 is drawn, not skipped). */
export const PALETTE = ["#0B1120", "#3E93A6", "#E0A24B", "#4FBFD4"] as const

/** Tiles that are not valid art; the message names the tile, row or character. */
export class TileFormatError extends Error {
  readonly _tag = "TileFormatError"
  constructor(message: string) {
    super(message)
    this.name = "TileFormatError"
  }
}

const ROW = /^[0-3]{8}$/

/** `pixels` (tiles of eight rows of eight `0`-`3`) to the binary form. @throws TileFormatError */
export const pixelsToChr = (tiles: ReadonlyArray<ReadonlyArray<string>>): Uint8Array => {
  if (!Array.isArray(tiles)) throw new TileFormatError("tiles.pixels: expected an array of tiles")
  if (tiles.length > MAX_TILES) throw new TileFormatError(`tiles.pixels: ${tiles.length} tiles; at most ${MAX_TILES} (a tile index is one byte)`)
  const out = new Uint8Array(tiles.length * TILE_BYTES)
  tiles.forEach((rows, t) => {
    if (!Array.isArray(rows) || rows.length !== 8) throw new TileFormatError(`tiles.pixels[${t}]: expected eight rows`)
    rows.forEach((row, y) => {
      if (typeof row !== "string" || !ROW.test(row)) {
        throw new TileFormatError(`tiles.pixels[${t}][${y}]: expected eight characters 0 to 3, got ${JSON.stringify(row)}`)
      }
      let plane0 = 0
      let plane1 = 0
      for (let x = 0; x < 8; x++) {
        const c = row.charCodeAt(x) - 48
        plane0 |= (c & 1) << (7 - x)
        plane1 |= (c >> 1) << (7 - x)
      }
      out[t * TILE_BYTES + y] = plane0
      out[t * TILE_BYTES + 8 + y] = plane1
    })
  })
  return out
}

/** The binary form to `pixels`. */
export const chrToPixels = (chr: Uint8Array): Array<Array<string>> => {
  const tiles: Array<Array<string>> = []
  for (let t = 0; t * TILE_BYTES < chr.length; t++) {
    const rows: Array<string> = []
    for (let y = 0; y < 8; y++) {
      const p0 = chr[t * TILE_BYTES + y]!
      const p1 = chr[t * TILE_BYTES + 8 + y]!
      let row = ""
      for (let x = 7; x >= 0; x--) row += String(((p1 >> x) & 1) * 2 + ((p0 >> x) & 1))
      rows.push(row)
    }
    tiles.push(rows)
  }
  return tiles
}

/** `chr` hex to bytes: a whole number of 16-byte tiles, at most MAX_TILES. @throws TileFormatError */
export const parseChr = (hex: string): Uint8Array => {
  if (typeof hex !== "string" || !/^(?:[0-9a-fA-F]{2})*$/.test(hex)) throw new TileFormatError("tiles.chr: expected hex digits, two per byte")
  const bytes = Buffer.from(hex, "hex")
  if (bytes.length % TILE_BYTES !== 0) throw new TileFormatError(`tiles.chr: ${bytes.length} bytes is not a whole number of ${TILE_BYTES}-byte tiles`)
  if (bytes.length / TILE_BYTES > MAX_TILES) throw new TileFormatError(`tiles.chr: ${bytes.length / TILE_BYTES} tiles; at most ${MAX_TILES}`)
  return new Uint8Array(bytes)
}

/** Colour (0..3) of pixel (x, y) of tile `t`, or 0 for a tile index past the set. */
export const pixelOf = (chr: Uint8Array, t: number, x: number, y: number): number => {
  const base = t * TILE_BYTES
  if (base + TILE_BYTES > chr.length) return 0
  return (((chr[base + 8 + y]! >> (7 - x)) & 1) << 1) | ((chr[base + y]! >> (7 - x)) & 1)
}
