/** The `workspaces` plugin's implementation, imported when the plugin is set up (see `plugin.ts`). */
import * as Effect from "effect/Effect"
import { PluginBootError, type PluginContext } from "../../core/Plugin.ts"
import { Extensions, GraphOpRegistry } from "../../core/Services.ts"
import { graphRunObservers } from "../job-graph/Contract.ts"
import { jobsStorage } from "../jobs/Contract.ts"
import { routes } from "./Http.ts"
import type { WorkspacesConfig } from "./plugin.ts"
import { make } from "./Workspaces.ts"

/** `setup` of the plugin: the service over the jobs file store, its routes and its run observer. */
export const setup = (ctx: PluginContext<WorkspacesConfig>) =>
  Effect.gen(function*() {
    const storage = jobsStorage(yield* Extensions)
    if (!storage) return yield* Effect.fail(new PluginBootError({ reason: "the jobs plugin shares no storage (is it enabled?)" }))
    const ops = yield* GraphOpRegistry
    const service = make({ storage, ops, limits: { embedBatchSize: ctx.config.embed_batch_size, maxParallel: 4, fetchTimeoutMs: 30_000 } })
    return {
      routes: routes(service),
      extensions: graphRunObservers(service.observer),
      status: () => ({ file_store: storage.backend, locks: storage.jobsBackend === "redis" ? "redis" : "in-process" })
    }
  })
