/**
 * The Cluster API (research-jobs spec, "Cluster API") on the `cluster` listener, under `/api/v1`:
 * banks (list, create, details, update, delete, idle, resume), devices (list, status, ping,
 * ping-all), workers, cluster health, and the further device operations the spec lists without
 * routes, designed here REST-style: `GET /devices/{id}/external-ip`, `POST /devices/{id}/speedtest`,
 * `/exec` (`{command}`), `/reboot`, `/refresh`, `/vpn/start` (`{profile?}`), `/vpn/stop`,
 * `/vpn/restart`; `GET /profiles?filter=` shows what a filter selects.
 *
 * Security (the spec gives the API no authentication, but it runs commands as root on routers):
 * when the listener is bound beyond loopback, every mutating and command route (pings included:
 * they run `ping` on the master) needs
 * `Authorization: Bearer <admin token>` (compared in constant time; 401 without, 503 when no
 * token is configured). Errors: `{error, code}` with 404, 409 (workers busy, bank exists, load
 * balancer, an operation the driver cannot do), 422 (filter, no matching profile, not a worker),
 * 503 (a device or worker process that does not answer; no admin token configured).
 */
import * as crypto from "node:crypto"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { HttpError } from "../../core/HttpError.ts"
import * as Route from "../../core/Route.ts"
import type { Cluster } from "./Cluster.ts"
import type { Inventory } from "./Inventory.ts"
import { selectByString } from "./Inventory.ts"
import { type GeoResolver, JobErrorKind, JobFailure } from "../jobs/Contract.ts"
import { Bank, BankCreate, BankUpdate, ClusterError, Device, DEVICES, PingResult } from "./Model.ts"

/** A resolved route as other processes receive it (no dispatcher: they build their own). */
const RouteBody = Schema.Union(
  Schema.Struct({ kind: Schema.Literal("direct") }),
  Schema.Struct({ kind: Schema.Literal("proxy"), proxy_url: Schema.String, label: Schema.NullOr(Schema.String) })
).annotations({ identifier: "GeoRouteBody" })
const RouteFailure = Schema.Struct({ error: Schema.String, kind: JobErrorKind, retryable: Schema.Boolean }).annotations({ identifier: "GeoRouteFailure" })

/** What the routes need besides the cluster. */
export interface HttpDeps {
  readonly cluster: Cluster
  readonly inventory: Inventory
  readonly driver: string
  /** True while the listener is bound to a loopback address only. */
  readonly loopbackOnly: () => boolean
  /** The admin token, or undefined when none is configured. */
  readonly adminToken: string | undefined
  readonly adminTokenEnv: string
  readonly router: () => Record<string, unknown>
  /** The geo router, answering `GET /api/v1/georouter/route` for processes without one. */
  readonly resolver?: GeoResolver
}

const ErrorBody = Schema.Struct({ error: Schema.String, code: Schema.String }).annotations({ identifier: "ClusterErrorBody" })
const TagParams = Schema.Struct({ tag: Schema.String })
const IdParams = Schema.Struct({ id: Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, DEVICES)).annotations({ description: "device id, 1 to 18" }) })
const tags = ["cluster"]
const errors = (...codes: Array<number>) => Object.fromEntries(codes.map((c) => [c, { description: "refused: `{error, code}`", schema: ErrorBody }]))

/** A cluster failure as its HTTP answer; anything else is a defect (500). */
const toHttp = (e: unknown): unknown =>
  e instanceof ClusterError ? new HttpError({ status: e.status, body: { error: e.message, code: e.code, ...e.details } }) : e

const run = <A>(f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: toHttp })

/** SHA-256 both sides, then `timingSafeEqual`: constant time whatever the lengths. */
const sameToken = (given: string, expected: string) =>
  crypto.timingSafeEqual(crypto.createHash("sha256").update(given).digest(), crypto.createHash("sha256").update(expected).digest())

