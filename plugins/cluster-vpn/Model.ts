/**
 * The cluster's resources (research-jobs spec: "VPN bank", "Device registry entry", "Cluster
 * layout") as Schemas (the API's bodies and `schemas/cluster-vpn/`), the errors of the Cluster
 * API, and the `Driver` interface through which banks touch the world.
 */
import * as Schema from "effect/Schema"
import type { Profile } from "./Inventory.ts"

/** Worker numbers 1 to 16; device ids 1 to 18 (1 master, 2 gateway, 3-18 workers 1-16). */
export const WORKERS = 16
export const DEVICES = 18
/** Device id of worker `n`. */
export const deviceOfWorker = (n: number) => n + 2

export const WorkerNumber = Schema.Number.pipe(Schema.int(), Schema.between(1, WORKERS)).annotations({ description: "worker number, 1 to 16" })

/** POST /api/v1/banks/ body. */
export const BankCreate = Schema.Struct({
  name: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(64), Schema.pattern(/^[A-Za-z0-9 ._:-]+$/)).annotations({ description: "display name: letters, digits, space . _ : -; the tag is it lower-cased without spaces" }),
  workers: Schema.Array(WorkerNumber).pipe(Schema.minItems(1), Schema.maxItems(WORKERS)),
  filter: Schema.String.annotations({ description: "geographic filter: `us`, `us:ca`, `us:tx:tor`" })
}).annotations({ identifier: "BankCreate" })
export type BankCreate = typeof BankCreate.Type

/** PUT /api/v1/banks/{tag} body: any of the create fields; the tag stays. */
export const BankUpdate = Schema.Struct({
  name: Schema.optional(BankCreate.fields.name),
  workers: Schema.optional(BankCreate.fields.workers),
  filter: Schema.optional(BankCreate.fields.filter)
}).annotations({ identifier: "BankUpdate" })
export type BankUpdate = typeof BankUpdate.Type

export const WorkerAssignment = Schema.Struct({
  worker_number: Schema.Number,
  worker_ip: Schema.String,
  proxy_port: Schema.Number,
  vpn_profile: Schema.String,
  vpn_status: Schema.String.annotations({ description: "`up`, `down` or `stopped` (idle bank)" }),
  exit_ip: Schema.String
})
export type WorkerAssignment = typeof WorkerAssignment.Type

export const BankHealth = Schema.Struct({
  workers_total: Schema.Number,
  workers_up: Schema.Number,
  workers_down: Schema.Number,
  success_rate: Schema.Number.annotations({ description: "share of the last health probes of this bank's workers that succeeded, 0 to 1" }),
  checked_at: Schema.NullOr(Schema.String)
})
export type BankHealth = typeof BankHealth.Type

/** A VPN bank (spec "VPN bank" response) plus `geo` (the filter as given) and timestamps. */
export const Bank = Schema.Struct({
  name: Schema.String,
  tag: Schema.String,
  workers: Schema.Array(Schema.Number),
  worker_assignments: Schema.Array(WorkerAssignment),
  filter: Schema.Struct({ country: Schema.String, state: Schema.NullOr(Schema.String), type: Schema.NullOr(Schema.String) }),
  geo: Schema.String,
  port: Schema.Number,
  status: Schema.Literal("active", "idle"),
  endpoint: Schema.String,
  health: BankHealth,
  created_at: Schema.String,
  updated_at: Schema.String
}).annotations({ identifier: "Bank" })
export type Bank = typeof Bank.Type

/** A device registry entry (spec "Device registry entry") plus `role` and `worker_number`. */
export const Device = Schema.Struct({
  id: Schema.Number,
  role: Schema.Literal("master", "gateway", "worker"),
  worker_number: Schema.NullOr(Schema.Number),
  hostname: Schema.String,
  lan_ip: Schema.String,
  wg_interface: Schema.String,
  wg_tunnel_ip: Schema.String,
  wg_public_key: Schema.String,
  vpn_profile: Schema.String,
  vpn_country: Schema.String,
  vpn_region: Schema.String,
  vpn_provider: Schema.String,
  external_ip: Schema.String,
  status: Schema.Literal("online", "offline"),
  last_seen: Schema.NullOr(Schema.String),
  uptime: Schema.Number,
  load_avg: Schema.Number,
  memory_free_mb: Schema.Number,
  ping_latency_ms: Schema.Number,
  download_speed_mbps: Schema.Number,
  upload_speed_mbps: Schema.Number,
  tags: Schema.Array(Schema.String),
  notes: Schema.String
}).annotations({ identifier: "Device" })
export type Device = typeof Device.Type
export type MutableDevice = { -readonly [K in keyof Device]: Device[K] }

