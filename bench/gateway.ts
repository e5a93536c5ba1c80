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
 * 5. Contention (issue 19), for the default thread policy and for `threads` = all cores, side by
 *    side: the tiny engine generating 200-token replies back to back, first on an otherwise idle
 *    platform, then with a second process spinning on one core while a prober sends one chat
 *    request at a time (each a busy 503). Reports tokens/s, the 200-token reply's time (idle and
 *    under load) and the 503 latency p50/p99. Generations are streamed and each phase has a fixed
 *    window, so a policy that collapses is measured by the tokens it managed, not waited for.
 *
 * Everything runs on loopback in this process: the real kernel (`startPlatform`), the gateway
 * plugin and the fixture upstream; the load generators run in worker threads.
 */
import { spawn } from "node:child_process"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Worker } from "node:worker_threads"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { ROOT, startPlatform } from "../core/Kernel.ts"
import * as fs from "node:fs"
import * as os from "node:os"
import { writeTinyGguf } from "../scripts/make-tiny-gguf.ts"
import { startOpenAIUpstream } from "../test/fixtures/openai-upstream.ts"
import { gatewayYaml } from "../test/plugins/gateway/http.ts"

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

// Contention clients. `gen`: streamed 200-token chat replies back to back for `ms` (the one in
// flight at the end is cut, its tokens counted); `probe`: one chat request at a time, 5 ms apart.
const CONTENTION = `
const { parentPort, workerData } = require("node:worker_threads")
const http = require("node:http")
const { base, token, role, ms } = workerData
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
const end = performance.now() + ms
const post = (body, onData) => new Promise((resolve) => {
  const t0 = performance.now()
  const req = http.request(base + "/v1/chat/completions", { method: "POST", agent, headers: { "content-type": "application/json", authorization: "Bearer " + token } }, (res) => {
    let text = ""
    res.on("data", (b) => { text += b; if (onData) onData(text) })
    res.on("end", () => resolve({ status: res.statusCode, ms: performance.now() - t0, text, complete: true }))
    res.on("error", () => resolve({ status: res.statusCode, ms: performance.now() - t0, text, complete: false }))
  })
  req.on("error", () => resolve({ status: 0, ms: performance.now() - t0, text: "", complete: false }))
  const cut = setTimeout(() => req.destroy(), Math.max(0, end - performance.now()))
  req.on("close", () => clearTimeout(cut))
  req.end(JSON.stringify(body))
})
;(async () => {
  const out = []
  let seed = 0
  while (performance.now() < end) {
    if (role === "gen") {
      const r = await post({ model: "tiny", stream: true, max_tokens: 200, seed: seed++, logit_bias: { "4": -100 }, stream_options: { include_usage: true }, messages: [{ role: "user", content: "hello there" }] })
      const tokens = (r.text.match(/"delta":\\{"content":/g) || []).length
      const usage = /"completion_tokens":(\\d+)/.exec(r.text)
      out.push({ status: r.status, ms: r.ms, tokens: usage ? Number(usage[1]) : tokens, complete: !!usage })
    } else {
      const r = await post({ model: "tiny", max_tokens: 1, messages: [{ role: "user", content: "hi" }] })
      out.push({ status: r.status, ms: r.ms })
      await new Promise((r) => setTimeout(r, 5))
    }
  }
  agent.destroy()
  parentPort.postMessage(out)
})()
`

const contentionClient = (base: string, role: "gen" | "probe", ms: number): Promise<Array<{ status: number; ms: number; tokens?: number; complete?: boolean }>> =>
  new Promise((resolve, reject) => {
    const worker = new Worker(CONTENTION, { eval: true, workerData: { base, token: TOKEN, role, ms } })
    worker.once("message", (m) => { resolve(m); void worker.terminate() })
    worker.once("error", reject)
  })

/** Figures of one thread policy under contention (ms, tokens/s). */
interface ContentionFigures {
  threads: number
  idle_tokens_per_s: number
  idle_200_p50_ms: number
  load_tokens_per_s: number
  load_200_p50_ms: number
  load_200_completed: number
  busy_503_p50_ms: number
  busy_503_p99_ms: number
  busy_503_max_ms: number
  busy_503_n: number
}

/**
 * Boots the platform with the tiny engine at `threads` (undefined: the default policy), measures
 * generation alone for `idleMs`, then generation plus a busy 503 prober with a second process
 * spinning on one core for `loadMs`.
 */
