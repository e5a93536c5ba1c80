/** CLI commands of the `jobs` plugin: `platform worker`. */
import { defineCommands } from "../../core/Command.ts"
import Worker from "./commands/worker.ts"

export default defineCommands("jobs", { worker: Worker })
