/**
 * Gateway speed (`npm run bench`, or `node --import tsx bench/gateway.ts`):
 *
 * 1. Added latency: the same non-streaming chat request sent to the OpenAI fixture server
 *    directly and through the gateway's `upstream` engine, alternating, one at a time over
 *    kept-alive connections. Reports p50/p99 of both and their difference (target: < 1 ms at p50).
 * 2. Refusals per second: one engine held busy by a slow upstream call while a load generator
 *    (raw sockets, pipelined requests, in a worker thread so it has its own core) sends chat
 *    requests that all get 503 (target: 5,000/s on the 2-core machine).
 * 3. For reference, the same load generator against a bare `node:http` server answering the
 *    same 503 (the machine's ceiling for this client), and against a bare `@effect/platform-node`
 *    server with one route answering it (the ceiling of the HTTP stack the kernel is built on).
 *
 * 4. For orientation, the llama-cpp engine on the tiny fixture GGUF (random weights, 2 layers):
 *    time to first streamed token and generation speed through the gateway.
 *
 * Everything runs on loopback in this process: the real kernel (`startPlatform`), the gateway
 * plugin and the fixture upstream.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Worker } from "node:worker_threads"
import { HttpRouter, HttpServer, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { ROOT, startPlatform } from "../core/Kernel.ts"
import * as fs from "node:fs"
import * as os from "node:os"
import { writeTinyGguf } from "../scripts/make-tiny-gguf.ts"
import { startOpenAIUpstream } from "../test/fixtures/openai-upstream.ts"

const TOKEN = "bench-token-0123456789"

const quantile = (sorted: ReadonlyArray<number>, q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!

/** One POST over `agent`; resolves with the status and the ms until the last body byte. */
const post = (agent: http.Agent, url: string, body: string, token?: string): Promise<{ status: number; ms: number }> =>
  new Promise((resolve, reject) => {
    const t0 = performance.now()
    const req = http.request(url, {
      method: "POST",
      agent,
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) }
    }, (res) => {
      res.resume()
      res.on("end", () => resolve({ status: res.statusCode!, ms: performance.now() - t0 }))
    })
    req.on("error", reject)
    req.end(body)
  })

// The load generator: `connections` sockets, each keeping `depth` pipelined requests in flight,
// counting responses by status. Raw sockets because node:http's client costs more CPU per
// request than the server under test.
const LOADGEN = `
const { parentPort, workerData } = require("node:worker_threads")
const net = require("node:net")
const { host, port, path, body, token, connections, depth, ms } = workerData
const req = Buffer.from("POST " + path + " HTTP/1.1\\r\\nHost: " + host + ":" + port + "\\r\\nContent-Type: application/json\\r\\nAuthorization: Bearer " + token + "\\r\\nContent-Length: " + Buffer.byteLength(body) + "\\r\\n\\r\\n" + body)
const statuses = {}
let done = 0, stop = false
const one = () => new Promise((resolve) => {
  const s = net.connect(port, host)
  s.setNoDelay(true)
  let buf = Buffer.alloc(0), inflight = 0
  const fill = () => { while (!stop && inflight < depth) { s.write(req); inflight++ } if (stop && inflight === 0) { s.end(); resolve() } }
  s.on("connect", fill)
  s.on("data", (d) => {
    buf = buf.length ? Buffer.concat([buf, d]) : d
    for (;;) {
      const end = buf.indexOf("\\r\\n\\r\\n")
      if (end < 0) break
      const head = buf.subarray(0, end).toString("latin1")
      const m = /content-length: *(\\d+)/i.exec(head)
      const len = m ? Number(m[1]) : 0
      if (buf.length < end + 4 + len) break
      const status = head.slice(9, 12)
      statuses[status] = (statuses[status] || 0) + 1
      done++
      inflight--
      buf = buf.subarray(end + 4 + len)
    }
    fill()
  })
  s.on("error", () => resolve())
  s.on("close", () => resolve())
})
const t0 = performance.now()
setTimeout(() => { stop = true }, ms)
Promise.all(Array.from({ length: connections }, one)).then(() => parentPort.postMessage({ done, statuses, seconds: (performance.now() - t0) / 1000 }))
`

