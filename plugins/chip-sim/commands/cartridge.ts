import { Args, Flags } from "@oclif/core"
import * as fs from "node:fs"
import { AssembleError } from "../assembler/AssembleError.ts"
import { CartridgeLayoutError, mintCartridge, type CartridgeRequest } from "../console/Cartridge.ts"
import { EXAMPLES, EXAMPLE_TILES } from "../console/Examples.ts"
import { renderAnsi, renderPng } from "../console/Render.ts"
import { parseChr, TileFormatError } from "../console/Tiles.ts"
import { ROOT } from "../../../core/Kernel.ts"
import { PlatformCommand } from "../../../core/Command.ts"

/**
 * `platform chip cartridge FILE`: mints a cartridge in-process (the same code as POST
 * /api/v1/cartridge), runs its frames on the transistor-level chip with a held controller byte,
 * and draws the screen in the terminal (ANSI truecolour, the console palette); `--png` writes it
 * as an image, `--out` the cartridge file.
 */
export default class ChipCartridge extends PlatformCommand {
  static summary = "Mint a cartridge and draw its screen after N frames in the terminal (truecolour), or as a PNG."
  static description =
    "FILE is a POST /api/v1/cartridge request (JSON) or a 6502 source (.s; then give --width/--height, tiles from --tiles or the examples' four). " +
    "--example NAME mints a shipped example (counter, sprite, game)."
  static examples = [
    "<%= config.bin %> chip cartridge --example sprite --frames 6 --input 5",
    "<%= config.bin %> chip cartridge game.s --width 8 --height 2 --frames 10 --input 1 --out game.cart.gz",
    "<%= config.bin %> chip cartridge request.json --png screen.png"
  ]
  static args = { file: Args.string({ description: "cartridge request (.json) or 6502 source (.s)", required: false }) }
  static flags = {
    example: Flags.string({ summary: "Mint a shipped example instead of FILE.", options: EXAMPLES.map((e) => e.name), exclusive: ["file"] }),
    frames: Flags.integer({ summary: "Frames to run (default: the request's, else 3).", min: 1, max: 60 }),
    input: Flags.integer({ summary: "Controller byte held during the frames (0-255).", min: 0, max: 255 }),
    width: Flags.integer({ summary: "Screen width in cells (for a .s FILE).", min: 1, max: 64 }),
    height: Flags.integer({ summary: "Screen height in cells (for a .s FILE).", min: 1, max: 64 }),
    tiles: Flags.string({ summary: "Tiles for a .s FILE: JSON {pixels: [...]} or {chr: hex} (default: the examples' four)." }),
    out: Flags.string({ summary: "Write the cartridge (gzip) here." }),
    png: Flags.string({ summary: "Write the screen as a PNG here." }),
    scale: Flags.integer({ summary: "PNG pixels per screen pixel.", default: 4, min: 1, max: 16 }),
    netlist: Flags.string({ summary: "Netlist folder (default: $CHIP_SIM_NETLIST, ./data/netlist, ../shared/chip-sim/netlist)." })
  }

  async run(): Promise<{ verify: unknown; notes: Array<string>; bytes: number }> {
    const { args, flags } = await this.parse(ChipCartridge)
    const usage = (m: string): never => this.error(m, { exit: 2 })
    const read = (f: string) => {
      try {
        return fs.readFileSync(f, "utf8")
      } catch (e) {
        return usage(`cannot read ${f}: ${(e as Error).message}`)
      }
    }
    let req: CartridgeRequest
    if (flags.example !== undefined) req = EXAMPLES.find((e) => e.name === flags.example)!.request
    else if (args.file === undefined) return usage("give FILE or --example NAME")
    else if (args.file.endsWith(".json")) {
      try {
        req = JSON.parse(read(args.file)) as CartridgeRequest
      } catch (e) {
        return usage(`${args.file}: not JSON: ${(e as Error).message}`)
      }
    } else {
      if (flags.width === undefined || flags.height === undefined) usage("a .s FILE needs --width and --height (screen cells)")
      const tiles = flags.tiles !== undefined ? (JSON.parse(read(flags.tiles)) as CartridgeRequest["tiles"]) : { pixels: EXAMPLE_TILES }
      req = { rom: { source: read(args.file) }, console: { width: flags.width!, height: flags.height! }, tiles, meta: { name: args.file.replace(/^.*\//, "").replace(/\.s$/, "") } }
    }
    req = { ...req, ...(flags.frames !== undefined ? { frames: flags.frames } : {}), ...(flags.input !== undefined ? { input: flags.input } : {}) }
    if (!req.frames) req = { ...req, frames: 3 }
    // the engine (WebAssembly, netlist tables) loads only when a cartridge is minted
    const { hasNetlist, netlistCandidates } = await import("../plugin.ts")
    const { makeChipSimulator } = await import("../Simulation.ts")
    const candidates = [...netlistCandidates(process.cwd(), flags.netlist), ...(flags.netlist ? [] : netlistCandidates(ROOT))]
    const dir = candidates.find(hasNetlist)
    if (!dir) this.error(`visual6502 netlist not found in ${[...new Set(candidates)].join(", ")}; run \`platform chip fetch-netlist\``, { exit: 1 })
    const sim = makeChipSimulator(dir)
    let minted
    try {
      minted = await mintCartridge(req, { boot: async (r) => sim.boot(r as never), frames: async (r) => sim.frames(r) })
    } catch (e) {
      if (e instanceof AssembleError) this.error(`line ${e.line}: ${e.message}`, { exit: 1 })
      if (e instanceof CartridgeLayoutError || e instanceof TileFormatError) this.error(e.message, { exit: 1 })
      const err = e as Error & { status?: number }
      if (err.status) this.error(err.message, { exit: 1 })
      throw e
    }
    const doc = minted.document
    const verify = doc.verify as { screen?: string; frames_completed?: number; half_cycles_per_frame?: Array<number> }
    const c = doc.console as { width: number; height: number }
    const screen = Buffer.from(verify.screen ?? "", "hex")
    const chr = parseChr(doc.tiles.chr)
    if (flags.out !== undefined) fs.writeFileSync(flags.out, minted.gzip)
    if (flags.png !== undefined) fs.writeFileSync(flags.png, renderPng(screen, c.width, c.height, chr, flags.scale))
    if (!flags.json) {
      this.log(renderAnsi(screen, c.width, c.height, chr))
      this.log(
        `${doc.meta.name}: ${verify.frames_completed}/${req.frames} frames, half-cycles per frame ${(verify.half_cycles_per_frame ?? []).join(", ")}; ` +
          `${minted.gzip.length} bytes${flags.out ? ` written to ${flags.out}` : ""}${flags.png ? `; screen in ${flags.png}` : ""}`
      )
      for (const n of doc.notes) this.log(`note: ${n}`)
    }
    return { verify: doc.verify, notes: doc.notes, bytes: minted.gzip.length }
  }
}
