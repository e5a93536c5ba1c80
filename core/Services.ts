/**
 * Services the kernel provides to every plugin's `setup` and `start`: the contribution
 * registries (the kernel's own kinds and the plugins' extension points) and the platform facts (data directory, listeners).
 */
import { Context } from "effect"
import type { GraphOperation, McpTool } from "./Contribution.ts"
import type * as ExtensionPoint from "./ExtensionPoint.ts"
import type { ListenerInfo } from "./Plugin.ts"
import type { Registry } from "./Registry.ts"

/** The registries of every extension point (`ExtensionPoint.ts`); a point's owner reads its own. */
export class Extensions extends Context.Tag("@platform/core/Extensions")<Extensions, ExtensionPoint.Extensions>() {}

/** Graph operations contributed by plugins; the graph runner reads it. */
export class GraphOpRegistry extends Context.Tag("@platform/core/GraphOpRegistry")<GraphOpRegistry, Registry<GraphOperation>>() {}

/** MCP tools contributed by plugins, per listener (`listener/tool` ids are unique per listener). */
export class McpToolRegistry extends Context.Tag("@platform/core/McpToolRegistry")<McpToolRegistry, Registry<McpTool & { listener: string }>>() {}

/** Platform-wide facts. `listener(name)` is defined once listeners are bound. */
export class PlatformInfo extends Context.Tag("@platform/core/PlatformInfo")<PlatformInfo, {
  readonly dataDir: string
  readonly configDir: string
  readonly listener: (name: string) => ListenerInfo | undefined
}>() {}

/** Union of the services above, as an Effect requirement. */
export type KernelServices = Extensions | GraphOpRegistry | McpToolRegistry | PlatformInfo
