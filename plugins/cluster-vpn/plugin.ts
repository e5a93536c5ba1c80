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
import { definePlugin, lazySetup } from "../../core/Plugin.ts"
import { ClusterConfig } from "./Config.ts"
import { Bank, BankCreate, BankUpdate, Device, PingResult } from "./Model.ts"

const setup = lazySetup(() => import("./Setup.ts"))

export default definePlugin({
  name: "cluster-vpn",
  version: "0.1.0",
  description: "Cluster API (VPN banks over 16 workers, 18-device registry, health) and the geo router behind every job's `geo`; local (tinyproxy + HAProxy) or openwrt (JSON-RPC) driver",
  defaultListener: "cluster",
  config: ClusterConfig,
  resources: { ClusterBank: Bank, ClusterBankCreate: BankCreate, ClusterBankUpdate: BankUpdate, ClusterDevice: Device, ClusterPingResult: PingResult },
  setup
})
