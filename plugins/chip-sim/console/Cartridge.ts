/**
 * Minting a cartridge (spec: chip-simulation.md, "POST /v1/cartridge", "Cartridge"): assemble
 * the ROM, check its layout against the console contract, run it on the transistor-level chip
 * with the frame protocol, and pack one gzipped JSON document (gzip modification time zero; no
 * clock read: the same request gives the same bytes).
 */
import { createHash } from "node:crypto"
import { gunzipSync, gzipSync } from "node:zlib"
import { assemble, type AssembleResult } from "../assembler/Assembler.ts"
import { encodeMemory } from "../engine/Memory.ts"
import { MAX_STEP } from "../Domain.ts"
import type { FramesRequest, FramesResult, StepResult } from "../engine/Simulator.ts"
import {
  CARTRIDGE_FORMAT,
  CARTRIDGE_VERSION,
  CONSOLE_DOCUMENT,
  DEFAULT_FRAMES,
  DEFAULT_INPUT,
  DEFAULT_ORG,
  DEFAULT_SCREEN,
  DEFAULT_TICK,
  STACK_PAGE,
  VECTORS
} from "./Console.ts"
import { chrToPixels, PALETTE, parseChr, pixelsToChr, TILE_BYTES } from "./Tiles.ts"

/** A layout the console contract refuses (HTTP 422): the reason and what to do. */
export class CartridgeLayoutError extends Error {
  readonly _tag = "CartridgeLayoutError"
  readonly status = 422
  constructor(readonly reason: string, readonly fix: string) {
    super(`${reason}; ${fix}`)
    this.name = "CartridgeLayoutError"
  }
}

/** The `console` member of a request: contract addresses and screen geometry. */
export interface ConsoleFields {
  readonly tick?: number
  readonly input?: number
  readonly screen?: number
  readonly width: number
  readonly height: number
  readonly status?: number
  readonly score?: number
  readonly entropy?: number
  readonly gate_mask?: number
  readonly frame_cost?: number
  readonly dirs?: Readonly<Record<string, number>>
  readonly watch?: ReadonlyArray<string>
}

/** POST /v1/cartridge, decoded. */
export interface CartridgeRequest {
  readonly rom: { readonly source: string; readonly org?: number }
  readonly console: ConsoleFields
  readonly tiles: { readonly pixels?: ReadonlyArray<ReadonlyArray<string>>; readonly chr?: string }
  readonly meta?: { readonly name?: string; readonly author?: string; readonly blurb?: string }
  /** Frames to run when verifying (default 3; 0 skips verification). */
  readonly frames?: number
  /** Controller byte held during verification (default 0). */
  readonly input?: number
}

/** What minting needs of the simulator (in-process or the worker pool). */
export interface CartridgeRunner {
  boot(req: { memory: { fill: string; pages: Record<string, string> }; reset_vector: number }): Promise<StepResult>
  frames(req: FramesRequest): Promise<FramesResult>
}

const hex4 = (a: number) => `$${a.toString(16).toUpperCase().padStart(4, "0")}`
const span = (start: number, end: number) => `${hex4(start)}-${hex4(end)}`
const overlaps = (a0: number, a1: number, b0: number, b1: number) => a0 <= b1 && b0 <= a1

/** The contract bytes of a console, by field name (defaults filled in). */
const contractBytes = (c: ConsoleFields): Array<[string, number]> => {
  const out: Array<[string, number]> = [
    ["tick", c.tick ?? DEFAULT_TICK],
    ["input", c.input ?? DEFAULT_INPUT]
  ]
  for (const name of ["status", "score", "entropy"] as const) if (c[name] !== undefined) out.push([name, c[name]!])
  return out
}

/**
 * Checks a ROM's layout against the console contract: the refusals of the spec's Errors table.
 * @throws CartridgeLayoutError
 */
