/**
 * Services the kernel provides to every plugin's `setup` and `start`: the contribution
 * registries (the kernel's own kinds and the plugins' extension points) and the platform facts (data directory, listeners).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { GraphOperation, McpTool } from "./Contribution.ts"
import type * as ExtensionPoint from "./ExtensionPoint.ts"
import type { ListenerInfo } from "./Plugin.ts"
import * as Registry from "./Registry.ts"

/** The registries of every extension point (`ExtensionPoint.ts`); a point's owner reads its own. */
export class Extensions extends Effect.Service<Extensions>()("@platform/core/Extensions", {
  sync: (): ExtensionPoint.Extensions => {
    const points = new Map<string, Registry.Registry<any>>()
    return {
      registry: <T>(point: ExtensionPoint.ExtensionPoint<T>): Registry.Registry<T> => {
        let registry = points.get(point.name)
        if (!registry) points.set(point.name, (registry = Registry.make<T>(point.kind)))
        return registry
      }
    }
  }
}) {}

/** Graph operations contributed by plugins; the graph runner reads it. */
export class GraphOpRegistry extends Effect.Service<GraphOpRegistry>()("@platform/core/GraphOpRegistry", {
  sync: () => Registry.make<GraphOperation>("graph operation")
}) {}

/** MCP tools contributed by plugins, per listener (`listener/tool` ids are unique per listener). */
export class McpToolRegistry extends Effect.Service<McpToolRegistry>()("@platform/core/McpToolRegistry", {
  sync: () => Registry.make<McpTool & { listener: string }>("MCP tool")
}) {}

/** Platform-wide facts. `listener(name)` is defined once listeners are bound. */
export class PlatformInfo extends Context.Tag("@platform/core/PlatformInfo")<PlatformInfo, {
  readonly dataDir: string
  readonly configDir: string
  readonly listener: (name: string) => ListenerInfo | undefined
}>() {}

/** The registries, empty: what a kernel boots into. */
export const layerRegistries = Layer.mergeAll(Extensions.Default, GraphOpRegistry.Default, McpToolRegistry.Default)

/** Union of the services above, as an Effect requirement. */
export type KernelServices = Extensions | GraphOpRegistry | McpToolRegistry | PlatformInfo
