/**
 * CLI commands of the `jobs` plugin: `platform worker` (runs workers of this platform) and
 * `platform jobs list|get|submit|cancel|watch|files`, which manage a running platform over its
 * Jobs API (HTTP only) and start without loading the platform.
 */
import { defineCommands } from "../../core/Command.ts"
import JobsCancel from "./commands/cancel.ts"
import JobsFiles from "./commands/files.ts"
import JobsGet from "./commands/get.ts"
import JobsList from "./commands/list.ts"
import JobsSubmit from "./commands/submit.ts"
import JobsWatch from "./commands/watch.ts"
import Worker from "./commands/worker.ts"

export default defineCommands("jobs", {
  worker: Worker,
  "jobs list": JobsList,
  "jobs get": JobsGet,
  "jobs submit": JobsSubmit,
  "jobs cancel": JobsCancel,
  "jobs watch": JobsWatch,
  "jobs files": JobsFiles
})
