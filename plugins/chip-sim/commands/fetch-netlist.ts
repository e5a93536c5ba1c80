import { Flags } from "@oclif/core"
import * as fs from "node:fs"
import * as path from "node:path"
import { PlatformCommand } from "../../../core/Command.ts"

/** The visual6502 repository's raw files (CC BY-NC-SA 3.0 / MIT; never committed here). */
export const NETLIST_SOURCE = "https://raw.githubusercontent.com/trebonian/visual6502/master"
const FILES = ["segdefs.js", "transdefs.js", "nodenames.js"] as const

/** `platform chip fetch-netlist`: downloads the three netlist files for users with network access. */
export default class ChipFetchNetlist extends PlatformCommand {
  static summary = "Download the visual6502 netlist files (segdefs.js, transdefs.js, nodenames.js)."
  static description = `Fetches the files from ${NETLIST_SOURCE} into --dir (default ./data/netlist, the second place chip-sim looks). They are data under their own licences (CC BY-NC-SA 3.0, MIT) and are never committed to this repository.`
  static examples = ["<%= config.bin %> chip fetch-netlist", "<%= config.bin %> chip fetch-netlist --dir /srv/netlist --json"]
  static flags = {
    dir: Flags.string({ summary: "Destination folder.", default: "./data/netlist" }),
    source: Flags.string({ summary: "Base URL of the raw files.", default: NETLIST_SOURCE })
  }

  async run(): Promise<{ dir: string; files: Array<{ name: string; bytes: number }> }> {
    const { flags } = await this.parse(ChipFetchNetlist)
    const dir = path.resolve(flags.dir)
    fs.mkdirSync(dir, { recursive: true })
    const files: Array<{ name: string; bytes: number }> = []
    for (const name of FILES) {
      const url = `${flags.source}/${name}`
      let res: Response
      try {
        res = await fetch(url, { signal: AbortSignal.timeout(60_000) })
      } catch (e) {
        this.error(`could not reach ${url}: ${(e as Error).message} (no network? copy the files into ${dir} by hand)`, { exit: 1 })
      }
      if (!res.ok) this.error(`${url}: HTTP ${res.status}`, { exit: 1 })
      const body = Buffer.from(await res.arrayBuffer())
      fs.writeFileSync(path.join(dir, name), body)
      files.push({ name, bytes: body.length })
      this.log(`${name}: ${body.length} bytes`)
    }
    this.log(`netlist saved in ${dir}`)
    return { dir, files }
  }
}
