/**
 * The CLI's command table (oclif `explicit` discovery, see package.json): the kernel's commands
 * below plus those the built-in plugins contribute in `plugins/<name>/commands.ts`.
 */
import { collectCommands } from "../core/Command.ts"
import ConfigShow from "./commands/config/show.ts"
import ConfigValidate from "./commands/config/validate.ts"
import PluginsList from "./commands/plugins/list.ts"
import Routes from "./commands/routes.ts"
import SchemasGenerate from "./commands/schemas/generate.ts"
import Serve from "./commands/serve.ts"

export default await collectCommands({
  serve: Serve,
  routes: Routes,
  "config show": ConfigShow,
  "config validate": ConfigValidate,
  "plugins list": PluginsList,
  "schemas generate": SchemasGenerate
})
