// Entry of a simulator worker thread (piscina loads it; see SimulatorPool.ts). From the compiled
// build (dist/) the worker module sits beside this file as JavaScript; from the sources, tsx's
// loader is registered in this thread first (loader hooks are per thread) to load the TypeScript.
import { existsSync } from "node:fs"

let handle
if (existsSync(new URL("./SimulatorWorker.js", import.meta.url))) {
  handle = (await import("./SimulatorWorker.js")).default
} else {
  const { register } = await import("tsx/esm/api")
  register()
  handle = (await import("./SimulatorWorker.ts")).default
}
export default handle
