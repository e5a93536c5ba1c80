import { Args, Flags } from "@oclif/core"
import * as fs from "node:fs"
import { AssembleError } from "../assembler/AssembleError.ts"
import { assemble, toAssembleResponse, type AssembleResponse } from "../assembler/Assembler.ts"
import { PlatformCommand } from "../../../core/Command.ts"

const hex = (n: number, w: number) => n.toString(16).padStart(w, "0")

/** `platform chip assemble FILE`: assembles 6502 source and prints the listing (or writes the image). */
export default class ChipAssemble extends PlatformCommand {
  static summary = "Assemble a 6502 source file and print its listing."
  static description = "Same assembler as POST /api/v1/assemble: every documented NMOS 6502 instruction and addressing mode, labels, .org/.byte/.word, < and > operators. An error names the line and exits 1."
  static examples = [
    "<%= config.bin %> chip assemble prog.s",
    "<%= config.bin %> chip assemble prog.s --org 0x0600 --out prog.bin",
    "<%= config.bin %> chip assemble prog.s --json"
  ]
  static args = { file: Args.string({ description: "6502 assembly source", required: true }) }
  static flags = {
    org: Flags.string({ summary: "Load address when the source has no .org (decimal, 0x.. or $..).", default: "0x0200" }),
    out: Flags.string({ summary: "Write the binary image to this file." })
  }

  async run(): Promise<AssembleResponse> {
    const { args, flags } = await this.parse(ChipAssemble)
    const org = Number(flags.org.replace(/^\$/, "0x"))
    if (!Number.isInteger(org) || org < 0 || org > 0xffff) this.error(`--org must be 0 to 65535, got ${flags.org}`, { exit: 2 })
    let source: string
    try {
      source = fs.readFileSync(args.file, "utf8")
    } catch (e) {
      this.error(`cannot read ${args.file}: ${(e as Error).message}`, { exit: 2 })
    }
    try {
      const result = assemble(source, org)
      if (flags.out) fs.writeFileSync(flags.out, result.image)
      for (const l of result.listing) {
        this.log(`${String(l.n).padStart(4)}  ${l.addr === null ? "    " : hex(l.addr, 4)}  ${(l.bytes ?? "").replace(/(..)(?=.)/g, "$1 ").padEnd(9).slice(0, 9)}  ${l.text}`)
      }
      this.log(`\n${result.size} bytes, $${hex(result.org, 4)}-$${hex(Math.max(result.end, result.org), 4)}${flags.out ? `, written to ${flags.out}` : ""}`)
      return toAssembleResponse(result)
    } catch (e) {
      if (e instanceof AssembleError) this.error(`${args.file}:${e.message}`, { exit: 1 })
      throw e
    }
  }
}
