/**
 * Plugin `cluster-vpn`: the Cluster API and geographic routing of the research-jobs spec
 * ("Geographic filter", "VPN bank", "Device registry entry", VPN bank states, "Cluster API") on
 * listener `cluster` (9002). Its geo router is registered into the jobs plugin's `GeoRouters`
 * point, so every fetching path (Fetcher, Chromium contexts, graph operations) routes `geo`
 * through VPN banks.
 *
 * It does not list `jobs` in `dependsOn` on purpose: a workers-only process boots `jobs` and its
 * dependents, and the cluster (frontend ports, worker processes, router sessions) must live in
 * the serving process only. Registering into the point needs no order: fetching plugins read it
 * at each resolution (`pluggedGeoResolver`).
 */
import { spawnSync } from "node:child_process"
import * as path from "node:path"
import { Duration, Effect, Runtime } from "effect"
import { definePlugin, PluginBootError, PluginUnavailable } from "../../core/Plugin.ts"
import { geoRouters } from "../jobs/Contract.ts"
import { type Cluster, makeCluster } from "./Cluster.ts"
import { ClusterConfig } from "./Config.ts"
import { makeGeoRouter } from "./GeoRouter.ts"
import { routes } from "./Http.ts"
import { generateInventory, type Inventory, loadInventory } from "./Inventory.ts"
import { localDriver } from "./LocalDriver.ts"
import { Bank, BankCreate, BankUpdate, Device, type Driver, PingResult } from "./Model.ts"
import { openWrtDriver } from "./OpenWrtDriver.ts"

/** True for loopback host names and addresses. */
export const isLoopback = (host: string) => host === "localhost" || host === "::1" || host.startsWith("127.") || host === "::ffff:127.0.0.1"

/** True when `bin` runs (`-v` answers). */
const runs = (bin: string) => {
  const r = spawnSync(bin, ["-v"], { timeout: 5000, stdio: "ignore" })
  return r.error === undefined
}

export default definePlugin({
  name: "cluster-vpn",
  version: "0.1.0",
  description: "Cluster API (VPN banks over 16 workers, 18-device registry, health) and the geo router behind every job's `geo`; local (tinyproxy + HAProxy) or openwrt (JSON-RPC) driver",
  defaultListener: "cluster",
  config: ClusterConfig,
  resources: { ClusterBank: Bank, ClusterBankCreate: BankCreate, ClusterBankUpdate: BankUpdate, ClusterDevice: Device, ClusterPingResult: PingResult },
  setup: (ctx) =>
    Effect.gen(function* () {
      const c = ctx.config
      if (c.frontend_ports.from > c.frontend_ports.to) {
        return yield* Effect.fail(new PluginBootError({ reason: `frontend_ports: from (${c.frontend_ports.from}) exceeds to (${c.frontend_ports.to})` }))
      }
      const adminToken = process.env[c.admin_token_env]
      const loopbackOnly = () => {
        const l = ctx.listenerInfo(ctx.listener)
        return l === undefined || isLoopback(l.host)
      }
      if (ctx.mode === "inspect") {
        // Nothing is served in inspection: routes over a cluster that is never opened.
        const none = undefined as unknown as Cluster
        return { routes: routes({ cluster: none, inventory: undefined as unknown as Inventory, driver: c.driver, loopbackOnly, adminToken, adminTokenEnv: c.admin_token_env, router: () => ({}) }) }
      }
      const profilesDir = c.profiles_dir ? path.resolve(ctx.configDir, c.profiles_dir) : path.join(ctx.dataDir, "profiles")
      const inventory = yield* Effect.try({
        try: () => {
          if (c.generate_profiles > 0) generateInventory(profilesDir, c.generate_profiles)
          return loadInventory(profilesDir)
        },
        catch: (e) => new PluginBootError({ reason: `profiles (${profilesDir}): ${(e as Error).message}` })
      })
      let driver: Driver
      if (c.driver === "local") {
        for (const [bin, pkg] of [[c.local.tinyproxy_path, "tinyproxy"], [c.local.haproxy_path, "haproxy"]] as const) {
          if (!runs(bin)) return yield* Effect.fail(new PluginUnavailable({ reason: `the local driver needs ${pkg} (${bin} not found: apt-get install -y ${pkg}, or ./scripts/setup.sh)` }))
        }
        driver = localDriver({
          dir: path.join(ctx.dataDir, "local"),
          tinyproxy: c.local.tinyproxy_path,
          haproxy: c.local.haproxy_path,
          checkIntervalMs: c.lb_check_interval_ms,
          hostPort: () => ctx.listenerInfo(ctx.listener)?.port
        })
      } else {
        const password = process.env[c.openwrt.password_env]
        if (!password) return yield* Effect.fail(new PluginUnavailable({ reason: `the openwrt driver needs the routers' password in $${c.openwrt.password_env}` }))
        driver = openWrtDriver({ ...c.openwrt, password, workerProxyPort: c.worker_proxy_port, checkIntervalMs: c.lb_check_interval_ms, haproxyCheck: c.local.haproxy_path })
      }
      yield* Effect.addFinalizer(() => Effect.promise(() => driver.close()))
      // Background warnings (restore, recovery) go out through the platform's logger.
      const runtime = yield* Effect.runtime<never>()
      const warn = (m: string) => void Runtime.runFork(runtime)(Effect.logWarning(`cluster-vpn: ${m}`))
      const layoutIp = (n: number) => (c.driver === "local" ? "127.0.0.1" : c.openwrt.worker_url_template.replace(/^https?:\/\//, "").replace("{100+n}", String(100 + n)).replace("{n}", String(n)).replace(/[:/].*$/, ""))
      const cluster = yield* Effect.try({
        try: () =>
          makeCluster({
            file: path.join(ctx.dataDir, "cluster.json"),
            inventory,
            driver,
            ports: c.frontend_ports,
            layout: { master: driver.masterIp, gateway: c.driver === "local" ? "127.0.0.1" : driver.masterIp.replace(/\.\d+$/, ".2"), worker: layoutIp },
            log: warn
          }),
        catch: (e) => new PluginBootError({ reason: `cluster state (${ctx.dataDir}/cluster.json): ${(e as Error).message}` })
      })
      const router = makeGeoRouter(cluster, c.georouter)
      yield* Effect.addFinalizer(() => Effect.promise(() => router.close()))
      yield* Effect.logInfo(`cluster-vpn: ${c.driver} driver, ${inventory.size} profiles over ${inventory.countries.length} countries in ${profilesDir}`)
      const healthLoop = Effect.promise(() => cluster.checkHealth()).pipe(
        Effect.zipRight(Effect.sleep(Duration.seconds(c.georouter.health_check_interval_s))),
        Effect.forever
      )
      return {
        routes: routes({ cluster, inventory, driver: c.driver, loopbackOnly, adminToken, adminTokenEnv: c.admin_token_env, router: () => router.stats() }),
        extensions: geoRouters({ id: "cluster-vpn", resolver: router }),
        start: Effect.promise(() => cluster.restore()).pipe(
          Effect.zipRight(Effect.sleep(Duration.seconds(c.georouter.health_check_interval_s))),
          Effect.zipRight(healthLoop)
        ),
        status: () => ({ driver: c.driver, profiles: inventory.size, banks: cluster.banks().length, free_workers: cluster.freeWorkers().length })
      }
    })
})
