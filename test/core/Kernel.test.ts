import { describe, expect, it } from "vitest"
import { ConfigErrors, parseConfig } from "../../core/Config.ts"
import { BootError, ROOT, startPlatform } from "../../core/Kernel.ts"
import { DuplicateContribution } from "../../core/Registry.ts"

process.env.PLATFORM_LOG_LEVEL ??= "error"

const F = "./test/fixtures/plugins"
const head = `listeners:
  - name: main
    port: 0
plugins:
`
const boot = (plugins: string) => startPlatform({ cwd: ROOT, yaml: head + plugins })

const failure = async (p: Promise<unknown>): Promise<Error> => {
  try {
    const r = await p
    if (r && typeof (r as { stop?: unknown }).stop === "function") await (r as { stop(): Promise<void> }).stop()
  } catch (e) {
    return e as Error
  }
  throw new Error("expected boot to fail")
}

describe("platform.yaml errors", () => {
  it("names file, line, column and path of a plugin config error", async () => {
    const yaml = `# gateway-like engines
listeners:
  - name: main
    port: 0
plugins:
  engines:
    module: ${F}/engines
    engines:
      - id: a
        kind: llama-cpp
      - id: b
        kind: gpu
`
    const e = await failure(startPlatform({ cwd: ROOT, yaml }))
    expect(e).toBeInstanceOf(ConfigErrors)
    expect(e.message).toBe(`platform.yaml:12:15 plugins.engines.engines[1].kind: expected "llama-cpp" | "upstream", actual "gpu"`)
  })

  it("locates kernel-level errors and YAML syntax errors", () => {
    expect(() => parseConfig("/x/platform.yaml", "listeners:\n  - name: main\n    port: high\n", {})).toThrow(
      /^platform\.yaml:3:11 listeners\[0\]\.port: expected/
    )
    expect(() => parseConfig("/x/platform.yaml", "listeners:\n  - name: main\n     port: 1\n  bad: [\n", {})).toThrow(/^platform\.yaml:\d+:\d+ invalid YAML/)
    expect(() => parseConfig("/x/platform.yaml", "listeners: []\nlistenrs: []\n", {})).toThrow(/^platform\.yaml:2:1 listenrs: is unexpected/)
  })

  it("interpolates ${VAR} and ${VAR:-default}, typed when unquoted", () => {
    const text = `data_dir: "\${DATA:-/var/lib/platform}"
listeners:
  - name: main
    host: \${HOST}
    port: \${PORT:-9004}
`
    const loaded = parseConfig("/x/platform.yaml", text, { HOST: "0.0.0.0" })
    expect(loaded.config.listeners[0]).toMatchObject({ name: "main", host: "0.0.0.0", port: 9004 })
    expect(loaded.config.data_dir).toBe("/var/lib/platform")
    expect(() => parseConfig("/x/platform.yaml", text, {})).toThrow(/platform\.yaml:4:11 environment variable HOST is not set/)
  })

  it("refuses a plugin on an undeclared listener, naming it", async () => {
    const e = await failure(boot(`  route-a:\n    module: ${F}/route-a\n    listener: nowhere\n`))
    expect(e.message).toMatch(/^platform\.yaml:7:15 plugins\.route-a\.listener: plugin route-a: listener "nowhere" is not declared/)
  })
})

describe("contributions", () => {
  it("refuses two routes with the same method and path on one listener, naming both plugins", async () => {
    const e = await failure(boot(`  route-a:\n    module: ${F}/route-a\n  route-b:\n    module: ${F}/route-b\n`))
    expect(e).toBeInstanceOf(DuplicateContribution)
    expect(e.message).toBe(`duplicate route on listener main "GET /shared": contributed by plugin "route-a" and plugin "route-b"`)
  })

  it("allows the same path on two listeners", async () => {
    const p = await startPlatform({
      cwd: ROOT,
      yaml: `listeners:\n  - { name: main, port: 0 }\n  - { name: other, port: 0 }\nplugins:\n  route-a:\n    module: ${F}/route-a\n  route-b:\n    module: ${F}/route-b\n    listener: other\n`
    })
    try {
      expect(await (await fetch(`${p.url("main")}/shared`)).json()).toEqual({ plugin: "route-a", greeting: "hello" })
      expect(await (await fetch(`${p.url("other")}/shared`)).json()).toEqual({ plugin: "route-b", greeting: "hello" })
    } finally {
      await p.stop()
    }
  })

  it("refuses duplicate job type ids, naming both plugins", async () => {
    const e = await failure(boot(`  jobs-a:\n    module: ${F}/jobs-a\n  jobs-b:\n    module: ${F}/jobs-b\n`))
    expect(e).toBeInstanceOf(DuplicateContribution)
    expect(e.message).toBe(`duplicate job type "dup": contributed by plugin "jobs-a" and plugin "jobs-b"`)
  })

  it("refuses a missing dependsOn and a cycle", async () => {
    const missing = await failure(boot(`  needs-absent:\n    module: ${F}/needs-absent\n`))
    expect(missing).toBeInstanceOf(BootError)
    expect(missing.message).toBe(`plugin needs-absent: depends on plugin "absent", which is not configured (add plugins.absent to platform.yaml)`)
    const disabled = await failure(boot(`  needs-absent:\n    module: ${F}/needs-absent\n  absent:\n    enabled: false\n`))
    expect(disabled.message).toMatch(/depends on plugin "absent", which is disabled/)
    const cycle = await failure(boot(`  cycle-x:\n    module: ${F}/cycle-x\n  cycle-y:\n    module: ${F}/cycle-y\n`))
    expect(cycle.message).toBe("dependency cycle between plugins: cycle-x -> cycle-y -> cycle-x")
  })

  it("loads an external plugin by module path; it contributes a route and gets its config", async () => {
    const p = await boot(`  route-b:\n    module: ${F}/route-b/plugin.ts\n    greeting: bonjour\n`)
    try {
      const res = await fetch(`${p.url("main")}/shared`)
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({ plugin: "route-b", greeting: "bonjour" })
      const openapi: any = await (await fetch(`${p.url("main")}/openapi.json`)).json()
      expect(openapi.paths["/shared"].get.summary).toBe("greeting of route-b")
      expect(p.kernel.plugins[0]).toMatchObject({ name: "route-b", status: "running", source: `${F}/route-b/plugin.ts` })
    } finally {
      await p.stop()
    }
  })

  it("keeps serving when a plugin is unavailable; dependents are unavailable too", async () => {
    const p = await boot(`  down:\n    module: ${F}/down\n  after-down:\n    module: ${F}/after-down\n  route-a:\n    module: ${F}/route-a\n`)
    try {
      expect(p.kernel.plugins.map((x) => [x.name, x.status, x.reason])).toEqual([
        ["down", "unavailable", "fixture data file /nope is missing"],
        ["after-down", "unavailable", "depends on plugin down, which is unavailable"],
        ["route-a", "running", undefined]
      ])
      expect((await fetch(`${p.url("main")}/shared`)).status).toBe(200)
      expect((await fetch(`${p.url("main")}/down`)).status).toBe(404)
    } finally {
      await p.stop()
    }
  })

  it("lets an in-flight request finish on shutdown", async () => {
    const p = await boot(`  route-a:\n    module: ${F}/route-a\n`)
    const slow = fetch(`${p.url("main")}/route-a/slow`)
    await new Promise((r) => setTimeout(r, 100))
    const stopping = p.stop()
    const res = await slow
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ slow: true })
    await stopping
    await expect(fetch(`${p.url("main")}/shared`)).rejects.toThrow()
  })
})

