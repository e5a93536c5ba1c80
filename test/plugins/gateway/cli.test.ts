/**
 * `platform gateway pull` (against a loopback file server: no network needed) and
 * `platform gateway chat` (one-shot `--message` against a gateway booted in the kernel).
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform, type RunningPlatform } from "../../../core/Kernel.ts"
import { writeTinyGguf } from "../../../scripts/make-tiny-gguf.ts"
import { sendTurn } from "../../../plugins/gateway/commands/chat.ts"
import { startOpenAIUpstream, type OpenAIUpstream } from "../../fixtures/openai-upstream.ts"
import { runCli } from "../../support/cli.ts"

process.env.PLATFORM_LOG_LEVEL ??= "error"

const run = runCli

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gateway-cli-"))
let files: http.Server
let filesUrl: string
let upstream: OpenAIUpstream
let platform: RunningPlatform

beforeAll(async () => {
  const model = path.join(dir, "served", "tiny.gguf")
  writeTinyGguf(model)
  files = http.createServer((req, res) => {
    if (req.url !== "/models/tiny.gguf") { res.writeHead(404); res.end(); return }
    const data = fs.readFileSync(model)
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": data.length })
    res.end(data)
  })
  await new Promise<void>((r) => files.listen(0, "127.0.0.1", r))
  filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`
  upstream = await startOpenAIUpstream()
  platform = await startPlatform({
    cwd: ROOT,
    yaml: `log: { level: error }\nlisteners:\n  - { name: gateway, port: 0 }\nplugins:\n  gateway:\n    token: cli-token\n    engines:\n      - { id: echo, kind: upstream, url: "${upstream.url}" }\n      - { id: echo-batch, kind: upstream, streaming: false, url: "${upstream.url}" }\n`
  })
})

afterAll(async () => {
  await platform?.stop()
  await upstream?.close()
  files?.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

describe("platform gateway pull", () => {
  it("downloads a GGUF into --dir and reports it (--json)", async () => {
    const out = path.join(dir, "models")
    const r = await run(["gateway", "pull", `${filesUrl}/models/tiny.gguf`, "--dir", out, "--name", "model-linear.gguf", "--json"])
    expect(r.code, r.stderr).toBe(0)
    const result = JSON.parse(r.stdout)
    expect(result.path).toBe(path.join(out, "model-linear.gguf"))
    expect(result.bytes).toBe(fs.statSync(path.join(dir, "served", "tiny.gguf")).size)
  })

  it("fails with one clear line when the URL cannot be fetched", async () => {
    const r = await run(["gateway", "pull", `${filesUrl}/models/absent.gguf`, "--dir", path.join(dir, "m2")])
    expect(r.code).toBe(1)
    expect(r.stderr).toContain("could not download")
  })
})

describe("platform gateway chat", () => {
  it("sends one message and prints the reply as JSON", async () => {
    const r = await run(["gateway", "chat", "--url", platform.url("gateway"), "--message", "hi there", "--json"], { GATEWAY_TOKEN: "cli-token" })
    expect(r.code, r.stderr).toBe(0)
    expect(JSON.parse(r.stdout)).toMatchObject({ content: "echo: hi there", finish_reason: "stop" })
  })

  it("keeps the conversation across interactive turns; /reset starts over", async () => {
    const child = spawn(process.execPath, [path.join(ROOT, "bin/platform.js"), "gateway", "chat", "--url", platform.url("gateway"), "--system", "be nice"], {
      cwd: ROOT,
      env: { ...process.env, GATEWAY_TOKEN: "cli-token" }
    })
    let out = ""
    child.stdout.on("data", (d: Buffer) => { out += d.toString("utf8") })
    const before = upstream.bodies.length
    child.stdin.end("hello there\nmore words\n/reset\nsecond turn\n")
    const code = await new Promise((r) => child.on("exit", r))
    expect(code).toBe(0)
    expect(out).toContain("assistant> echo: hello there")
    expect(out).toContain("assistant> echo: second turn")
    // system + user; then + assistant + user; after /reset system + user again.
    expect(upstream.bodies.slice(before).map((b) => JSON.parse(b).messages.length)).toEqual([2, 4, 2])
  })

  it("streams turns and surfaces gateway errors", async () => {
    const seen: string[] = []
    const turn = await sendTurn(platform.url("gateway"), "cli-token", { model: "echo", stream: true, messages: [{ role: "user", content: "a b" }] }, (t) => seen.push(t))
    expect(turn.content).toBe("echo: a b")
    expect(seen.length).toBeGreaterThan(1)
    await expect(sendTurn(platform.url("gateway"), "wrong", { messages: [{ content: "x" }] })).rejects.toThrow(/HTTP 401/)
    await expect(sendTurn(platform.url("gateway"), "cli-token", { model: "echo-batch", stream: true, messages: [{ content: "x" }] })).rejects.toThrow(/HTTP 400/)
  })
})
