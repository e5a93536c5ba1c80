/**
 * Plugin `jobs`: the asynchronous Jobs API (research-jobs spec) on listener `jobs` (port 9003 by
 * default) and the `files` store served beside it at `/files`. It builds the jobs runtime
 * (`runtime/`) from its config and runs workers. It owns the `JobTypes` extension point
 * (`Contract.ts`): job plugins depend on `jobs` and register their types there; types are looked
 * up when a job is submitted or delivered, so plugins set up after this one still plug in.
 *
 * The plugin does the same in every process: API routes, and workers when `workers: true`. A
 * workers-only process (`platform worker`, the worker thread) is the kernel booting this plugin
 * and its extenders from a config with `workers: true` and no listener (see `Workers.ts`).
 * This file is the declaration; the implementation (`Setup.ts`: BullMQ, ioredis, the HTTP
 * handlers) is imported when the plugin is set up.
 */
import * as Schema from "effect/Schema"
import { definePlugin, lazySetup } from "../../core/Plugin.ts"
import { FilesSettings } from "./runtime/FileStore.ts"
import { JobsSettings } from "./runtime/Settings.ts"

/** Config of `plugins.jobs` in platform.yaml: the runtime settings plus the file store. */
export const JobsConfig = Schema.extend(
  JobsSettings,
  Schema.Struct({
    files: Schema.optionalWith(FilesSettings, { default: () => Schema.decodeSync(FilesSettings)({}) }),
    events_heartbeat_s: Schema.optionalWith(Schema.Number.pipe(Schema.positive()).annotations({ description: "keep-alive comment interval of the SSE progress stream, seconds" }), { default: () => 15 }),
    geo_router_url: Schema.optionalWith(
      Schema.NullOr(Schema.String.pipe(Schema.pattern(/^https?:\/\/\S+$/))).annotations({
        description: "Cluster API (http://host:port) whose geo router resolves `geo` in a process that registers none itself (`platform worker`); null: the router registered in this process, if any (the worker thread gets the serving thread's on its own) (default null)"
      }),
      { default: () => null }
    ),
    geo_router_token: Schema.optionalWith(
      Schema.String.annotations({ description: "admin bearer token for geo_router_url when that API listens beyond loopback; write ${CLUSTER_ADMIN_TOKEN:-} (default \"\")" }),
      { default: () => "" }
    )
  })
).annotations({ identifier: "JobsConfig" })
export type JobsConfig = typeof JobsConfig.Type

const setup = lazySetup(() => import("./Setup.ts"))

export default definePlugin({
  name: "jobs",
  version: "0.1.0",
  description: "Asynchronous Jobs API (submit, poll, list, cancel, SSE progress) with embedded or Redis/BullMQ queues and workers, plus the files store.",
  defaultListener: "jobs",
  config: JobsConfig,
  setup
})
