// Entry of a simulator worker thread: registers tsx's loader in this thread (hooks are per
// thread), then loads the TypeScript worker. See SimulatorPool.ts.
import { register } from "tsx/esm/api"

register()
await import("./SimulatorWorker.ts")
