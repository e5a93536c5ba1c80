/**
 * CLI commands of the `job-graph` plugin: `platform graph validate`, `graph ops`,
 * `graph templates`. Each inspects the configured platform (nothing is served). `platform research`:
 * the terminal research client, a client of a running Jobs API over HTTP.
 */
import { defineCommands } from "../../core/Command.ts"
import GraphOps from "./commands/ops.ts"
import Research from "./commands/research.ts"
import GraphTemplates from "./commands/templates.ts"
import GraphValidate from "./commands/validate.ts"

export default defineCommands("job-graph", {
  "graph validate": GraphValidate,
  "graph ops": GraphOps,
  "graph templates": GraphTemplates,
  research: Research
})
