/**
 * `platform cluster health|devices` and `platform cluster banks list|create|delete|idle|resume`:
 * clients of a running Cluster API (`--api-url`, env CLUSTER_API_URL; the admin token for
 * mutating routes beyond loopback from `--token`, env CLUSTER_ADMIN_TOKEN). `--json` prints what
 * the API answered; an API refusal is one line (`409 workers_busy: ...`) and exit 1, as is an API
 * that does not answer.
 */
import { Args, Flags } from "@oclif/core"
import { PlatformCommand, table } from "../../../core/Command.ts"

const flags = {
  "api-url": Flags.string({ summary: "Base URL of the Cluster API (env CLUSTER_API_URL).", env: "CLUSTER_API_URL", default: "http://127.0.0.1:9002" }),
  token: Flags.string({ summary: "Admin bearer token, needed beyond loopback for changes (env CLUSTER_ADMIN_TOKEN).", env: "CLUSTER_ADMIN_TOKEN" })
}

/** Calls `method /api/v1{p}`; answers the JSON body of a 2xx, else fails `command` with the API's error. */
const callApi = async (command: PlatformCommand, f: { "api-url": string; token?: string | undefined }, method: string, p: string, body?: unknown): Promise<any> => {
  const base = f["api-url"].replace(/\/+$/, "")
  let r: Response
  try {
    r = await fetch(`${base}/api/v1${p}`, {
      method,
      headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...(f.token ? { authorization: `Bearer ${f.token}` } : {}) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
  } catch (e) {
    return command.error(`cannot reach the Cluster API at ${base} (${(e as { cause?: Error }).cause?.message ?? (e as Error).message}); start \`platform serve\` or pass --api-url`, { exit: 1 })
  }
  const text = await r.text()
  let parsed: any
  try {
    parsed = text ? JSON.parse(text) : undefined
  } catch {
    parsed = text
  }
  if (!r.ok) return command.error(`${r.status}${parsed?.code ? ` ${parsed.code}` : ""}: ${parsed?.error ?? (Array.isArray(parsed?.detail) ? JSON.stringify(parsed.detail) : text)}`, { exit: 1 })
  return parsed
}

interface Bank {
  tag: string
  name: string
  geo: string
  status: string
  endpoint: string
  workers: Array<number>
  health: { workers_up: number; workers_total: number; success_rate: number }
}

const bankRows = (banks: ReadonlyArray<Bank>) =>
  table(["TAG", "NAME", "GEO", "STATUS", "ENDPOINT", "WORKERS", "UP"], banks.map((b) => [b.tag, b.name, b.geo, b.status, b.endpoint, b.workers.join(","), `${b.health.workers_up}/${b.health.workers_total}`]))

const describeBank = (b: Bank) => `${b.tag}  ${b.name}  (${b.status})\n  geo ${b.geo}, endpoint ${b.endpoint}\n  workers ${b.workers.join(", ")}: ${b.health.workers_up}/${b.health.workers_total} up`

/** `platform cluster health`. */
export class ClusterHealth extends PlatformCommand {
  static summary = "Show cluster health: devices, workers, banks and the geo router."
  static examples = ["<%= config.bin %> cluster health", "<%= config.bin %> cluster health --json --api-url http://127.0.0.1:9002"]
  static flags = flags

  async run() {
    const { flags: f } = await this.parse(ClusterHealth)
    const h = await callApi(this, f, "GET", "/cluster/health")
    this.log(`${h.status}: ${h.driver} driver; devices ${h.devices_online}/${h.devices_total} online; workers ${h.workers_free}/${h.workers_total} free; banks ${h.banks_active} active, ${h.banks_idle} idle; ${h.profiles} profiles over ${h.countries} countries`)
    if (h.banks.length) {
      this.log(table(["TAG", "GEO", "STATUS", "ENDPOINT", "UP"], h.banks.map((b: Omit<Bank, "name" | "workers">) => [b.tag, b.geo, b.status, b.endpoint, `${b.health.workers_up}/${b.health.workers_total}`])))
    }
    return h
  }
}

/** `platform cluster devices`. */
export class ClusterDevices extends PlatformCommand {
  static summary = "List the device registry: master router, gateway and the 16 workers."
  static examples = ["<%= config.bin %> cluster devices"]
  static flags = flags

  async run() {
    const { flags: f } = await this.parse(ClusterDevices)
    const devices = (await callApi(this, f, "GET", "/devices/")) as Array<{ id: number; role: string; hostname: string; ip_address: string; status: string }>
    this.log(table(["ID", "ROLE", "HOSTNAME", "IP", "STATUS"], devices.map((d) => [d.id, d.role, d.hostname, d.ip_address, d.status])))
    return devices
  }
}

/** `platform cluster banks list`. */
export class BanksList extends PlatformCommand {
  static summary = "List VPN banks."
  static examples = ["<%= config.bin %> cluster banks list"]
  static flags = flags

  async run() {
    const { flags: f } = await this.parse(BanksList)
    const banks = (await callApi(this, f, "GET", "/banks/")) as Array<Bank>
    this.log(banks.length ? bankRows(banks) : "no banks")
    return banks
  }
}

/** `platform cluster banks create NAME`. */
export class BanksCreate extends PlatformCommand {
  static summary = "Create a VPN bank: profiles matching the filter assigned to the workers, load balancer configured."
  static examples = ["<%= config.bin %> cluster banks create \"Cali Bank\" --workers 1,2,3 --filter us:ca"]
  static args = { name: Args.string({ required: true, description: "bank name (its tag is the name lower-cased without spaces)" }) }
  static flags = {
    ...flags,
    workers: Flags.string({ required: true, summary: "Worker numbers (1-16), comma-separated." }),
    filter: Flags.string({ required: true, summary: "Geographic filter: {country}[:{state}][:tor], e.g. us, us:ca, us:tx:tor." })
  }

  async run() {
    const { args, flags: f } = await this.parse(BanksCreate)
    const workers = f.workers.split(",").map((w) => w.trim())
    if (workers.some((w) => !/^\d+$/.test(w))) this.error(`--workers: expected worker numbers separated by commas, got "${f.workers}"`, { exit: 2 })
    const bank = (await callApi(this, f, "POST", "/banks/", { name: args.name, workers: workers.map(Number), filter: f.filter })) as Bank
    this.log(describeBank(bank))
    return bank
  }
}

const bankArgs = { tag: Args.string({ required: true, description: "bank tag" }) }

/** A command acting on one bank: `delete` (DELETE), `idle` and `resume` (POST). */
const bankAction = (action: "delete" | "idle" | "resume", summary: string) =>
  class extends PlatformCommand {
    static summary = summary
    static examples = [`<%= config.bin %> cluster banks ${action} calibank`]
    static args = bankArgs
    static flags = flags

    async run(): Promise<unknown> {
      // This class's own flags and args (with oclif's --json), typed here: the class is anonymous.
      const { args, flags: f } = (await this.parse(this.constructor as never)) as unknown as { args: { tag: string }; flags: { "api-url": string; token?: string } }
      const tag = encodeURIComponent(args.tag)
      const r = await callApi(this, f, action === "delete" ? "DELETE" : "POST", action === "delete" ? `/banks/${tag}` : `/banks/${tag}/${action}`)
      this.log(action === "delete" ? `deleted ${args.tag}` : describeBank(r as Bank))
      return r ?? { tag: args.tag, deleted: true }
    }
  }

/** `platform cluster banks delete TAG`. */
export const BanksDelete = bankAction("delete", "Delete a bank: tunnels stopped, workers released.")
/** `platform cluster banks idle TAG`. */
export const BanksIdle = bankAction("idle", "Idle a bank: tunnels stopped, workers released, the bank kept.")
/** `platform cluster banks resume TAG`. */
export const BanksResume = bankAction("resume", "Resume an idle bank on free workers.")
