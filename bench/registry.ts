/**
 * Registry reads per second, with and without `If-None-Match`, on the embedded (SQLite) and the
 * PostgreSQL store: the real platform (kernel + registry, chip-sim minting the seed cartridges)
 * answering `GET /api/v1/registry` and `GET /api/v1/registry/roms?limit=50` over a catalogue of
 * 20 builders with avatars and 100 cartridges with covers.
 *
 * The load generator is autocannon in a worker thread (16 keep-alive connections); each figure
 * counts `REGISTRY_BENCH_N` requests (default 3000) after a 200-request warm-up, every answer
 * checked (200, or 304 with the ETag). A 304 still reads the catalogue version (one query) but
 * renders nothing: the cached body's hash answers it.
 *
 * Figures: `{embedded,postgres}_{index,roms}_{200,304}_per_s`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Worker as Thread } from "node:worker_threads"
import { ROOT, startPlatform } from "../core/Kernel.ts"
import { withRegistry } from "../plugins/registry/commands/shared.ts"
import { art, call, createDatabase, mint, NETLIST, tempDir } from "../test/plugins/registry/support.ts"

const N = Number(process.env.REGISTRY_BENCH_N ?? 3000)
const WIDTH = 16

const LOADER = `
const { workerData, parentPort } = require("node:worker_threads")
const autocannon = require(${JSON.stringify(path.join(ROOT, "node_modules/autocannon/autocannon.js"))})
const { url, headers, expect, amount } = workerData
let answered = 0, bad = 0, over = false
const start = process.hrtime.bigint()
const finish = (m) => { if (over) return; over = true; instance.stop(); parentPort.postMessage(m) }
const instance = autocannon({ url, headers, connections: ${WIDTH}, amount })
instance.on("response", (client, status) => {
  if (status !== expect) bad++
  if (++answered === amount) finish({ bad, s: Number(process.hrtime.bigint() - start) / 1e9 })
})
instance.on("reqError", (e) => finish({ error: e.message }))
`

/** Requests per second of `amount` GETs of `url` (every answer must be `expect`). */
const load = (url: string, headers: Record<string, string>, expect: number, amount: number): Promise<number> =>
  new Promise((resolve, reject) => {
    const t = new Thread(LOADER, { eval: true, workerData: { url, headers, expect, amount } })
    t.once("message", (m: { bad?: number; s?: number; error?: string }) => {
      void t.terminate()
      if (m.error) reject(new Error(m.error))
      else if (m.bad) reject(new Error(`${m.bad} of ${amount} answers to ${url} were not ${expect}`))
      else resolve(Math.round(amount / m.s!))
    })
    t.once("error", reject)
  })

/** Seeds 20 builders (avatars) x 5 cartridges (covers) through the HTTP API. */
const seed = async (base: string, configFile: string, carts: ReadonlyArray<string>) => {
  for (let b = 0; b < 20; b++) {
    const { token } = await withRegistry(configFile, (r) => r.mintToken(`bench ${b}`))
    const handle = `bench-${b}`
    await call(base, "POST", "/v1/registry/claim", { token, body: { handle, name: `Bench ${b}` } })
    await call(base, "PUT", `/v1/registry/b/${handle}/avatar`, { token, body: art(4, 4) })
    for (let k = 0; k < 5; k++) {
      const r = await call(base, "POST", `/v1/registry/b/${handle}/roms`, { token, body: { slug: `rom-${k}`, cartridge: carts[b * 5 + k]!, cover: art(8, 6) } })
      if (r.status !== 201) throw new Error(`seed publish: ${r.status} ${r.text}`)
    }
  }
}

/** The figures of one store. */
const measure = async (store: "embedded" | "postgres", carts: ReadonlyArray<string>, pgUrl: string) => {
  const dir = tempDir()
  const configFile = path.join(dir, "platform.yaml")
  fs.writeFileSync(configFile, `data_dir: ./data\nlisteners:\n  - { name: chip, port: 0 }\nplugins:\n  registry:\n    store: ${store}\n    postgres: { url: "${pgUrl}" }\n    limits: { writes_per_minute: 1000 }\n`)
  const platform = await startPlatform({ file: configFile })
  const base = `${platform.url("chip")}/api`
  const out: Record<string, number> = {}
  try {
    await seed(base, configFile, carts)
    for (const [name, route] of [["index", "/v1/registry"], ["roms", "/v1/registry/roms?limit=50"]] as const) {
      const url = `${base}${route}`
      const etag = (await fetch(url)).headers.get("etag")!
      await load(url, {}, 200, 200)
      out[`${store}_${name}_200_per_s`] = await load(url, {}, 200, N)
      out[`${store}_${name}_304_per_s`] = await load(url, { "if-none-match": etag }, 304, N)
    }
  } finally {
    await platform.stop()
  }
  return out
}

/** The registry read benchmark (see the module comment). */
export const benchRegistry = async (): Promise<Record<string, number>> => {
  const dir = tempDir()
  const minter = await startPlatform({ cwd: dir, yaml: `listeners:\n  - { name: chip, port: 0 }\nplugins:\n  chip-sim: { netlist_dir: ${NETLIST}, workers: 0 }\n` })
  const carts: Array<string> = []
  try {
    for (let n = 0; n < 100; n++) carts.push((await mint(`${minter.url("chip")}/api`, 2000 + n, `bench ${n}`, 0)).toString("base64"))
  } finally {
    await minter.stop()
  }
  const db = await createDatabase()
  try {
    const figures = { ...(await measure("embedded", carts, db.url)), ...(await measure("postgres", carts, db.url)) }
    console.log(JSON.stringify(figures))
    return figures
  } finally {
    await db.drop()
  }
}
