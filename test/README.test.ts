import * as fs from "node:fs"
import * as path from "node:path"
import { expect, it } from "vitest"
import { ROOT, startPlatform } from "../core/Kernel.ts"

process.env.PLATFORM_LOG_LEVEL ??= "error"

it("the README's plugin example boots and serves as written", async () => {
  const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8")
  const code = /```ts\n\/\/ my-plugins\/greeter\/plugin\.ts\n([\s\S]*?)```/.exec(readme)?.[1]
  const yaml = /```yaml\n(plugins:\n  greeter:[\s\S]*?)```/.exec(readme)?.[1]
  expect(code).toBeDefined()
  expect(yaml).toBeDefined()
  // Inside the package, so `platform/core/...` resolves through package.json "exports".
  const dir = path.join(ROOT, "test/.generated/my-plugins/greeter")
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, "plugin.ts"), code!)
  const p = await startPlatform({
    cwd: path.join(ROOT, "test/.generated"),
    yaml: `listeners:\n  - { name: main, port: 0 }\n${yaml}`
  })
  try {
    const greet = (name: string, body: unknown) =>
      fetch(`${p.url("main")}/greet/${name}`, { method: "POST", body: JSON.stringify(body) })
    const ok = await greet("ann", { times: 2 })
    expect(await ok.json()).toEqual({ text: "bonjour ann bonjour ann" })
    expect((await greet("nobody", { times: 1 })).status).toBe(404)
    expect((await greet("ann", { times: 0 })).status).toBe(422)
  } finally {
    await p.stop()
  }
})
