/**
 * The console contract (spec: chip-simulation.md, "Console contract", "Tiles", "Cartridge"):
 * addresses agreed between the host and a ROM, not silicon facts, and what `GET /v1/console`
 * serves. A frame is an agreement: the host clears `tick` and writes the held `input` byte, the
 * chip runs until the ROM raises `tick`, the host reads the screen (one tile index per cell, row
 * major). The ROM busy-waits on `tick` between frames.
 */
import { PALETTE, TILE_BYTES } from "./Tiles.ts"

/** The cartridge document's `format` and `version`. */
export const CARTRIDGE_FORMAT = "chip-sim-cartridge"
export const CARTRIDGE_VERSION = 1

/** Contract defaults: where the bytes usually live. */
export const DEFAULT_TICK = 0x000d
export const DEFAULT_INPUT = 0x0002
export const DEFAULT_STATUS = 0x0003
export const DEFAULT_SCREEN = 0x0500
export const DEFAULT_ORG = 0x0200
/** The stack page and the vectors, which neither a ROM nor its screen may cover. */
export const STACK_PAGE = { start: 0x0100, end: 0x01ff } as const
export const VECTORS = { start: 0xfffa, end: 0xffff } as const
/** Frames run when minting unless the request says otherwise. */
export const DEFAULT_FRAMES = 3

/**
 * The smallest ROM that is a cartridge: it finishes a frame at once (raises `tick`), waits for
 * the host to clear it, and loops. Its screen stays as the host left it (one value everywhere).
 */
export const SMALLEST_ROM = `  .org $0200
frame:  lda #1
        sta $0D     ; tick: this frame is done
wait:   lda $0D
        bne wait    ; until the host clears it
        jmp frame
`

const hex4 = (a: number) => `$${a.toString(16).toUpperCase().padStart(4, "0")}`

/** `GET /v1/console`: the contract, memory map, tile format, palette, cartridge format, smallest ROM. Static. */
export const CONSOLE_DOCUMENT = {
  contract: {
    tick: { address: hex4(DEFAULT_TICK), role: "the host clears it before a frame; the ROM raises it (any non-zero byte) when the frame is finished" },
    input: { address: hex4(DEFAULT_INPUT), role: "one controller byte, written by the host before each frame" },
    status: { address: hex4(DEFAULT_STATUS), role: "optional: the ROM raises it when the game is over" },
    frame: "host clears tick, writes input, steps until the ROM raises tick, reads the screen region; the ROM busy-waits on tick",
    screen: "width * height bytes from the screen address, one tile index per cell, row major"
  },
  memory_map: [
    { range: "$0000-$00FF", role: "zero page; contract bytes live here" },
    { range: hex4(DEFAULT_TICK), role: "tick" },
    { range: hex4(DEFAULT_INPUT), role: "input" },
    { range: hex4(DEFAULT_STATUS), role: "status (optional)" },
    { range: "$0100-$01FF", role: "stack; a cartridge whose ROM or screen covers it is refused" },
    { range: hex4(DEFAULT_ORG), role: "usual .org of a ROM" },
    { range: hex4(DEFAULT_SCREEN), role: "usual screen: width * height bytes, one tile index per cell, row major" },
    { range: "$FFFA-$FFFF", role: "vectors; booting writes the reset vector at $FFFC; a ROM reaching them is refused" }
  ],
  tiles: {
    width: 8,
    height: 8,
    bits_per_pixel: 2,
    bytes: TILE_BYTES,
    layout: "bytes 0-7: bit 0 of each pixel, one byte per row, most significant bit leftmost; bytes 8-15: bit 1; colour = (plane1 << 1) | plane0",
    forms: { chr: "hex of the binary form", pixels: "per tile, eight strings of eight characters 0 to 3" }
  },
  palette: PALETTE.map((hex, colour) => ({ colour, hex, name: ["substrate", "diffusion", "polysilicon", "metal"][colour] })),
  cartridge: {
    format: CARTRIDGE_FORMAT,
    version: CARTRIDGE_VERSION,
    media_type: "application/gzip (gzip modification time zero: the same request gives the same bytes); ?format=json returns the document"
  },
  smallest_rom: SMALLEST_ROM
} as const
