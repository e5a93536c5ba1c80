import { PlatformCommand } from "../../Base.ts"

/** `platform schemas generate`: rewrites `schemas/` and the config reference in README.md. */
export default class SchemasGenerate extends PlatformCommand {
  static summary = "Generate JSON Schemas and TypeScript declarations of every config and public resource."
  static description = "Writes schemas/platform/* and schemas/<plugin>/{config,<Resource>}.{json,d.ts} from the Effect Schemas, and the config reference section of README.md. A test fails when the committed files drift from the code."
  static examples = ["<%= config.bin %> schemas generate", "<%= config.bin %> schemas generate --json"]

  async run(): Promise<{ written: Array<string>; removed: Array<string>; errors: Array<string> }> {
    await this.parse(SchemasGenerate)
    const { writeSchemas } = await import("../../../core/Schemas.ts")
    const result = await writeSchemas()
    for (const f of result.written) this.log(`wrote ${f}`)
    for (const f of result.removed) this.log(`removed ${f}`)
    if (result.errors.length) this.error(`some schemas could not be generated:\n${result.errors.join("\n")}`, { exit: 1 })
    return result
  }
}
