/**
 * CLI commands of the `chip-sim` plugin: `platform chip assemble`, `chip run`, `chip cartridge`,
 * `chip fetch-netlist`. The commands load the engine inside `run()`, so listing them loads none.
 */
import { defineCommands } from "../../core/Command.ts"
import ChipAssemble from "./commands/assemble.ts"
import ChipCartridge from "./commands/cartridge.ts"
import ChipFetchNetlist from "./commands/fetch-netlist.ts"
import ChipRun from "./commands/run.ts"

export default defineCommands("chip-sim", {
  "chip assemble": ChipAssemble,
  "chip run": ChipRun,
  "chip cartridge": ChipCartridge,
  "chip fetch-netlist": ChipFetchNetlist
})