export const checkLayout = (rom: AssembleResult, c: ConsoleFields): void => {
  const screen = c.screen ?? DEFAULT_SCREEN
  const cells = c.width * c.height
  const screenEnd = screen + cells - 1
  if (screenEnd > 0xffff) throw new CartridgeLayoutError(`the screen ${hex4(screen)} + ${cells} cells runs past $FFFF`, "move console.screen lower or make it smaller")
  if (rom.size === 0) throw new CartridgeLayoutError("the ROM assembles to no bytes", "give it code: a cartridge must at least raise tick (see GET /v1/console, smallest_rom)")
  const romStart = rom.org
  const romEnd = rom.end
  if (overlaps(romStart, romEnd, screen, screenEnd)) {
    throw new CartridgeLayoutError(
      `the ROM ${span(romStart, romEnd)} overlaps its own screen ${span(screen, screenEnd)}`,
      `move the screen (console.screen) past ${hex4(romEnd)} or .org the ROM elsewhere`
    )
  }
  if (overlaps(romStart, romEnd, STACK_PAGE.start, STACK_PAGE.end)) {
    throw new CartridgeLayoutError(`the ROM ${span(romStart, romEnd)} covers the stack page $0100-$01FF`, "put the ROM at $0200 or above (.org $0200)")
  }
  if (overlaps(screen, screenEnd, STACK_PAGE.start, STACK_PAGE.end)) {
    throw new CartridgeLayoutError(`the screen ${span(screen, screenEnd)} covers the stack page $0100-$01FF`, "put the screen at $0200 or above (usually $0500)")
  }
  if (romEnd >= VECTORS.start) {
    throw new CartridgeLayoutError(`the ROM ${span(romStart, romEnd)} reaches the vectors $FFFA-$FFFF`, "end the ROM below $FFFA: booting writes the reset vector there")
  }
  const bytes = contractBytes(c)
  for (const [name, addr] of bytes) {
    if (addr >= romStart && addr <= romEnd) {
      throw new CartridgeLayoutError(`the contract byte ${name} (${hex4(addr)}) is inside the ROM ${span(romStart, romEnd)}`, `move console.${name} to the zero page (the ROM would overwrite it, or the host its code)`)
    }
  }
  for (let i = 0; i < bytes.length; i++) {
    for (let k = i + 1; k < bytes.length; k++) {
      if (bytes[i]![1] === bytes[k]![1]) {
        throw new CartridgeLayoutError(`the contract fields ${bytes[i]![0]} and ${bytes[k]![0]} share the address ${hex4(bytes[i]![1])}`, "give each contract field its own byte")
      }
    }
  }
}

/** The minted cartridge: the document and its gzip bytes. */
export interface Minted {
  readonly document: CartridgeDocument
  readonly gzip: Buffer
}

/** The cartridge document (spec: "Cartridge"). */
export interface CartridgeDocument {
  format: string
  version: number
  encoding: Record<string, string>
  contract: typeof CONSOLE_DOCUMENT.contract
  meta: { name: string; author: string; blurb: string; minted: string }
  rom: { org: number; end: number; size: number; reset: number; bytes: string; labels: Record<string, number>; source: string }
  console: Record<string, unknown>
  tiles: { count: number; chr: string; pixels: Array<Array<string>>; palette: ReadonlyArray<string> }
  verify: {
    frames_requested: number
    frames_completed: number
    half_cycles_per_frame: Array<number>
    screen_changed: boolean
    tiles_on_screen: Array<number>
    one_value_screen: boolean
    status?: number
    screen?: string
  } | { skipped: true }
  notes: Array<string>
}

/** The content digest a cartridge carries as `meta.minted`: ROM bytes, CHR and console fields. */
const mintDigest = (romHex: string, chr: Uint8Array, consoleOut: Record<string, unknown>): string =>
  `sha256:${createHash("sha256").update(romHex).update(Buffer.from(chr)).update(JSON.stringify(consoleOut)).digest("hex").slice(0, 32)}`

/**
 * Assembles, checks and verifies a cartridge, and packs it. @throws AssembleError (422),
 * CartridgeLayoutError (422), TileFormatError (422)
 */
