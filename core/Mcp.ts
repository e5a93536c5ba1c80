/**
 * Serves the MCP tools contributed to a listener at `POST /api/mcp`: Streamable HTTP, stateless
 * (no session id, JSON responses, no event stream), with a fresh `@modelcontextprotocol/sdk`
 * server and transport per request. `GET /api/mcp` answers 405.
 *
 * Tool inputs are decoded with the tool's Effect Schema; a refusal comes back as a normal tool
 * result with `isError` and the reason (MCP convention), never as a JSON-RPC error.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as JSONSchema from "effect/JSONSchema"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type { McpTool } from "./Contribution.ts"
import { issuesOf } from "./Issues.ts"
import * as Route from "./Route.ts"

/** Path of the MCP endpoint on every listener that has tools. */
export const MCP_PATH = "/api/mcp"

const inputSchemaOf = (tool: McpTool): Record<string, unknown> => {
  const js = JSONSchema.make(tool.input as Schema.Schema<unknown, unknown>) as unknown as Record<string, unknown>
  delete js.$schema
  return js.type === "object" ? js : { type: "object", properties: {} }
}

/**
 * The SDK, imported on the first MCP request rather than with the kernel: it brings zod and
 * zod-to-json-schema (about 150 modules), which every boot would otherwise load.
 */
let sdk: Promise<{
  Server: typeof Server
  Transport: typeof import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js").WebStandardStreamableHTTPServerTransport
  types: typeof import("@modelcontextprotocol/sdk/types.js")
}> | undefined
const loadSdk = () =>
  (sdk ??= Promise.all([
    import("@modelcontextprotocol/sdk/server/index.js"),
    import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"),
    import("@modelcontextprotocol/sdk/types.js")
  ]).then(([server, transport, types]) => ({ Server: server.Server, Transport: transport.WebStandardStreamableHTTPServerTransport, types })))

const makeServer = ({ Server, types: { CallToolRequestSchema, ListToolsRequestSchema } }: Awaited<ReturnType<typeof loadSdk>>, tools: ReadonlyArray<McpTool>, info: { name: string; version: string }) => {
  const server = new Server(info, { capabilities: { tools: {} } })
  const byName = new Map(tools.map((t) => [t.name, t]))
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools.map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: inputSchemaOf(t) as never,
      ...(t.output ? { outputSchema: JSONSchema.make(t.output as Schema.Schema<unknown, unknown>) as never } : {})
    }))
  }))
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = byName.get(request.params.name)
    if (!tool) return { content: [{ type: "text", text: `unknown tool "${request.params.name}"; tools: ${[...byName.keys()].join(", ")}` }], isError: true }
    const decoded = Schema.decodeUnknownEither(tool.input)(request.params.arguments ?? {}, { errors: "all" })
    if (Either.isLeft(decoded)) {
      const issues = issuesOf(decoded.left).map((i) => `${i.path.join(".") || "(arguments)"}: ${i.message}`)
      return { content: [{ type: "text", text: `invalid arguments for ${tool.name}: ${issues.join("; ")}` }], isError: true }
    }
    const result = await Effect.runPromise(tool.handler(decoded.right).pipe(
      Effect.catchAllDefect((d) => Effect.succeed({ content: [{ type: "text" as const, text: `${tool.name} failed: ${String((d as Error)?.message ?? d)}` }], isError: true }))
    ))
    return { ...result, content: [...result.content] } as never
  })
  return server
}

/** The two kernel routes serving `tools` on one listener. */
export const mcpRoutes = (tools: ReadonlyArray<McpTool>, info: { name: string; version: string }): ReadonlyArray<Route.Route> => [
  Route.make({
    method: "POST",
    path: MCP_PATH,
    summary: "Model Context Protocol endpoint (Streamable HTTP, stateless JSON-RPC: initialize, tools/list, tools/call)",
    tags: ["mcp"],
    responses: { 200: { description: "JSON-RPC response" }, 406: { description: "client does not accept application/json and text/event-stream" } },
    handler: ({ request }) =>
      Effect.gen(function* () {
        const web = yield* HttpServerRequest.toWeb(request)
        const response = yield* Effect.tryPromise(async () => {
          const loaded = await loadSdk()
          const transport = new loaded.Transport({ sessionIdGenerator: undefined, enableJsonResponse: true })
          const server = makeServer(loaded, tools, info)
          await server.connect(transport)
          try {
            const res = await transport.handleRequest(web)
            // Read the body before closing: the transport's stream ends with it.
            const body = await res.arrayBuffer()
            return new Response(body.byteLength ? body : null, { status: res.status, headers: res.headers })
          } finally {
            await server.close()
          }
        })
        return HttpServerResponse.fromWeb(response)
      }).pipe(Effect.catchAll((e) => Effect.succeed(HttpServerResponse.unsafeJson({ jsonrpc: "2.0", error: { code: -32603, message: `MCP request failed: ${String(e)}` }, id: null }, { status: 500 }))))
  }),
  Route.make({
    method: "GET",
    path: MCP_PATH,
    summary: "No event stream is offered (stateless server): 405",
    tags: ["mcp"],
    responses: { 405: { description: "method not allowed" } },
    handler: () => Effect.succeed(HttpServerResponse.unsafeJson({ jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed: this MCP server is stateless and opens no event stream; POST JSON-RPC requests" }, id: null }, { status: 405, headers: { allow: "POST" } }))
  })
]