const contention = async (tiny: string, threads: number | undefined, idleMs: number, loadMs: number): Promise<ContentionFigures> => {
  const platform = await startPlatform({
    cwd: ROOT,
    yaml: gatewayYaml(TOKEN, [`id: tiny, kind: llama-cpp, model_path: "${tiny}", ${threads ? `threads: ${threads}, ` : ""}context_size: 1024, batch_size: 256`])
  })
  try {
    const base = platform.url("gateway")
    let health: { engines: Array<{ available: boolean; threads?: number }> } = { engines: [] }
    for (let i = 0; i < 600; i++) {
      health = (await (await fetch(base + "/healthz")).json()) as typeof health
      if (health.engines[0]?.available) break
      await new Promise((r) => setTimeout(r, 50))
    }
    const tokensPerS = (runs: Array<{ ms: number; tokens?: number }>, ms: number) => Math.round(runs.reduce((a, r) => a + (r.tokens ?? 0), 0) / (ms / 1000))
    const fullRuns = (runs: Array<{ ms: number; tokens?: number; complete?: boolean }>) => runs.filter((r) => r.complete && r.tokens === 200).map((r) => r.ms).sort((a, b) => a - b)
    const idle = await contentionClient(base, "gen", idleMs)
    const spinner = spawn(process.execPath, ["-e", "for(;;){}"], { stdio: "ignore" })
    try {
      await new Promise((r) => setTimeout(r, 200))
      const [gen, probe] = await Promise.all([
        contentionClient(base, "gen", loadMs),
        // The prober starts once the first generation is under way.
        new Promise((r) => setTimeout(r, 100)).then(() => contentionClient(base, "probe", loadMs - 200))
      ])
      const refusals = probe.filter((r) => r.status === 503).map((r) => r.ms).sort((a, b) => a - b)
      const idleFull = fullRuns(idle), loadFull = fullRuns(gen)
      return {
        threads: health.engines[0]?.threads ?? threads ?? 0,
        idle_tokens_per_s: tokensPerS(idle, idleMs),
        idle_200_p50_ms: idleFull.length ? quantile(idleFull, 0.5) : NaN,
        load_tokens_per_s: tokensPerS(gen, loadMs),
        load_200_p50_ms: loadFull.length ? quantile(loadFull, 0.5) : NaN,
        load_200_completed: loadFull.length,
        busy_503_p50_ms: refusals.length ? quantile(refusals, 0.5) : NaN,
        busy_503_p99_ms: refusals.length ? quantile(refusals, 0.99) : NaN,
        busy_503_max_ms: refusals.length ? refusals[refusals.length - 1]! : NaN,
        busy_503_n: refusals.length
      }
    } finally {
      spinner.kill()
    }
  } finally {
    await platform.stop()
  }
}

/**
 * Runs the contention comparison alone (`bench/gateway.ts contention`, and the last part of
 * `benchGateway`): prints both policies side by side and returns their figures, prefixed
 * `default_` and `all_cores_`.
 */
export async function benchGatewayContention(opts: { idleMs?: number; loadMs?: number } = {}): Promise<Record<string, number>> {
  const idleMs = opts.idleMs ?? 3000, loadMs = opts.loadMs ?? 6000
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gateway-contention-"))
  const tiny = path.join(dir, "tiny.gguf")
  writeTinyGguf(tiny)
  try {
    const all = os.availableParallelism()
    const byPolicy = { default: await contention(tiny, undefined, idleMs, loadMs), all_cores: await contention(tiny, all, idleMs, loadMs) }
    const row = (label: string, f: (x: ContentionFigures) => string) => `  ${label.padEnd(34)}${f(byPolicy.default).padStart(16)}${f(byPolicy.all_cores).padStart(16)}`
    const ms = (v: number) => (Number.isNaN(v) ? "none" : `${v.toFixed(1)} ms`)
    console.log(`gateway under contention (tiny model, 200-token replies; a second process spinning on one core during "load"; ${all} CPUs)`)
    console.log(`  ${"".padEnd(34)}${"default policy".padStart(16)}${"all cores".padStart(16)}`)
    console.log(row("threads", (x) => String(x.threads)))
    console.log(row("tokens/s idle", (x) => String(x.idle_tokens_per_s)))
    console.log(row("200-token reply idle, p50", (x) => ms(x.idle_200_p50_ms)))
    console.log(row("tokens/s under load", (x) => String(x.load_tokens_per_s)))
    console.log(row("200-token reply under load, p50", (x) => ms(x.load_200_p50_ms)))
    console.log(row(`200-token replies done in ${loadMs / 1000} s`, (x) => String(x.load_200_completed)))
    console.log(row("busy 503 p50", (x) => ms(x.busy_503_p50_ms)))
    console.log(row("busy 503 p99 (target < 50 ms)", (x) => ms(x.busy_503_p99_ms)))
    console.log(row("busy 503 max", (x) => ms(x.busy_503_max_ms)))
    console.log(row("busy 503s measured", (x) => String(x.busy_503_n)))
    console.log(row("load/idle 200-token time (target <= 2)", (x) => (Number.isNaN(x.load_200_p50_ms / x.idle_200_p50_ms) ? "n/a" : (x.load_200_p50_ms / x.idle_200_p50_ms).toFixed(2))))
    return Object.fromEntries(Object.entries(byPolicy).flatMap(([policy, f]) => Object.entries(f).map(([k, v]) => [`${policy}_${k}`, v])))
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
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
    yaml: gatewayYaml(TOKEN, [
      `id: fast, kind: upstream, url: "${upstream.url}"`,
      `id: held, kind: upstream, url: "${upstream.url}"`,
      `id: tiny, kind: llama-cpp, model_path: "${tiny}", threads: 1, context_size: 1024, batch_size: 256`
    ])
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
    return { ...figures, ...(await benchGatewayContention()) }
  } finally {
    agent.destroy()
    await platform.stop()
    await upstream.close()
    fs.rmSync(dir, { recursive: true, force: true })
    if (prevLevel === undefined) delete process.env.PLATFORM_LOG_LEVEL
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.env.PLATFORM_LOG_LEVEL ??= "error"
  ;(process.argv[2] === "contention" ? benchGatewayContention() : benchGateway()).then(() => process.exit(0), (e) => { console.error(e); process.exit(1) })
}