export const mintCartridge = async (req: CartridgeRequest, runner: CartridgeRunner): Promise<Minted> => {
  const c = req.console
  const rom = assemble(req.rom.source, req.rom.org ?? DEFAULT_ORG)
  checkLayout(rom, c)
  const chr = req.tiles.chr !== undefined ? parseChr(req.tiles.chr) : pixelsToChr(req.tiles.pixels ?? [])
  const tileCount = chr.length / TILE_BYTES
  const notes: Array<string> = []
  if (req.tiles.chr !== undefined && req.tiles.pixels !== undefined) notes.push("tiles: both chr and pixels given; chr was used")
  const tick = c.tick ?? DEFAULT_TICK
  const input = c.input ?? DEFAULT_INPUT
  const screen = c.screen ?? DEFAULT_SCREEN
  const cells = c.width * c.height
  const frames = req.frames ?? DEFAULT_FRAMES
  const perFrame = Math.min(c.frame_cost ?? MAX_STEP, MAX_STEP)

  let verify: CartridgeDocument["verify"] = { skipped: true }
  if (frames > 0) {
    const mem = new Uint8Array(65536)
    mem.set(rom.image, rom.org)
    const boot = await runner.boot({ memory: encodeMemory(mem), reset_vector: rom.org })
    const run = await runner.frames({
      machine: boot.machine as never,
      frames,
      tick,
      input,
      inputByte: req.input ?? 0,
      maxHalfCycles: perFrame,
      screen: { addr: screen, length: cells },
      read: c.status !== undefined ? [c.status] : []
    })
    const screens = [run.screen_before, ...run.frames.map((f) => f.screen)]
    const last = screens.at(-1)!
    const lastBytes = Buffer.from(last, "hex")
    const onScreen = [...new Set(lastBytes)].sort((a, b) => a - b)
    const completed = run.frames.filter((f) => f.completed).length
    const oneValue = onScreen.length <= 1
    verify = {
      frames_requested: frames,
      frames_completed: completed,
      half_cycles_per_frame: run.frames.map((f) => f.half_cycles),
      screen_changed: screens.some((s, i) => i > 0 && s !== screens[i - 1]),
      tiles_on_screen: onScreen,
      one_value_screen: oneValue,
      ...(c.status !== undefined ? { status: run.read[c.status]! } : {}),
      screen: last
    }
    if (completed < frames) {
      notes.push(`verify: frame ${completed + 1} did not finish: the ROM did not raise tick (${hex4(tick)}) within ${perFrame} half-cycles; a frame ends when the ROM writes a non-zero byte there`)
    }
    if (oneValue) notes.push(`verify: the screen holds one value everywhere (${onScreen[0] ?? 0}) after ${completed} frame(s)${verify.screen_changed ? "" : ": nothing was drawn"}`)
    const missing = onScreen.filter((t) => t >= tileCount)
    if (missing.length > 0) notes.push(`verify: tile indices ${missing.join(", ")} are on screen but the cartridge has ${tileCount} tile(s); they draw as colour 0`)
  }

  const consoleOut: Record<string, unknown> = { tick, input, screen, width: c.width, height: c.height }
  for (const k of ["status", "score", "entropy", "gate_mask", "frame_cost", "dirs", "watch"] as const) if (c[k] !== undefined) consoleOut[k] = c[k]
  const digest = mintDigest(rom.bytes, chr, consoleOut)
  const document: CartridgeDocument = {
    format: CARTRIDGE_FORMAT,
    version: CARTRIDGE_VERSION,
    encoding: {
      rom: "rom.bytes: lower-case hex, two characters per byte, loaded at rom.org",
      tiles: "tiles.chr: lower-case hex of 16-byte tiles (see GET /v1/console, tiles); tiles.pixels: the same art as rows of 0-3",
      screen: "verify.screen: the screen region after the last frame, hex, one byte (tile index) per cell, row major",
      container: "gzip, modification time zero"
    },
    contract: CONSOLE_DOCUMENT.contract,
    meta: {
      name: req.meta?.name ?? "untitled",
      author: req.meta?.author ?? "",
      blurb: req.meta?.blurb ?? "",
      // content-derived, not a clock: the same request mints the same bytes
      minted: digest
    },
    rom: { org: rom.org, end: rom.end, size: rom.size, reset: rom.org, bytes: rom.bytes, labels: rom.labels, source: req.rom.source },
    console: consoleOut,
    tiles: { count: tileCount, chr: Buffer.from(chr).toString("hex"), pixels: chrToPixels(chr), palette: PALETTE },
    verify,
    notes
  }
  return { document, gzip: gzipSync(Buffer.from(JSON.stringify(document)), { level: 9 }) }
}