/** Runs the load generator against `url` for `ms`; returns responses per second and statuses. */
const load = async (url: string, body: string, ms: number): Promise<{ perSecond: number; statuses: Record<string, number> }> => {
  const u = new URL(url)
  const worker = new Worker(LOADGEN, {
    eval: true,
    workerData: { host: u.hostname, port: Number(u.port), path: u.pathname, body, token: TOKEN, connections: 32, depth: 1, ms }
  })
  try {
    const r = await new Promise<{ done: number; statuses: Record<string, number>; seconds: number }>((resolve, reject) => {
      worker.once("message", resolve)
      worker.once("error", reject)
    })
    return { perSecond: r.done / r.seconds, statuses: r.statuses }
  } finally {
    await worker.terminate()
  }
}

/**
 * Runs the gateway benchmark and prints a table. Returns the figures: latencies in ms
 * (`direct_p50_ms`, `gateway_p50_ms`, `added_p50_ms`, and the p99s), refusals per second
 * (`refusals_per_s`) and the bare-server ceiling (`plain_503_per_s`). Rejects if the platform
 * cannot boot.
 */
export async function benchGateway(opts: { requests?: number; loadMs?: number } = {}): Promise<Record<string, number>> {
  const requests = opts.requests ?? 2000
  const loadMs = opts.loadMs ?? 3000
  const prevLevel = process.env.PLATFORM_LOG_LEVEL
  process.env.PLATFORM_LOG_LEVEL ??= "error"
  const upstream = await startOpenAIUpstream({ record: false })
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gateway-bench-"))
  const tiny = path.join(dir, "tiny.gguf")
  writeTinyGguf(tiny)
  const platform = await startPlatform({
    cwd: ROOT,
    yaml: `
log: { level: error }
listeners:
  - name: gateway
    port: 0
plugins:
  gateway:
    token: ${TOKEN}
    engines:
      - { id: fast, kind: upstream, url: "${upstream.url}" }
      - { id: held, kind: upstream, url: "${upstream.url}" }
      - { id: tiny, kind: llama-cpp, model_path: "${tiny}", threads: 1, context_size: 1024, batch_size: 256 }
`
  })
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  try {
    const gw = platform.url("gateway") + "/v1/chat/completions"
    const direct = upstream.url + "/chat/completions"
    const body = JSON.stringify({ model: "fast", messages: [{ role: "user", content: "hello gateway bench" }], temperature: 0.5 })

    // 1. Added latency, alternating so both paths see the same machine state.
    for (let i = 0; i < 300; i++) { await post(agent, direct, body); await post(agent, gw, body, TOKEN) }
    const a: number[] = [], b: number[] = []
    for (let i = 0; i < requests; i++) {
      a.push((await post(agent, direct, body)).ms)
      const r = await post(agent, gw, body, TOKEN)
      if (r.status !== 200) throw new Error(`gateway answered ${r.status}`)
      b.push(r.ms)
    }
    a.sort((x, y) => x - y)
    b.sort((x, y) => x - y)

    // 2. Refusals: hold engine `held` with a slow call, then flood it.
    const hold = post(new http.Agent(), gw, JSON.stringify({ model: "held", messages: [{ content: "x" }], fixture_delay_ms: loadMs + 3000 }), TOKEN)
    await new Promise((r) => setTimeout(r, 100))
    const cpu0 = process.cpuUsage(), wall0 = performance.now()
    const refusal = await load(gw, JSON.stringify({ model: "held", messages: [{ role: "user", content: "x" }] }), loadMs)
    const cpu = process.cpuUsage(cpu0), wall = performance.now() - wall0

    // 3. The ceiling of this client on this machine: a bare node:http server answering 503.
    const bare = http.createServer((req, res) => {
      req.resume()
      req.on("end", () => {
        res.writeHead(503, { "content-type": "application/json", "retry-after": "1" })
        res.end('{"error":{"message":"busy","type":"server_error","param":null,"code":"engine_busy"}}')
      })
    })
    await new Promise<void>((r) => bare.listen(0, "127.0.0.1", r))
    const plain = await load(`http://127.0.0.1:${(bare.address() as AddressInfo).port}/v1/chat/completions`, "{}", Math.min(loadMs, 2000))
    bare.close()

    const scope = Effect.runSync(Scope.make())
    const effectServer = http.createServer()
    const busy = HttpServerResponse.text('{"error":{"message":"busy","type":"server_error","param":null,"code":"engine_busy"}}', { status: 503, contentType: "application/json", headers: { "retry-after": "1" } })
    await Effect.runPromise(Effect.gen(function* () {
      const server = yield* NodeHttpServer.make(() => effectServer, { port: 0, host: "127.0.0.1" })
      yield* HttpServer.serveEffect(HttpRouter.empty.pipe(HttpRouter.post("/v1/chat/completions", Effect.succeed(busy)))).pipe(
        Effect.provideService(HttpServer.HttpServer, server),
        Effect.provide(NodeHttpServer.layerContext)
      )
    }).pipe(Scope.extend(scope)))
    // 4. The tiny llama engine: first streamed token and tokens per second.
    for (let i = 0; i < 100; i++) {
      const st = (await (await fetch(platform.url("gateway") + "/status")).json()) as { models: Array<{ id: string; available: boolean }> }
      if (st.models.find((m) => m.id === "tiny")?.available) break
      await new Promise((r) => setTimeout(r, 50))
    }
    const ttft: number[] = []
    let tokens = 0, genMs = 0
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now()
      const res = await fetch(gw, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ model: "tiny", stream: true, max_tokens: 200, seed: i, stream_options: { include_usage: true }, messages: [{ role: "user", content: "hello" }] })
      })
      let first = true, text = ""
      for await (const b of res.body as unknown as AsyncIterable<Uint8Array>) {
        text += Buffer.from(b).toString("utf8")
        if (first && text.includes('"content":"') && !text.endsWith('"content":""')) {
          // The role chunk carries an empty content; the first generated text comes after it.
          if ((text.match(/"content":"/g) ?? []).length >= 2) { first = false; ttft.push(performance.now() - t0) }
        }
      }
      genMs += performance.now() - t0
      tokens += Number(/"completion_tokens":(\d+)/.exec(text)?.[1] ?? 0)
    }
    ttft.sort((x, y) => x - y)

    const effectOnly = await load(`http://127.0.0.1:${(effectServer.address() as AddressInfo).port}/v1/chat/completions`, "{}", Math.min(loadMs, 2000))
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await hold

    const figures = {
      direct_p50_ms: quantile(a, 0.5),
      direct_p99_ms: quantile(a, 0.99),
      gateway_p50_ms: quantile(b, 0.5),
      gateway_p99_ms: quantile(b, 0.99),
      added_p50_ms: quantile(b, 0.5) - quantile(a, 0.5),
      added_p99_ms: quantile(b, 0.99) - quantile(a, 0.99),
      refusals_per_s: Math.round(refusal.perSecond * ((refusal.statuses["503"] ?? 0) / Math.max(1, Object.values(refusal.statuses).reduce((x, y) => x + y, 0)))),
      plain_503_per_s: Math.round(plain.perSecond),
      effect_server_503_per_s: Math.round(effectOnly.perSecond),
      tiny_llama_ttft_p50_ms: quantile(ttft, 0.5),
      tiny_llama_tokens_per_s: Math.round(tokens / (genMs / 1000))
    }
    console.log("gateway bench (loopback, same process)")
    console.log(`  upstream direct    p50 ${figures.direct_p50_ms.toFixed(3)} ms  p99 ${figures.direct_p99_ms.toFixed(3)} ms  (n=${requests})`)
    console.log(`  through gateway    p50 ${figures.gateway_p50_ms.toFixed(3)} ms  p99 ${figures.gateway_p99_ms.toFixed(3)} ms`)
    console.log(`  added by gateway   p50 ${figures.added_p50_ms.toFixed(3)} ms  p99 ${figures.added_p99_ms.toFixed(3)} ms  (target p50 < 1 ms)`)
    console.log(`  busy-engine 503s   ${figures.refusals_per_s}/s  statuses ${JSON.stringify(refusal.statuses)}  (target 5000/s)`)
    console.log(`  process CPU during the flood: ${(((cpu.user + cpu.system) / 1000) / wall * 100).toFixed(0)}% of one core (server + load generator)`)
    console.log(`  bare node:http 503 ${figures.plain_503_per_s}/s  (this client's ceiling here)`)
    console.log(`  bare Effect server ${figures.effect_server_503_per_s}/s  (one constant route on @effect/platform-node: the kernel's HTTP stack)`)
    console.log(`  tiny llama engine  first token p50 ${figures.tiny_llama_ttft_p50_ms.toFixed(2)} ms, ${figures.tiny_llama_tokens_per_s} tokens/s streamed (1 thread)`)
    return figures
  } finally {
    agent.destroy()
    await platform.stop()
    await upstream.close()
    fs.rmSync(dir, { recursive: true, force: true })
    if (prevLevel === undefined) delete process.env.PLATFORM_LOG_LEVEL
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  benchGateway().then(() => process.exit(0), (e) => { console.error(e); process.exit(1) })
}
