import { callApi, apiUrlFlag } from "../../../core/ApiClient.ts"
import { PlatformCommand, table } from "../../../core/Command.ts"

/** The gateway's public Status document (`GET /status`). */
interface Status {
  readonly ok: boolean
  readonly models: ReadonlyArray<{ readonly id: string; readonly engine: string; readonly available: boolean }>
}

/** `platform gateway status`: the gateway's /status as a table; exit 1 when its default engine does not serve. */
export default class GatewayStatus extends PlatformCommand {
  static summary = "Show the inference gateway's status: each model, its engine and whether it serves (GET /status)."
  static description = "Exits 1 when the gateway is unreachable or its default model is unavailable (`ok: false`). --json prints the /status document."
  static examples = ["<%= config.bin %> gateway status", "<%= config.bin %> gateway status --api-url http://127.0.0.1:9001 --json"]
  static flags = { "api-url": apiUrlFlag("GATEWAY_API_URL", "http://127.0.0.1:9001") }

  async run(): Promise<Status> {
    const { flags } = await this.parse(GatewayStatus)
    try {
      const { body: status } = await callApi<Status>(flags["api-url"], "GET", "/status")
      this.log(table(["MODEL", "ENGINE", "AVAILABLE"], status.models.map((m) => [m.id, m.engine, m.available ? "yes" : "no"])))
      this.log(`gateway ${status.ok ? "ok" : "not ok: the default model is unavailable"}`)
      if (!status.ok) process.exitCode = 1
      return status
    } catch (e) {
      this.fail(e)
    }
  }
}
