/**
 * The registry plugin in the kernel: it is in the default platform.yaml on listener `chip`
 * beside chip-sim, its routes carry an OpenAPI description (request bodies, bearer security),
 * and an unreachable PostgreSQL leaves it unavailable with the reason while the rest serves.
 */
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { inspect, ROOT, startPlatform } from "../../../core/Kernel.ts"
import { tempDir } from "./support.ts"

process.env.PLATFORM_LOG_LEVEL ??= "error"

describe("registry plugin", () => {
  it("is configured in the default platform.yaml on listener chip, beside chip-sim", async () => {
    process.env.PLATFORM_DATA_DIR = tempDir()
    try {
      const kernel = await inspect({ file: path.join(ROOT, "platform.yaml") })
      expect(kernel.plugins.find((p) => p.name === "registry")).toMatchObject({ status: "running", listener: "chip", details: { store: "embedded" } })
      const chip = kernel.routes.get("chip")!.filter((r) => r.plugin === "registry").map((r) => `${r.route.method} ${r.route.path}`)
      expect(chip).toContain("GET /api/v1/registry")
      expect(chip).toContain("GET /api/v1/registry/roms")
      expect(chip).toContain("POST /api/v1/registry/claim")
      expect(chip).toContain("GET /api/v1/registry/b/:handle/roms/:slug/cover")
    } finally {
      delete process.env.PLATFORM_DATA_DIR
    }
  }, 60_000)

  it("documents its writes in the listener's OpenAPI document", async () => {
    const platform = await startPlatform({ cwd: tempDir(), yaml: "listeners:\n  - { name: chip, port: 0 }\nplugins:\n  registry: {}\n" })
    try {
      const doc: any = await (await fetch(`${platform.url("chip")}/openapi.json`)).json()
      const publish = doc.paths["/api/v1/registry/b/{handle}/roms"].post
      expect(publish.security).toEqual([{ bearer: [] }])
      expect(Object.keys(publish.requestBody.content["application/json"].schema.properties)).toEqual(["slug", "cartridge", "cover"])
      expect(Object.keys(publish.responses)).toEqual(expect.arrayContaining(["201", "401", "413", "422", "429"]))
      expect(doc.paths["/api/v1/registry/roms"].get.parameters.map((p: any) => p.name)).toEqual(["limit", "offset", "art", "handle", "since"])
    } finally {
      await platform.stop()
    }
  }, 60_000)

  it("is unavailable, saying why, when its PostgreSQL cannot be reached; the platform still serves", async () => {
    const platform = await startPlatform({
      cwd: tempDir(),
      yaml: "listeners:\n  - { name: chip, port: 0 }\nplugins:\n  registry:\n    store: postgres\n    postgres: { url: \"postgres://postgres@127.0.0.1:1/none\" }\n"
    })
    try {
      const status = platform.kernel.plugins.find((p) => p.name === "registry")!
      expect(status.status).toBe("unavailable")
      expect(status.reason).toMatch(/registry store \(PostgreSQL postgres:\/\/\*\*\*@127\.0\.0\.1:1\/none\) could not be opened/)
      expect((await fetch(`${platform.url("chip")}/api/v1/registry`)).status).toBe(404)
    } finally {
      await platform.stop()
    }
  }, 60_000)
})