describe("MCP tools", () => {
  it("serves contributed tools at /api/mcp (stateless Streamable HTTP); GET is 405", async () => {
    const p = await boot(`  adder:\n    module: ${F}/adder\n`)
    const rpc = async (method: string, params: unknown, id = 1) => {
      const res = await fetch(`${p.url("main")}/api/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id, method, params })
      })
      expect(res.status).toBe(200)
      expect(res.headers.get("mcp-session-id")).toBeNull()
      return (await res.json() as any).result
    }
    try {
      const init = await rpc("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "test", version: "1" } })
      expect(init.capabilities.tools).toBeDefined()
      const list = await rpc("tools/list", {})
      expect(list.tools).toEqual([expect.objectContaining({ name: "add", inputSchema: expect.objectContaining({ type: "object", required: ["a", "b"] }) })])
      const call = await rpc("tools/call", { name: "add", arguments: { a: 2, b: 3 } })
      expect(call).toMatchObject({ content: [{ type: "text", text: "5" }], structuredContent: { sum: 5 } })
      const bad = await rpc("tools/call", { name: "add", arguments: { a: "x" } })
      expect(bad.isError).toBe(true)
      expect(bad.content[0].text).toMatch(/invalid arguments for add/)
      expect((await fetch(`${p.url("main")}/api/mcp`)).status).toBe(405)
    } finally {
      await p.stop()
    }
  })
})

describe("fast pre-handlers", () => {
  it("answer on the raw path, or hand the request on with its body replayed", async () => {
    const p = await boot(`  echo:\n    module: ${F}/echo\n`)
    const post = (body: string) => fetch(`${p.url("main")}/echo/echo/42`, { method: "POST", headers: { "content-type": "application/json" }, body })
    try {
      const fast = await post(JSON.stringify({ fast: true, text: "a" }))
      expect(fast.status).toBe(203)
      expect(await fast.json()).toEqual({ via: "fast", id: "42" })
      const big = "x".repeat(300_000)
      const slow = await post(JSON.stringify({ fast: false, text: big }))
      expect(slow.status).toBe(200)
      expect(await slow.json()).toEqual({ via: "effect", id: "42", text: big })
      const invalid = await post("{oops")
      expect(invalid.status).toBe(400)
      const schema = await post(JSON.stringify({ fast: false }))
      expect(schema.status).toBe(422)
    } finally {
      await p.stop()
    }
  })
})

describe("response schemas", () => {
  it("encode every JSON answer through the Schema declared for its status; a mismatch is a 500", async () => {
    const p = await boot(`  contract:\n    module: ${F}/contract\n`)
    const get = (path: string, init?: RequestInit) => fetch(`${p.url("main")}${path}`, init)
    try {
      const good = await get("/good")
      expect([good.status, await good.json()]).toEqual([200, { n: 1, extra: "kept" }])
      const bad = await get("/bad")
      expect([bad.status, await bad.json()]).toEqual([500, { error: "internal error" }])
      const created = await get("/created")
      expect([created.status, created.headers.get("x-made"), await created.json()]).toEqual([201, "yes", { n: 2 }])
      const raw = await get("/raw/7", { method: "POST", body: "{}" })
      expect([raw.status, await raw.json()]).toEqual([200, { n: 7 }])
      const rawNotJson = await get("/raw/8", { method: "POST", body: "oops" })
      expect([rawNotJson.status, await rawNotJson.json()]).toEqual([201, { n: 8 }])
      const rawBad = await get("/raw-bad", { method: "POST", body: "{}" })
      expect([rawBad.status, await rawBad.json()]).toEqual([500, { error: "internal error" }])
    } finally {
      await p.stop()
    }
  })
})
