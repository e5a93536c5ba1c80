import { Args, Flags } from "@oclif/core"
import * as fs from "node:fs"
import * as path from "node:path"
import { PlatformCommand } from "../../../core/Command.ts"

/**
 * `platform gateway pull URL`: downloads a GGUF model with node-llama-cpp's downloader (resumable,
 * multi-part files joined), for users with network access. Point an engine's `model_path` (or
 * `GATEWAY_MODEL`) at the file afterwards.
 */
export default class GatewayPull extends PlatformCommand {
  static summary = "Download a GGUF model for the gateway's llama-cpp engines."
  static description = "URL is an http(s) URL of a .gguf file or a Hugging Face URI (hf:<user>/<repo>/<file>.gguf or hf:<user>/<repo>:<quant>). The file lands in --dir; an interrupted download resumes. The default platform.yaml looks for ./data/models/model-linear.gguf (override with GATEWAY_MODEL)."
  static examples = [
    "<%= config.bin %> gateway pull hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf --name model-linear.gguf",
    "<%= config.bin %> gateway pull https://example.org/models/tiny.gguf --dir /srv/models --json"
  ]
  static args = {
    url: Args.string({ required: true, description: "URL or hf: URI of the GGUF file" })
  }
  static flags = {
    dir: Flags.string({ summary: "Destination folder.", default: "./data/models" }),
    name: Flags.string({ summary: "File name to save as (default: the remote file name)." }),
    token: Flags.string({ summary: "Hugging Face token for gated models.", env: "HF_TOKEN" }),
    overwrite: Flags.boolean({ summary: "Download again even if the file exists.", default: false })
  }

  async run(): Promise<{ path: string; bytes: number }> {
    const { args, flags } = await this.parse(GatewayPull)
    const dir = path.resolve(flags.dir)
    fs.mkdirSync(dir, { recursive: true })
    // Imported here: the native binding is only needed by this command, not by the whole CLI.
    const { createModelDownloader } = await import("node-llama-cpp")
    let file: string
    try {
      const downloader = await createModelDownloader({
        modelUri: args.url,
        dirPath: dir,
        ...(flags.name ? { fileName: flags.name } : {}),
        ...(flags.token ? { tokens: { huggingFace: flags.token } } : {}),
        skipExisting: !flags.overwrite,
        deleteTempFileOnCancel: false,
        showCliProgress: !this.jsonEnabled() && process.stderr.isTTY === true
      })
      file = await downloader.download()
    } catch (e) {
      this.error(`could not download ${args.url}: ${(e as Error).message} (no network? copy a .gguf file into ${dir} by hand)`, { exit: 1 })
    }
    const bytes = fs.statSync(file).size
    this.log(`saved ${file} (${(bytes / 1e6).toFixed(1)} MB)`)
    return { path: file, bytes }
  }
}