/** The Cluster API routes. */
export const routes = (d: HttpDeps): ReadonlyArray<Route.Route> => {
  /** Fails unless the request may mutate: loopback listener, or the admin bearer token. */
  const guard = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<void, HttpError> => {
    if (d.loopbackOnly()) return Effect.void
    if (d.adminToken === undefined || d.adminToken === "") {
      return Effect.fail(HttpError.of(503, `the Cluster API listens beyond loopback and no admin token is configured: set ${d.adminTokenEnv}`, { code: "admin_token_missing" }))
    }
    const m = /^Bearer\s+(.+)$/i.exec(request.headers["authorization"] ?? "")
    if (!m || !sameToken(m[1]!.trim(), d.adminToken)) {
      return Effect.fail(new HttpError({ status: 401, body: { error: "admin bearer token required", code: "unauthorized" }, headers: { "www-authenticate": 'Bearer realm="cluster"' } }))
    }
    return Effect.void
  }
  const admin = ["adminBearer"]
  const guarded = <A>(request: HttpServerRequest.HttpServerRequest, f: () => Promise<A>) => guard(request).pipe(Effect.zipRight(run(f)))

  const bankRoutes = (base: string): Array<Route.Route> => [
    Route.make({
      method: "GET",
      path: base,
      summary: "List banks",
      tags,
      responses: { 200: { description: "banks", schema: Schema.Array(Bank) } },
      handler: () => Effect.sync(() => d.cluster.banks())
    }),
    Route.make({
      method: "POST",
      path: base,
      summary: "Create a bank: profiles assigned, load balancer configured, VPNs up",
      tags,
      security: admin,
      body: BankCreate,
      responses: { 201: { description: "the bank", schema: Bank }, ...errors(401, 409, 422, 503) },
      handler: ({ body, request }) => guarded(request, () => d.cluster.create(body)).pipe(Effect.map((b) => Route.reply(201, b)))
    })
  ]

  return [
    // The router ignores a trailing slash: `/api/v1/banks` reaches these too.
    ...bankRoutes("/api/v1/banks/"),
    Route.make({
      method: "GET",
      path: "/api/v1/banks/:tag",
      summary: "Bank details",
      tags,
      params: TagParams,
      responses: { 200: { description: "the bank", schema: Bank }, ...errors(404) },
      handler: ({ params }) =>
        Effect.suspend(() => {
          const b = d.cluster.bank(params.tag)
          return b ? Effect.succeed(b) : Effect.fail(toHttp(new ClusterError({ status: 404, code: "bank_not_found", message: `no bank with tag "${params.tag}"` })))
        })
    }),
    Route.make({
      method: "PUT",
      path: "/api/v1/banks/:tag",
      summary: "Update a bank (name, workers, filter; the tag stays)",
      tags,
      security: admin,
      params: TagParams,
      body: BankUpdate,
      responses: { 200: { description: "the bank", schema: Bank }, ...errors(401, 404, 409, 422, 503) },
      handler: ({ params, body, request }) => guarded(request, () => d.cluster.update(params.tag, body))
    }),
    Route.make({
      method: "DELETE",
      path: "/api/v1/banks/:tag",
      summary: "Delete a bank, releasing its workers",
      tags,
      security: admin,
      params: TagParams,
      responses: { 200: { description: "the bank as it was", schema: Bank }, ...errors(401, 404, 409, 503) },
      handler: ({ params, request }) => guarded(request, () => d.cluster.remove(params.tag))
    }),
    ...(["idle", "resume"] as const).map((action) =>
      Route.make({
        method: "POST",
        path: `/api/v1/banks/:tag/${action}`,
        summary: action === "idle" ? "Pause a bank: VPN tunnels stopped, workers released" : "Resume an idle bank: VPN tunnels restarted",
        tags,
        security: admin,
        params: TagParams,
        responses: { 200: { description: "the bank", schema: Bank }, ...errors(401, 404, 409, 503) },
        handler: ({ params, request }) => guarded(request, () => d.cluster[action](params.tag))
      })
    ),
    Route.make({
      method: "GET",
      path: "/api/v1/devices/",
      summary: "List devices (1 master, 1 gateway, 16 workers)",
      tags,
      responses: { 200: { description: "devices", schema: Schema.Array(Device) } },
      handler: () => Effect.sync(() => d.cluster.devices())
    }),
    Route.make({
      method: "GET",
      path: "/api/v1/devices/:id/status",
      summary: "A device's registry entry with its bank and driver facts",
      tags,
      params: IdParams,
      responses: { ...errors(404, 422) },
      handler: ({ params }) =>
        run(async () => {
          const dev = d.cluster.device(params.id)
          const bank = dev.worker_number === null ? null : (d.cluster.banks().find((b) => b.status === "active" && b.workers.includes(dev.worker_number!))?.tag ?? null)
          return { ...dev, bank, driver: d.driver, ...(dev.worker_number === null ? {} : d.cluster.workerFacts(dev.worker_number)) }
        })
    }),
    Route.make({
      method: "POST",
      path: "/api/v1/devices/ping-all",
      summary: "Ping every device",
      tags,
      security: admin,
      responses: { 200: { description: "one result per device", schema: Schema.Array(PingResult) }, ...errors(401, 503) },
      handler: ({ request }) => guarded(request, () => d.cluster.pingAll())
    }),
    Route.make({
      method: "POST",
      path: "/api/v1/devices/:id/ping",
      summary: "Ping a device: success and average latency (ms)",
      tags,
      security: admin,
      params: IdParams,
      responses: { 200: { description: "the ping", schema: PingResult }, ...errors(401, 404, 409, 503) },
      handler: ({ params, request }) => guarded(request, () => d.cluster.ping(params.id))
    }),
    Route.make({
      method: "GET",
      path: "/api/v1/devices/:id/external-ip",
      summary: "A device's exit IP with its geolocation (the VPN profile's country, region, provider)",
      tags,
      params: IdParams,
      handler: ({ params }) => run(() => d.cluster.externalIp(params.id))
    }),
    Route.make({
      method: "POST",
      path: "/api/v1/devices/:id/speedtest",
      summary: "Download and upload speed through a worker's tunnel (Mbps)",
      tags,
      security: admin,
      params: IdParams,
      responses: { 200: { description: "the device with its speeds", schema: Device }, ...errors(401, 404, 409, 503) },
      handler: ({ params, request }) => guarded(request, () => d.cluster.speedTest(params.id))
    }),
    Route.make({
      method: "POST",
      path: "/api/v1/devices/:id/exec",
      summary: "Run a shell command as root on a device (openwrt: `sys exec`)",
      tags,
      security: admin,
      params: IdParams,
      body: Schema.Struct({ command: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(4096)) }),
      responses: { ...errors(401, 404, 409, 503) },
      handler: ({ params, body, request }) => guarded(request, () => d.cluster.exec(params.id, body.command))
    }),
    ...(["reboot", "refresh"] as const).map((action) =>
      Route.make({
        method: "POST",
        path: `/api/v1/devices/:id/${action}`,
        summary: action === "reboot" ? "Reboot a device" : "Refresh a device's facts (uptime, load, memory)",
        tags,
        security: admin,
        params: IdParams,
        responses: { 200: { description: "the device", schema: Device }, ...errors(401, 404, 409, 503) },
        handler: ({ params, request }) => guarded(request, () => d.cluster[action](params.id))
      })
    ),
    ...(["start", "stop", "restart"] as const).map((action) =>
      Route.make({
        method: "POST",
        path: `/api/v1/devices/:id/vpn/${action}`,
        summary: `${action[0]!.toUpperCase()}${action.slice(1)} a worker's VPN${action === "stop" ? "" : " (body `{profile}`: a profile file name; default its current one)"}`,
        tags,
        security: admin,
        params: IdParams,
        body: Schema.Struct({ profile: Schema.optional(Schema.String) }),
        responses: { 200: { description: "the device", schema: Device }, ...errors(401, 404, 422, 409, 503) },
        handler: ({ params, body, request }) => guarded(request, () => d.cluster.workerVpn(params.id, action, body.profile))
      })
    ),
    Route.make({
      method: "GET",
      path: "/api/v1/workers/",
      summary: "List workers: number, device, bank, VPN profile and status",
      tags,
      handler: () =>
        Effect.sync(() => {
          const banks = d.cluster.banks()
          return d.cluster.devices().filter((x) => x.worker_number !== null).map((x) => {
            const bank = banks.find((b) => b.status === "active" && b.workers.includes(x.worker_number!))
            const a = bank?.worker_assignments.find((w) => w.worker_number === x.worker_number)
            return {
              worker_number: x.worker_number,
              device_id: x.id,
              hostname: x.hostname,
              lan_ip: x.lan_ip,
              wg_interface: x.wg_interface,
              bank: bank?.tag ?? null,
              vpn_profile: a?.vpn_profile ?? (x.vpn_profile || null),
              vpn_status: a?.vpn_status ?? "stopped",
              proxy: a ? `${a.worker_ip}:${a.proxy_port}` : null
            }
          })
        })
    }),
    Route.make({
      method: "GET",
      path: "/api/v1/cluster/health",
      summary: "Cluster health: devices, workers, banks",
      tags,
      handler: () =>
        Effect.sync(() => {
          const banks = d.cluster.banks()
          const devices = d.cluster.devices()
          const active = banks.filter((b) => b.status === "active")
          const up = active.reduce((n, b) => n + b.health.workers_up, 0)
          const total = active.reduce((n, b) => n + b.health.workers_total, 0)
          return {
            status: active.some((b) => b.health.workers_up === 0) ? "degraded" : "healthy",
            driver: d.driver,
            devices_total: devices.length,
            devices_online: devices.filter((x) => x.status === "online").length,
            workers_total: 16,
            workers_free: d.cluster.freeWorkers().length,
            banks_total: banks.length,
            banks_active: active.length,
            banks_idle: banks.length - active.length,
            bank_workers_up: up,
            bank_workers_down: total - up,
            profiles: d.inventory.size,
            countries: d.inventory.countries.length,
            banks: banks.map((b) => ({ tag: b.tag, geo: b.geo, status: b.status, endpoint: b.endpoint, health: b.health })),
            router: d.router()
          }
        })
    }),
    Route.make({
      method: "GET",
      path: "/api/v1/georouter/route",
      summary: "Resolve a geo filter to a route (rules 1-5): for processes without a router of their own (`platform worker`, the jobs worker thread, with jobs.geo_router_url)",
      tags,
      // Resolving may create, resume or recover a bank (rules 3 and 4).
      security: admin,
      query: Schema.Struct({ geo: Schema.String.annotations({ description: "geo filter ({country}[:{state}][:tor] or tor); empty: the default geo" }) }),
      responses: { 200: { description: "the route", schema: RouteBody }, 422: { description: "invalid filter, no matching profile", schema: RouteFailure }, 503: { description: "no route now (no workers, unhealthy bank)", schema: RouteFailure }, ...errors(401) },
      handler: ({ query, request }) =>
        guard(request).pipe(
          Effect.zipRight(Effect.tryPromise({
            try: () => (d.resolver ? d.resolver.resolve(query.geo) : Promise.reject(new JobFailure("NETWORK_ERROR", "the cluster runs no geo router", true))),
            catch: (e) =>
              e instanceof JobFailure
                ? new HttpError({ status: e.kind === "VALIDATION_ERROR" ? 422 : 503, body: { error: e.message, kind: e.kind, retryable: e.retryable ?? e.kind !== "VALIDATION_ERROR" } })
                : e
          })),
          Effect.map((r) => (r.kind === "direct" ? { kind: "direct" as const } : { kind: "proxy" as const, proxy_url: r.proxyUrl, label: r.label ?? null }))
        )
    }),
    Route.make({
      method: "GET",
      path: "/api/v1/profiles",
      summary: "Profiles a filter selects (`us`, `us:ca`, `us:tx:tor`): count and the first `limit`",
      tags,
      query: Schema.Struct({
        filter: Schema.String,
        limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(0, 1000)))
      }),
      responses: { ...errors(422) },
      handler: ({ query }) =>
        Effect.suspend(() => {
          const sel = selectByString(d.inventory, query.filter)
          if (sel === null) return Effect.fail(toHttp(new ClusterError({ status: 422, code: "invalid_filter", message: `invalid filter "${query.filter}": expected {country}[:{state}][:tor]` })))
          return Effect.succeed({ filter: query.filter, count: sel.profiles.length, profiles: sel.profiles.slice(0, query.limit ?? 50).map((p) => p.file) })
        })
    })
  ]
}