/** A ping result (spec: success and average latency in milliseconds). */
export const PingResult = Schema.Struct({
  id: Schema.Number,
  hostname: Schema.String,
  success: Schema.Boolean,
  avg_latency_ms: Schema.NullOr(Schema.Number),
  sent: Schema.Number,
  received: Schema.Number
}).annotations({ identifier: "PingResult" })
export type PingResult = typeof PingResult.Type

/**
 * An error of the Cluster API: `status` is the HTTP status (404, 409, 422 or 503: it depends on
 * the refusal, so it is a field rather than a class annotation), `code` a stable machine word,
 * `details` more members of the answer `{error, code, ...details}` (see Http.ts).
 */
export class ClusterError extends Schema.TaggedError<ClusterError>()("ClusterError", {
  status: Schema.Int,
  code: Schema.String,
  message: Schema.String,
  details: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.Unknown }), { default: () => ({}) })
}) {}

/** Where one worker's proxy listens once its VPN is up. */
export interface WorkerUp {
  readonly ip: string
  readonly port: number
  readonly exitIp: string
}

/** A bank's frontend as a driver configures it. */
export interface FrontendSpec {
  readonly tag: string
  readonly port: number
  readonly workers: ReadonlyArray<{ readonly number: number; readonly ip: string; readonly port: number }>
}

/** A command's outcome on a device. */
export interface ExecResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/**
 * How banks touch the world. Every method rejects with `ClusterError` (status 409 for a load
 * balancer that cannot be configured or an operation the driver cannot do (`not_supported`),
 * 503 for a device or worker process that does not answer).
 */
export interface Driver {
  readonly kind: "local" | "openwrt"
  /** Address in bank endpoints (`http://<master_ip>:<port>`). */
  readonly masterIp: string
  /** Address a frontend binds. */
  readonly bindIp: string
  /** Brings worker `n`'s VPN up with `profile` and its proxy; resolves where the proxy listens. */
  readonly startVpn: (n: number, profile: Profile) => Promise<WorkerUp>
  /** Stops worker `n`'s VPN and proxy (no-op when down). */
  readonly stopVpn: (n: number) => Promise<void>
  /** Makes the load balancer serve exactly `frontends` (one per active bank), reloading it. */
  readonly applyFrontends: (frontends: ReadonlyArray<FrontendSpec>) => Promise<void>
  /** True when worker `n`'s proxy accepts connections. */
  readonly probe: (n: number, up: WorkerUp) => Promise<boolean>
  /** Pings device `d` (3 probes): success and average latency. */
  readonly ping: (d: Device) => Promise<{ success: boolean; avgLatencyMs: number | null; sent: number; received: number }>
  /** Runs `command` as root on device `d`. */
  readonly exec: (d: Device, command: string) => Promise<ExecResult>
  /** Reboots device `d`. */
  readonly reboot: (d: Device) => Promise<void>
  /** Fresh facts of device `d` (uptime, load, memory). */
  readonly refresh: (d: Device) => Promise<Partial<MutableDevice>>
  /** Download (and upload) throughput of worker `n` through its tunnel, Mbps. */
  readonly speedTest: (d: Device, up: WorkerUp | undefined) => Promise<{ download_mbps: number; upload_mbps: number }>
  /** Facts a status route adds for worker `n` (local: proxy pid and log file). */
  readonly workerFacts: (n: number) => Record<string, unknown>
  /** Stops everything this driver started (plugin shutdown). */
  readonly close: () => Promise<void>
}
