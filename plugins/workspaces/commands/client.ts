/**
 * What the `platform workspaces` commands share: the `--api-url` flag and a small client of the
 * workspace routes of a running Jobs API. API refusals become one readable line (`404: no
 * workspace "ws_x"`) and exit 1; an unreachable API says where it looked.
 */
import { Args, Flags } from "@oclif/core"
import type { PlatformCommand } from "../../../core/Command.ts"

/** `--api-url` (env PLATFORM_API_URL): the Jobs API. */
export const apiUrlFlag = Flags.string({
  summary: "Base URL of the Jobs API (env PLATFORM_API_URL).",
  env: "PLATFORM_API_URL",
  default: "http://127.0.0.1:9003"
})

/** The `ID` argument. */
export const idArg = Args.string({ name: "id", required: true, description: "workspace id (ws_...)" })

/** Calls `method path` on the API at `base`; answers the JSON body of a 2xx, else fails `command` with the API's error. */
export const callApi = async (command: PlatformCommand, base: string, method: string, p: string, body?: unknown): Promise<any> => {
  const url = `${base.replace(/\/+$/, "")}/api/v1/workspaces${p}`
  let r: Response
  try {
    r = await fetch(url, { method, headers: body === undefined ? {} : { "content-type": "application/json" }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
  } catch (e) {
    return command.error(`cannot reach the Jobs API at ${base} (${(e as { cause?: Error }).cause?.message ?? (e as Error).message}); start \`platform serve\` or pass --api-url`, { exit: 1 })
  }
  const text = await r.text()
  let parsed: any = undefined
  try {
    parsed = text ? JSON.parse(text) : undefined
  } catch {
    parsed = text
  }
  if (!r.ok) {
    const detail = Array.isArray(parsed?.detail) ? `: ${parsed.detail.map((d: { loc: Array<string>; msg: string }) => `${d.loc.slice(1).join(".")} ${d.msg}`).join("; ")}` : ""
    return command.error(`${r.status}: ${parsed?.error ?? text}${detail}`, { exit: 1 })
  }
  return parsed
}

/** `bytes` in B, KiB, MiB or GiB. */
export const size = (bytes: number): string => {
  const units = ["B", "KiB", "MiB", "GiB"]
  let v = bytes
  let u = 0
  while (v >= 1024 && u < units.length - 1) (v /= 1024), u++
  return u === 0 ? `${v} B` : `${v.toFixed(1)} ${units[u]}`
}
