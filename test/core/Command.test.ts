import * as path from "node:path"
import { Command } from "@oclif/core"
import { describe, expect, it } from "vitest"
import { collectCommands } from "../../core/Command.ts"
import { ROOT } from "../../core/Kernel.ts"
import { DuplicateContribution } from "../../core/Registry.ts"
import cliCommands from "../../cli/index.ts"

class Kernel extends Command {
  async run() {}
}

describe("CLI command registry", () => {
  it("holds the kernel's commands and those the built-in plugins contribute, by oclif id", () => {
    expect(Object.keys(cliCommands)).toEqual(expect.arrayContaining(["serve", "routes", "config:validate", "plugins:list", "worker", "gateway:pull", "gateway:chat"]))
  })

  it("refuses two contributors of one command id, naming both", async () => {
    const dir = path.join(ROOT, "test/fixtures/commands")
    await expect(collectCommands({ serve: Kernel }, path.join(dir))).rejects.toThrow(
      new DuplicateContribution({ kind: "CLI command", id: "shared", first: "one", second: "two" }).message
    )
    const one = await collectCommands({ "one hello": Kernel }, dir).catch((e) => e)
    expect(one).toBeInstanceOf(DuplicateContribution)
    expect(one.message).toBe(`duplicate CLI command "one:hello": contributed by plugin "kernel" and plugin "one"`)
  })
})
