import * as fs from "node:fs"
import * as path from "node:path"
import { Args, Flags } from "@oclif/core"
import { ApiFailure, ApiUnreachable } from "../../../core/ApiClient.ts"
import { PlatformCommand, table } from "../../../core/Command.ts"
import { apiFlag, getJob } from "./JobsApi.ts"

/** One downloaded file: its store key (`<id>/<name>`), where it came from and where it went. */
interface Downloaded {
  readonly key: string
  readonly url: string
  readonly path: string
  readonly bytes: number
}

/** `platform jobs files ID`: downloads the files a job stored (the job's `files` keys, from GET /files/<key>). */
export default class JobsFiles extends PlatformCommand {
  static summary = "Download the files a job stored (its artifacts) into a folder."
  static description = "Reads the job's `files` (store keys `<id>/<name>`) and downloads each from the API's GET /files/<id>/<name> into --out (default: the current folder) as <name>; a name already taken gets its id as a prefix."
  static examples = ["<%= config.bin %> jobs files job_01jd6f8r2k0000000000000000", "<%= config.bin %> jobs files job_01jd6f8r2k0000000000000000 --out ./artifacts --json"]
  static args = { id: Args.string({ description: "Job id (job_...).", required: true }) }
  static flags = { "api-url": apiFlag, out: Flags.string({ char: "o", summary: "Folder to write the files into (created if missing).", default: "." }) }

  async run(): Promise<Array<Downloaded>> {
    const { args, flags } = await this.parse(JobsFiles)
    const base = flags["api-url"].replace(/\/+$/, "")
    try {
      const job = await getJob(base, args.id)
      const keys = job.files ?? []
      if (keys.length === 0 && !this.jsonEnabled()) this.log(`${job.job_id} (${job.status}) stored no files`)
      fs.mkdirSync(flags.out, { recursive: true })
      const out: Array<Downloaded> = []
      for (const key of keys) {
        const url = `${base}/files/${key.split("/").map(encodeURIComponent).join("/")}`
        let res: Response
        try {
          res = await fetch(url)
        } catch (e) {
          throw new ApiUnreachable(base, (e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message)
        }
        if (!res.ok) throw new ApiFailure(res.status, await res.json().catch(() => res.statusText), `GET /files/${key}`)
        const name = path.basename(key)
        const taken = out.some((d) => path.basename(d.path) === name)
        const file = path.join(flags.out, taken ? key.replace("/", "-") : name)
        const bytes = new Uint8Array(await res.arrayBuffer())
        fs.writeFileSync(file, bytes)
        out.push({ key, url, path: file, bytes: bytes.byteLength })
      }
      if (out.length) this.log(table(["FILE", "BYTES", "FROM"], out.map((d) => [d.path, d.bytes, d.url])))
      return out
    } catch (e) {
      this.fail(e)
    }
  }
}
