import * as fs from "node:fs"
import * as path from "node:path"
import { expect, it } from "vitest"
import { ROOT, startPlatform } from "../core/Kernel.ts"

process.env.PLATFORM_LOG_LEVEL ??= "error"

it("the README's plugin walk-through boots and serves as written: route, job type, graph operation, MCP tool", async () => {
  const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8")
  const code = /```ts\n\/\/ my-plugins\/greeter\/plugin\.ts\n([\s\S]*?)```/.exec(readme)?.[1]
  const yaml = /```yaml\n(plugins:\n  jobs:\n[\s\S]*?  greeter:[\s\S]*?)```/.exec(readme)?.[1]
  expect(code).toBeDefined()
  expect(yaml).toBeDefined()
  // Inside the package, so `platform/core/...` resolves through package.json "exports".
  const generated = path.join(ROOT, "test/.generated")
  const dir = path.join(generated, "my-plugins/greeter")
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, "plugin.ts"), code!)
  const data = fs.mkdtempSync(path.join(generated, "data-"))
  const p = await startPlatform({
    cwd: generated,
    yaml: `data_dir: ${data}\nlisteners:\n  - { name: main, port: 0 }\n${yaml}`
  })
  try {
    const base = p.url("main")
    // 1. The route.
    const greet = (name: string, body: unknown) => fetch(`${base}/greet/${name}`, { method: "POST", body: JSON.stringify(body) })
    const ok = await greet("ann", { times: 2 })
    expect(await ok.json()).toEqual({ text: "bonjour ann bonjour ann" })
    expect((await greet("nobody", { times: 1 })).status).toBe(404)
    expect((await greet("ann", { times: 0 })).status).toBe(422)
    // 2. The job type, through the jobs plugin's API.
    const submitted = await fetch(`${base}/api/v1/jobs/greet`, { method: "POST", body: JSON.stringify({ name: "bob" }) })
    expect(submitted.status).toBe(202)
    const { job_id } = await submitted.json() as { job_id: string }
    let job: { status: string; result?: unknown } = { status: "PENDING" }
    for (let i = 0; i < 200 && job.status !== "COMPLETED" && job.status !== "FAILED"; i++) {
      await new Promise((r) => setTimeout(r, 25))
      job = await (await fetch(`${base}/api/v1/jobs/${job_id}`)).json() as typeof job
    }
    expect(job).toMatchObject({ status: "COMPLETED", result: { text: "bonjour bob" } })
    // 3. The graph operation, from the kernel's registry.
    const op = p.kernel.graphOps.entry("greet")!
    expect(op.plugin).toBe("greeter")
    expect(await op.value.handler({}, ["cy", "di"], { signal: new AbortController().signal, files: { put: async () => ({ id: "", url: "" }) }, progress: async () => {}, limits: { fetchTimeoutMs: 30_000, embedBatchSize: 32, maxParallel: 10 } }))
      .toEqual([{ text: "bonjour cy" }, { text: "bonjour di" }])
    // 4. The MCP tool.
    const call = await fetch(`${base}/api/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "greet", arguments: { name: "eve" } } })
    })
    expect((await call.json() as any).result.content).toEqual([{ type: "text", text: "bonjour eve" }])
    expect(p.kernel.plugins.find((x) => x.name === "greeter")?.contributions).toMatchObject({ routes: 1, jobTypes: ["greet"], graphOps: ["greet"], mcpTools: ["greet"] })
  } finally {
    await p.stop()
  }
})
