/**
 * Shared helpers of the registry tests: a uniquely named PostgreSQL database on the local server
 * (dropped afterwards), cartridges minted by a real chip-sim, art in the wire form, a small
 * client, and a platform served by a child process (`node --import tsx serve.ts`).
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"
import { ROOT } from "../../../core/Kernel.ts"

/** The machine's PostgreSQL (trust auth), database `postgres` for administration. */
export const PG_ADMIN_URL = process.env.REGISTRY_TEST_PG ?? "postgres://postgres@127.0.0.1:5432/postgres"
/** visual6502 netlist beside the repository (chip-sim mints the test cartridges). */
export const NETLIST = path.resolve(ROOT, "../shared/chip-sim/netlist")

/** A fresh temporary directory. */
export const tempDir = (): string => fs.mkdtempSync(path.join(os.tmpdir(), "registry-test-"))

/** A new, uniquely named database; `drop()` removes it (ending its connections first). */
export const createDatabase = async (): Promise<{ url: string; name: string; drop(): Promise<void> }> => {
  const name = `registry_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  return {
    name,
    url: PG_ADMIN_URL.replace(/\/[^/]*$/, `/${name}`),
    drop: async () => {
      const c = new pg.Client({ connectionString: PG_ADMIN_URL })
      await c.connect()
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await c.end()
    }
  }
}

/** A `w` x `h` picture as tiles of eight strings of `0`-`3`, tile `i` filled with `i % 4`. */
export const art = (w: number, h: number) => ({
  w,
  h,
  tiles: Array.from({ length: w * h }, (_, i) => Array.from({ length: 8 }, (_, y) => `${i % 4}${(y % 4)}`.repeat(4)))
})

/** Source of a small cartridge ROM; `n` changes its bytes (so each is a different cartridge). */
export const romSource = (n: number) => `  .org $0200
frame:  lda #${n % 256}
        sta $0500   ; one cell of the screen
        lda #${Math.floor(n / 256) % 256}
        sta $0501
        lda #1
        sta $0D     ; tick
wait:   lda $0D
        bne wait
        jmp frame
`

/** Mints a cartridge on chip-sim at `chipBase` (`http://.../api`); `frames` 0 skips the run. */
export const mint = async (chipBase: string, n: number, name = `game ${n}`, frames = 1): Promise<Buffer> => {
  const res = await fetch(`${chipBase}/v1/cartridge`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      rom: { source: romSource(n) },
      console: { width: 4, height: 2 },
      tiles: { pixels: [Array(8).fill("00000000"), Array(8).fill("12301230")] },
      meta: { name, author: "test", blurb: "a test cartridge" },
      frames
    })
  })
  if (res.status !== 200) throw new Error(`mint failed: ${res.status} ${await res.text()}`)
  return Buffer.from(await res.arrayBuffer())
}

/** A registry answer: status, headers and JSON body (or undefined). */
export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly body: any
}

/** Requests `base` + `route` with an optional bearer token and JSON body. */
export const call = async (base: string, method: string, route: string, options: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {}): Promise<Answer> => {
  const headers: Record<string, string> = { ...options.headers }
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
  if (options.body !== undefined || options.raw !== undefined) headers["content-type"] = "application/json"
  const res = await fetch(`${base}${route}`, { method, headers, ...(options.raw !== undefined ? { body: options.raw } : options.body !== undefined ? { body: JSON.stringify(options.body) } : {}) })
  const text = await res.text()
  let body: unknown
  try {
    body = text ? JSON.parse(text) : undefined
  } catch {
    body = undefined
  }
  return { status: res.status, headers: res.headers, text, body }
}

/** A platform served by a child process; `output()` is everything it wrote (logs). */
export interface ChildPlatform {
  readonly url: string
  output(): string
  stop(): Promise<void>
}

/** Serves `yaml` (in `dir`) from a child process and resolves once its `chip` listener is up. */
export const serveChild = async (dir: string, yaml: string, env: Record<string, string> = {}): Promise<ChildPlatform> => {
  const file = path.join(dir, `platform-${Math.random().toString(36).slice(2, 8)}.yaml`)
  fs.writeFileSync(file, yaml)
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "test/plugins/registry/serve.ts"), file], {
    cwd: ROOT,
    env: { ...process.env, PLATFORM_LOG_LEVEL: "debug", PLATFORM_LOG_FORMAT: "json", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  child.stdout!.on("data", (d) => (out += d))
  child.stderr!.on("data", (d) => (out += d))
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`child platform did not start:\n${out}`)), 60_000)
    const check = () => {
      const m = /READY (\S+)/.exec(out)
      if (m) {
        clearTimeout(timer)
        resolve(m[1]!)
      }
    }
    child.stdout!.on("data", check)
    child.once("exit", (code) => {
      clearTimeout(timer)
      reject(new Error(`child platform exited ${code}:\n${out}`))
    })
  })
  return {
    url,
    output: () => out,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve()
        child.once("exit", () => resolve())
        child.kill("SIGTERM")
      })
  }
}
