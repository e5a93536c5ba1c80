/**
 * Shared helpers of the cluster-vpn tests: a platform.yaml with listeners `jobs` and `cluster`
 * on ephemeral ports and the plugin on short health intervals, a Cluster API client, polling.
 */

/** Options of `clusterYaml`. */
export interface ClusterYamlOptions {
  readonly dataDir: string
  /** Bank frontend ports (tests: inside 19280-19299). */
  readonly ports: { readonly from: number; readonly to: number }
  readonly socks?: string
  /** Extra lines under `cluster-vpn:` (indented four spaces). */
  readonly cluster?: string
  /** Extra YAML under `plugins:` (indented two spaces). */
  readonly extra?: string
  readonly clusterHost?: string
  /** Jobs on this Redis (backend redis, workers in the worker thread) instead of embedded. */
  readonly redisUrl?: string
}

/** A platform.yaml: jobs (embedded, or redis with `redisUrl`) and cluster-vpn (local driver, 1,500 generated profiles). */
export const clusterYaml = (o: ClusterYamlOptions): string => `data_dir: ${o.dataDir}
log: { level: warning, format: json }
listeners:
  - { name: jobs, host: 127.0.0.1, port: 0 }
  - { name: cluster, host: ${o.clusterHost ?? "127.0.0.1"}, port: 0 }
plugins:
  jobs:
${o.redisUrl ? `    backend: redis\n    redis: { url: "${o.redisUrl}", prefix: cluster${process.pid} }\n    worker_thread: true\n` : "    backend: embedded\n"}    workers: true
    limits: { worker_timeout_s: 30, queue_timeout_s: 60, backoff_base_s: 0.05, backoff_cap_s: 1, max_retries: 0 }
  cluster-vpn:
    listener: cluster
    generate_profiles: 1500
    frontend_ports: { from: ${o.ports.from}, to: ${o.ports.to} }
    lb_check_interval_ms: 1000
    georouter:
      health_check_interval_s: 0.2
${o.socks ? `      tor_socks_url: ${o.socks}\n` : ""}${o.cluster ?? ""}${o.extra ?? ""}`

/** A small client of the Cluster API at `base`. */
export const clusterClient = (base: string, token?: string) => ({
  call: async (method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const r = await fetch(`${base}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body)
    })
    const text = await r.text()
    try {
      return { status: r.status, body: JSON.parse(text) }
    } catch {
      return { status: r.status, body: text }
    }
  }
})

/** Polls `read` until `pred` holds; rejects after `timeoutMs` with the last value. */
export const waitUntil = async <T>(read: () => Promise<T>, pred: (v: T) => boolean, timeoutMs = 10_000): Promise<T> => {
  const end = Date.now() + timeoutMs
  for (;;) {
    const v = await read()
    if (pred(v)) return v
    if (Date.now() > end) throw new Error(`condition not met within ${timeoutMs} ms: ${JSON.stringify(v).slice(0, 500)}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** The body of a `graph` job that fetches `urls` one at a time through the route of `geo`. */
export const geoFetchGraph = (urls: Array<string>, geo: string) => ({
  graph: `name: geo-fetch
inputs:
  - { name: urls, type: "url[]" }
stages:
  - name: acquire
    sequential:
      - { op: fetch_batch, input: urls, params: { geo: "${geo}", concurrency: 1 }, output: pages }
outputs: [pages]
`,
  params: { urls }
})
