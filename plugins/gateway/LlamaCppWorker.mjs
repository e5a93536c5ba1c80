// Entry of a llama-cpp engine's worker thread (see WorkerEngine.ts). From the compiled build
// (dist/) the worker module sits beside this file as JavaScript; from the sources, tsx's loader is
// registered in this thread first (loader hooks are per thread) to load the TypeScript one.
import { existsSync } from "node:fs"

if (existsSync(new URL("./LlamaCppWorker.js", import.meta.url))) {
  await import("./LlamaCppWorker.js")
} else {
  const { register } = await import("tsx/esm/api")
  register()
  await import("./LlamaCppWorker.ts")
}