/** Bytes that are not a cartridge as minted here; `reason` says which check failed. */
export class CartridgeFormatError extends Error {
  readonly _tag = "CartridgeFormatError"
  constructor(readonly reason: string) {
    super(`not a cartridge: ${reason}`)
    this.name = "CartridgeFormatError"
  }
}

const isRecord = (u: unknown): u is Record<string, any> => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * Checks that `gzip` is a cartridge as `mintCartridge` packs it, without running the chip: gzip
 * of one JSON document (at most `maxJsonBytes` once inflated) of this format and version; its
 * source assembles at `rom.org` to exactly `rom.bytes` (org, end, size agree) and passes the
 * console layout checks again; its tiles parse and `pixels` match `chr`; and `meta.minted` is
 * the content digest of ROM, tiles and console, so an edited cartridge is refused.
 * Returns the document. @throws CartridgeFormatError (any failed check, with the reason)
 */
export const verifyCartridge = (gzip: Uint8Array, maxJsonBytes = 4 * 1024 * 1024): CartridgeDocument => {
  let text: string
  try {
    text = gunzipSync(gzip, { maxOutputLength: maxJsonBytes }).toString("utf8")
  } catch (e) {
    const code = (e as { code?: string }).code
    throw new CartridgeFormatError(code === "ERR_BUFFER_TOO_LARGE" ? `inflates past ${maxJsonBytes} bytes` : "not gzip data")
  }
  let doc: unknown
  try {
    doc = JSON.parse(text)
  } catch {
    throw new CartridgeFormatError("the gzip does not hold a JSON document")
  }
  if (!isRecord(doc) || doc.format !== CARTRIDGE_FORMAT) throw new CartridgeFormatError(`format is not "${CARTRIDGE_FORMAT}"`)
  if (doc.version !== CARTRIDGE_VERSION) throw new CartridgeFormatError(`version ${JSON.stringify(doc.version)} is not ${CARTRIDGE_VERSION}`)
  const { rom, console: consoleOut, tiles, meta } = doc
  if (!isRecord(rom) || typeof rom.source !== "string" || typeof rom.org !== "number" || typeof rom.bytes !== "string") {
    throw new CartridgeFormatError("rom needs source, org and bytes")
  }
  if (!isRecord(consoleOut) || typeof consoleOut.width !== "number" || typeof consoleOut.height !== "number") {
    throw new CartridgeFormatError("console needs width and height")
  }
  if (!isRecord(tiles) || typeof tiles.chr !== "string" || !Array.isArray(tiles.pixels)) throw new CartridgeFormatError("tiles need chr and pixels")
  if (!isRecord(meta) || typeof meta.name !== "string" || typeof meta.minted !== "string") throw new CartridgeFormatError("meta needs name and minted")
  let assembled: AssembleResult
  try {
    assembled = assemble(rom.source, rom.org)
  } catch (e) {
    throw new CartridgeFormatError(`rom.source does not assemble: ${(e as Error).message}`)
  }
  if (assembled.bytes !== rom.bytes || assembled.end !== rom.end || assembled.size !== rom.size) {
    throw new CartridgeFormatError("rom.bytes differ from what rom.source assembles to")
  }
  try {
    checkLayout(assembled, consoleOut as unknown as ConsoleFields)
  } catch (e) {
    throw new CartridgeFormatError((e as Error).message)
  }
  let chr: Uint8Array
  try {
    chr = parseChr(tiles.chr)
  } catch (e) {
    throw new CartridgeFormatError((e as Error).message)
  }
  if (tiles.count !== chr.length / TILE_BYTES || JSON.stringify(chrToPixels(chr)) !== JSON.stringify(tiles.pixels)) {
    throw new CartridgeFormatError("tiles.count or tiles.pixels disagree with tiles.chr")
  }
  if (meta.minted !== mintDigest(rom.bytes, chr, consoleOut)) throw new CartridgeFormatError("meta.minted does not match the ROM, tiles and console: the cartridge was edited after minting")
  return doc as unknown as CartridgeDocument
}
