/**
 * chip-sim atlas: how long the derivation takes and how many atlas queries are answered per
 * second, in process (the query functions plus JSON encoding) and over HTTP through the real
 * kernel (8 requests in flight, keep-alive, loopback, ETag hashing and caching headers included).
 *
 * The query mix, in turn: `/v1/node/{name}`, `/v1/neighbors` depth 2, `/v1/tags` (a role
 * filter, one page), `/v1/groups?kind=`, `/v1/groups/{key}`, `/v1/neighbors` depth 4 via gate.
 * `ATLAS_BENCH_SECONDS` (default 2) per measurement; the netlist folder from `CHIP_SIM_NETLIST`
 * (default ../shared/chip-sim/netlist). Run: `npm run bench -- atlas`.
 */
import * as path from "node:path"
import { ROOT, startPlatform } from "../core/Kernel.ts"
import { loadAtlas } from "../plugins/chip-sim/atlas/Atlas.ts"
import { groupDetail, listGroups, neighbors, nodeDetail, tags } from "../plugins/chip-sim/atlas/Query.ts"

const SECONDS = Number(process.env.ATLAS_BENCH_SECONDS ?? 2)
const NETLIST = path.resolve(ROOT, process.env.CHIP_SIM_NETLIST ?? "../shared/chip-sim/netlist")
const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const PATHS = [
  "/v1/node/a0",
  "/v1/neighbors?node=alu3&depth=2",
  "/v1/tags?role=decode&limit=50",
  "/v1/groups?kind=pipe",
  "/v1/groups/regs:A",
  "/v1/neighbors?node=%23100&depth=4&via=gate&limit=500"
]

export const benchAtlas = async (): Promise<Record<string, number>> => {
  const derive: Array<number> = []
  let atlas = loadAtlas(NETLIST)
  for (let i = 0; i < 3; i++) {
    const t = performance.now()
    atlas = loadAtlas(NETLIST)
    derive.push(performance.now() - t)
  }
  const queries: Array<() => unknown> = [
    () => nodeDetail(atlas, "a0"),
    () => neighbors(atlas, { node: "alu3", depth: 2 }),
    () => tags(atlas, { role: "decode", limit: 50 }),
    () => listGroups(atlas, { kind: "pipe" }),
    () => groupDetail(atlas, "regs:A"),
    () => neighbors(atlas, { node: "#100", depth: 4, via: "gate", limit: 500 })
  ]
  let n = 0
  const t0 = performance.now()
  while (performance.now() - t0 < SECONDS * 1000) for (const q of queries) JSON.stringify(q()), n++
  const inProcess = n / ((performance.now() - t0) / 1000)

  const platform = await startPlatform({ cwd: ROOT, yaml: `listeners:\n  - { name: chip, port: 0 }\nplugins:\n  chip-sim:\n    netlist_dir: ${NETLIST}\n    workers: 0\n` })
  try {
    const base = `${platform.url("chip")}/api`
    for (const p of PATHS) if ((await fetch(base + p)).status !== 200) throw new Error(`${p} did not answer 200`)
    let done = 0
    const until = performance.now() + SECONDS * 1000
    const t1 = performance.now()
    await Promise.all(Array.from({ length: 8 }, async (_, w) => {
      for (let i = w; performance.now() < until; i++) {
        const r = await fetch(base + PATHS[i % PATHS.length]!)
        await r.arrayBuffer()
        done++
      }
    }))
    const overHttp = done / ((performance.now() - t1) / 1000)
    const out = {
      derive_ms: Math.round(median(derive)),
      in_process_queries_per_s: Math.round(inProcess),
      http_queries_per_s: Math.round(overHttp)
    }
    console.log(out)
    return out
  } finally {
    await platform.stop()
  }
}
