/**
 * The text plugin in the real kernel: booted from a platform.yaml beside `jobs`, it registers its
 * five graph operations with their categories and types, and an operation taken from the
 * kernel's registry works on a page. A tesseract path that does not exist still boots (ocr then
 * fails at run time naming the package).
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../core/Kernel.ts"
import { platformYaml, tempDir } from "../jobs/support.ts"
import { expectJobFailure, jobContexts } from "../jobs/net/jobContext.ts"

let platform: Awaited<ReturnType<typeof startPlatform>>
const contexts = jobContexts()

beforeAll(async () => {
  platform = await startPlatform({ cwd: ROOT, yaml: platformYaml({ backend: "embedded", dataDir: tempDir(), extra: "  text:\n    tesseract_path: /nonexistent/bin/tesseract\n" }) })
})
afterAll(async () => {
  contexts.cleanup()
  await platform?.stop()
})

describe("text plugin in the kernel", () => {
  it("boots (without tesseract) and registers its graph operations with their types", () => {
    const p = platform.kernel.plugins.find((x) => x.name === "text")!
    expect(p.status).toBe("running")
    expect(p.dependsOn).toEqual(["jobs"])
    const types = Object.fromEntries(p.contributions.graphOps.map((n) => {
      const e = platform.kernel.graphOps.entry(n)!
      return [n, [e.plugin, e.value.category, e.value.inputTypes, e.value.outputType]]
    }))
    expect(types).toEqual({
      to_markdown: ["text", "transform", ["html"], "markdown"],
      to_text: ["text", "transform", ["html"], "text"],
      to_text_batch: ["text", "transform", ["html[]"], "text[]"],
      quality_filter: ["text", "filter", ["text[]"], "text[]"],
      ocr: ["text", "process", ["screenshot[]", "image[]", "url[]"], "text[]"]
    })
  })

  it("the registered operations run: to_markdown on a page, ocr failing with the package to install", async () => {
    const toMarkdown = platform.kernel.graphOps.get("to_markdown")!
    const md = await toMarkdown.handler(Schema.decodeUnknownSync(toMarkdown.params)({}), Schema.decodeUnknownSync(toMarkdown.input)({
      url: "http://x.example/a", final_url: "http://x.example/a/", status: 200, content_type: "text/html",
      html: "<html><head><title>Tides</title></head><body><nav><a href='/'>Home</a></nav><article><h1>Tides</h1><h2>Springs and neaps</h2><p>Spring tides follow the <a href='moon'>new moon</a> by a day or two; neap tides come a week later when the pull of the sun and moon partly cancel.</p></article></body></html>"
    }), contexts.make())
    expect(md.text).toBe("# Tides\n\n## Springs and neaps\n\nSpring tides follow the [new moon](http://x.example/a/moon) by a day or two; neap tides come a week later when the pull of the sun and moon partly cancel.")
    const ocr = platform.kernel.graphOps.get("ocr")!
    const images = createServer((_req, res) => res.writeHead(200, { "content-type": "image/png" }).end(Buffer.from("89504e470d0a1a0a", "hex")))
    await new Promise<void>((r) => images.listen(0, "127.0.0.1", r))
    try {
      const url = `http://127.0.0.1:${(images.address() as AddressInfo).port}/scan.png`
      const f = await expectJobFailure(ocr.handler(Schema.decodeUnknownSync(ocr.params)({}), Schema.decodeUnknownSync(ocr.input)([url]), contexts.make()))
      expect(f.kind).toBe("INTERNAL_ERROR")
      expect(f.message).toBe('ocr: tesseract is not installed (no "/nonexistent/bin/tesseract" executable): install Debian\'s tesseract-ocr and tesseract-ocr-eng (apt-get install tesseract-ocr tesseract-ocr-eng; scripts/setup.sh does)')
    } finally {
      await new Promise((r) => images.close(r))
    }
  })
})
