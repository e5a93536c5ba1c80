/**
 * Configuration of `plugins.cluster-vpn` (research-jobs spec: "Geographic filter" router
 * settings, "VPN bank", "Limits"). Every `GEOROUTER_*` setting of the spec is a key of
 * `georouter`; `platform.yaml` maps the environment variables onto them.
 */
import * as Schema from "effect/Schema"
import { configOption as opt } from "../../core/Plugin.ts"

const Port = Schema.Number.pipe(Schema.int(), Schema.between(1, 65535))
const PositiveSeconds = Schema.Number.pipe(Schema.greaterThan(0), Schema.lessThanOrEqualTo(86_400))

/** The geo router's settings (spec: "Router settings"). */
export const GeoRouterConfig = Schema.Struct({
  default_geo: opt(Schema.String, "", "GEOROUTER_DEFAULT_GEO: the filter a job without `geo` is routed by; empty keeps such jobs direct"),
  fallback_enabled: opt(Schema.Boolean, true, "GEOROUTER_FALLBACK_ENABLED: when a bank stays unhealthy after recovery, use a bank of similar geography (same country)"),
  fallback_to_direct: opt(Schema.Boolean, false, "GEOROUTER_FALLBACK_TO_DIRECT: with no similar bank either, go direct instead of failing"),
  health_check_interval_s: opt(PositiveSeconds, 30, "GEOROUTER_HEALTH_CHECK_INTERVAL: seconds between health checks of every bank's workers"),
  route_cache_ttl_s: opt(Schema.Number.pipe(Schema.between(0, 86_400)), 300, "seconds a resolved route is reused (0: never cached)"),
  auto_bank_workers: opt(Schema.Number.pipe(Schema.int(), Schema.between(1, 16)), 2, "workers a bank created by the router for an unknown filter takes (fewer when fewer are free)"),
  tor_socks_url: opt(Schema.String.pipe(Schema.pattern(/^socks5h?:\/\/[^\s/]+:\d+\/?$/)), "socks5h://127.0.0.1:9050", "the Tor SOCKS5 proxy `geo: tor` resolves to")
})

/** The frontend port range of banks (spec: 8890 to 8899; 8900 to 8999 reserved); `from` ≤ `to` is checked at boot. */
export const PortRange = Schema.Struct({ from: Port, to: Port })

/** The `local` driver: real tinyproxy workers and HAProxy frontends on loopback. */
export const LocalDriverConfig = Schema.Struct({
  tinyproxy_path: opt(Schema.String, "tinyproxy", "Debian's tinyproxy: each worker's forward HTTP proxy (CONNECT included)"),
  haproxy_path: opt(Schema.String, "haproxy", "Debian's haproxy: each bank's round-robin frontend")
})

/** The `openwrt` driver: the routers' JSON-RPC (LuCI rpc: auth, uci, sys). */
export const OpenWrtDriverConfig = Schema.Struct({
  master_url: opt(Schema.String, "http://192.168.1.1", "the master router's LuCI base URL (JSON-RPC under /cgi-bin/luci/rpc)"),
  master_ip: opt(Schema.String, "192.168.1.1", "the master's address in bank endpoints"),
  worker_url_template: opt(Schema.String, "http://192.168.1.{100+n}", "a worker's LuCI base URL; `{100+n}` and `{n}` are replaced by the worker number's forms"),
  username: opt(Schema.String, "root", "the routers' user"),
  password_env: opt(Schema.String, "CLUSTER_ROUTER_PASSWORD", "name of the environment variable holding the routers' password (never written in platform.yaml, never shown)"),
  haproxy_config_path: opt(Schema.String, "/etc/haproxy.cfg", "where the master's HAProxy configuration is written"),
  timeout_ms: opt(Schema.Number.pipe(Schema.int(), Schema.between(100, 600_000)), 10_000, "deadline of one JSON-RPC call")
})

/** `plugins.cluster-vpn`. */
export const ClusterConfig = Schema.Struct({
  driver: opt(Schema.Literal("local", "openwrt"), "local", "how banks touch the world: `local` (loopback tinyproxy workers + HAProxy) or `openwrt` (the routers' JSON-RPC)"),
  profiles_dir: opt(Schema.String, "", "folder of `<country>-<state>-<n>.<provider>.udp.ovpn` files; empty: `<data_dir>/cluster-vpn/profiles`"),
  generate_profiles: opt(Schema.Number.pipe(Schema.int(), Schema.between(0, 200_000)), 12_909, "profiles generated into an empty profiles folder at first start (0: none)"),
  frontend_ports: opt(PortRange, { from: 8890, to: 8899 }, "bank frontend ports, `from` to `to` inclusive (spec: 8890-8899; 8900-8999 reserved)"),
  worker_proxy_port: opt(Port, 3128, "the workers' HTTP proxy port (openwrt; the local driver picks free loopback ports)"),
  lb_check_interval_ms: opt(Schema.Number.pipe(Schema.int(), Schema.between(10, 600_000)), 5000, "HAProxy's health check interval per worker"),
  admin_token_env: opt(Schema.String, "CLUSTER_ADMIN_TOKEN", "environment variable holding the admin bearer token; required for mutating and command routes when the listener is not on loopback"),
  georouter: opt(GeoRouterConfig, Schema.decodeSync(GeoRouterConfig)({}), "geo router settings"),
  local: opt(LocalDriverConfig, Schema.decodeSync(LocalDriverConfig)({}), "local driver settings"),
  openwrt: opt(OpenWrtDriverConfig, Schema.decodeSync(OpenWrtDriverConfig)({}), "openwrt driver settings")
})
export type ClusterConfig = typeof ClusterConfig.Type
