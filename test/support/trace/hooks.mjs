// Module-load hooks: appends each loaded module's URL, one per line, to $MODULE_TRACE_FILE.
import { appendFileSync } from "node:fs"

export async function load(url, context, nextLoad) {
  const result = await nextLoad(url, context)
  if (process.env.MODULE_TRACE_FILE) appendFileSync(process.env.MODULE_TRACE_FILE, `${url}\n`)
  return result
}
