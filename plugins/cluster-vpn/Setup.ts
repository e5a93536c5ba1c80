/**
 * The `cluster-vpn` plugin's implementation, imported when the plugin is set up (not when
 * `plugin.ts` is read for `config validate` or help): inventory, driver, cluster, geo router,
 * routes, and the health loop.
 */
import { spawnSync } from "node:child_process"
import * as path from "node:path"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import { PluginBootError, type PluginContext, PluginUnavailable } from "../../core/Plugin.ts"
import { geoRouters } from "../jobs/Contract.ts"
import { type Cluster, makeCluster } from "./Cluster.ts"
import type { ClusterConfig } from "./Config.ts"
import { makeGeoRouter } from "./GeoRouter.ts"
import { routes } from "./Http.ts"
import { generateInventory, type Inventory, loadInventory } from "./Inventory.ts"
import { localDriver } from "./LocalDriver.ts"
import type { Driver } from "./Model.ts"
import { openWrtDriver } from "./OpenWrtDriver.ts"

/** True for loopback host names and addresses. */
export const isLoopback = (host: string) => host === "localhost" || host === "::1" || host.startsWith("127.") || host === "::ffff:127.0.0.1"

/** True when `bin` runs (`-v` answers). */
const runs = (bin: string) => {
  const r = spawnSync(bin, ["-v"], { timeout: 5000, stdio: "ignore" })
  return r.error === undefined
}

/** `setup` of the plugin (see `plugin.ts`). */
export const setup = (ctx: PluginContext<ClusterConfig>) =>
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
      routes: routes({ cluster, inventory, driver: c.driver, loopbackOnly, adminToken, adminTokenEnv: c.admin_token_env, router: () => router.stats(), resolver: router }),
      extensions: geoRouters({ id: "cluster-vpn", resolver: router, url: () => ctx.listenerInfo(ctx.listener)?.url }),
      start: Effect.promise(() => cluster.restore()).pipe(
        Effect.zipRight(Effect.sleep(Duration.seconds(c.georouter.health_check_interval_s))),
        Effect.zipRight(healthLoop)
      ),
      status: () => ({ driver: c.driver, profiles: inventory.size, banks: cluster.banks().length, free_workers: cluster.freeWorkers().length })
    }
  })
