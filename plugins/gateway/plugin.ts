/**
 * The `gateway` plugin: an OpenAI-compatible inference gateway (spec: inference-gateway.md) on
 * listener `gateway`, serving llama.cpp engines in process and upstream OpenAI servers.
 */
import { definePlugin, lazySetup } from "../../core/Plugin.ts"
import { GatewayConfig } from "./Config.ts"

const setup = lazySetup(() => import("./Setup.ts"))

export default definePlugin({
  name: "gateway",
  version: "1.0.0",
  description: "OpenAI-compatible inference gateway: llama.cpp engines in process and upstream OpenAI servers, one generation at a time per engine",
  defaultListener: "gateway",
  config: GatewayConfig,
  setup
})
