/** The `gateway` plugin's implementation, imported when the plugin is set up (see `plugin.ts`). */
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import { routes } from "./Api.ts"
import type { Engine } from "./Engine.ts"
import { Gateway } from "./Gateway.ts"
import { cpuFacts, threadPolicy } from "./Threads.ts"
import { UpstreamEngine } from "./UpstreamEngine.ts"
import { WorkerEngine } from "./WorkerEngine.ts"
import type { PluginContext } from "../../core/Plugin.ts"
import type { GatewayConfig as Config } from "./Config.ts"

/**
 * Builds the engines and the gateway for a decoded config. Model paths resolve against
 * `configDir`; each llama-cpp engine runs in its own worker thread with the thread counts of the
 * thread policy (`Threads.ts`); `log` gets one line per unavailable engine. With `start: false`
 * (the kernel's `inspect` mode: `plugins list`, `config validate`) no worker starts and no model
 * loads. Never fails: engines that cannot serve stay registered as unavailable.
 */
export const makeGateway = (config: Config, configDir: string, log: (line: string) => void, start = true): Gateway => {
  const facts = cpuFacts()
  const cpuEngines = config.engines.filter((e) => e.kind === "llama-cpp" && e.device === "cpu").length
  const engines: Engine[] = config.engines.map((e) =>
    e.kind === "llama-cpp"
      ? WorkerEngine.make(e, configDir, threadPolicy(facts, e, { reserved: config.reserved_cores, cpuEngines }), log, start)
      : UpstreamEngine.make(e, log)
  )
  return new Gateway({
    engines,
    defaultEngine: (config.engines.find((e) => e.default) ?? config.engines[0]!).id,
    token: config.token,
    adminToken: config.admin_token || undefined,
    retryAfterS: config.retry_after_s
  })
}

/**
 * Waits until every llama.cpp engine finished loading (or failed to) and every upstream was
 * probed once (a TCP connect), so `/status` says from the start which engines can serve.
 */
export const engineLoads = (gateway: Gateway): Promise<void> =>
  Promise.all([...gateway.engines.values()].map((e) => (e instanceof WorkerEngine ? e.ready : e instanceof UpstreamEngine ? e.probe() : undefined))).then(() => undefined)

/** `setup` of the plugin: the engines (each llama-cpp engine in its worker thread, none started when inspecting) and the gateway's routes; models load in `start`. */
export const setup = (ctx: PluginContext<Config>) =>
  Effect.gen(function* () {
    // Engines log from callbacks outside any fiber; the captured runtime keeps the kernel's logger.
    const runSync = Runtime.runSync(yield* Effect.runtime<never>())
    const gateway = yield* Effect.acquireRelease(
      Effect.sync(() => makeGateway(ctx.config, ctx.configDir, (line) => runSync(Effect.logWarning(line)), ctx.mode === "serve")),
      (g) => Effect.promise(() => g.close())
    )
    if (ctx.config.token.length < 16 || ctx.config.token === "change-me") {
      // Never the token itself: only that it is weak.
      yield* Effect.logWarning("gateway: the /v1 bearer token is a default or shorter than 16 characters; set GATEWAY_TOKEN")
    }
    return {
      routes: routes(gateway),
      // Models load in the background so a large GGUF never holds up the platform's boot;
      // until loaded an engine is listed with `available: false`.
      start: Effect.promise(() => engineLoads(gateway)).pipe(
        Effect.tap(() => Effect.logInfo(`gateway: engines ${[...gateway.engines.values()].map((e) =>
          `${e.id}=${e.unavailable() === undefined ? "up" : "down"}${e instanceof WorkerEngine ? ` (threads ${e.threads.threads}/${e.threads.threadsBatch} ${e.threads.from})` : ""}`).join(", ")}`))
      ),
      status: () => ({ engines: gateway.status().models })
    }
  })
