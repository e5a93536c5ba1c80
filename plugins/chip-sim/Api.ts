/**
 * HTTP routes of the chip-simulation service, under `/api`: healthz, meta, nodes, assemble,
 * boot and step (spec sections Endpoints, POST /v1/assemble, POST /v1/boot, POST /v1/step),
 * the console contract and cartridge minting (GET /v1/console, POST /v1/cartridge).
 *
 * Errors: 422 for requests failing their Schema (both/neither of `half_cycles`/`until`, a
 * malformed state blob) and for assembly errors (`{error, line}`); 400 for an unknown watch
 * name or a state blob the engine refuses.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { createHash } from "node:crypto"
import { HttpError } from "../../core/HttpError.ts"
import * as Route from "../../core/Route.ts"
import { AssembleError } from "./assembler/AssembleError.ts"
import { assemble, toAssembleResponse } from "./assembler/Assembler.ts"
import { CartridgeLayoutError, mintCartridge } from "./console/Cartridge.ts"
import { CONSOLE_DOCUMENT } from "./console/Console.ts"
import { TileFormatError } from "./console/Tiles.ts"
import {
  AssembleErrorBody, AssembleResponse, BootRequest, CartridgeLayoutBody, CartridgeRequest, Meta, Rom, StepRequest, StepResponse
} from "./Domain.ts"
import type { ChipSimulator } from "./Simulation.ts"
import type { SimulatorPool } from "./SimulatorPool.ts"
import { TRACE_ROW_COLUMNS_DOC } from "./Simulation.ts"

const errorBody = Schema.Struct({ error: Schema.String })

/** Runs engine work (on the pool), turning its refusals into 400/422 (never a 500 for bad input). */
const engine = <A>(f: () => A | Promise<A>) =>
  Effect.tryPromise({
    try: async () => f(),
    catch: (e) => {
      if (e instanceof AssembleError) return new HttpError({ status: 422, body: { error: e.message, line: e.line } })
      if (e instanceof CartridgeLayoutError) return new HttpError({ status: 422, body: { error: e.message, reason: e.reason, fix: e.fix } })
      if (e instanceof TileFormatError) return HttpError.of(422, e.message)
      const err = e as Error & { status?: number }
      if (typeof err.status === "number" && err.status >= 400 && err.status < 500) return HttpError.of(err.status, err.message)
      return HttpError.of(500, `engine failure: ${err.message}`)
    }
  })

/** Builds the chip-sim routes: static data from `sim`, boot and step runs on `pool`. */
export const routes = (sim: ChipSimulator, pool: SimulatorPool): ReadonlyArray<Route.Route> => {
  const nodes = sim.nodes()
  const nodesBody = JSON.stringify(nodes)
  const nodesEtag = `"${createHash("sha256").update(nodesBody).digest("hex").slice(0, 32)}"`
  const consoleBody = JSON.stringify(CONSOLE_DOCUMENT)
  const consoleEtag = `"${createHash("sha256").update(consoleBody).digest("hex").slice(0, 32)}"`
  const cacheable = (etag: string, body: string) =>
    ({ request }: { request: { headers: Record<string, string | undefined> } }) =>
      Effect.succeed(
        request.headers["if-none-match"] === etag
          ? HttpServerResponse.empty({ status: 304, headers: { etag, "cache-control": "public, max-age=86400" } })
          : HttpServerResponse.text(body, { contentType: "application/json", headers: { etag, "cache-control": "public, max-age=86400" } })
      )
  return [
    Route.make({
      method: "GET",
      path: "/api/healthz",
      summary: "Liveness",
      tags: ["chip"],
      responses: { 200: { description: "alive", schema: Schema.Struct({ ok: Schema.Boolean }) } },
      handler: () => Effect.succeed({ ok: true, chip: sim.meta.chip })
    }),
    Route.make({
      method: "GET",
      path: "/api/v1/meta",
      summary: "Engine description: chip, node and transistor counts, limits, bitset encoding",
      tags: ["chip"],
      responses: { 200: { description: "Meta", schema: Meta } },
      handler: () => Effect.succeed(sim.meta)
    }),
    Route.make({
      method: "GET",
      path: "/api/v1/nodes",
      summary: "Every node name accepted by `watch`, with node ids, grouped (static; cacheable)",
      tags: ["chip"],
      responses: { 200: { description: "groups of names to node ids", schema: Schema.Unknown } },
      handler: ({ request }) =>
        Effect.succeed(
          request.headers["if-none-match"] === nodesEtag
            ? HttpServerResponse.empty({ status: 304, headers: { etag: nodesEtag, "cache-control": "public, max-age=86400, immutable" } })
            : HttpServerResponse.text(nodesBody, {
                contentType: "application/json",
                headers: { etag: nodesEtag, "cache-control": "public, max-age=86400, immutable" }
              })
        )
    }),
    Route.make({
      method: "POST",
      path: "/api/v1/assemble",
      summary: "Assemble 6502 source",
      tags: ["chip"],
      body: Rom,
      responses: {
        200: { description: "AssembleResponse", schema: AssembleResponse },
        422: { description: "assembly failed on a line, or the body failed its schema", schema: AssembleErrorBody }
      },
      handler: ({ body }) => engine(() => toAssembleResponse(assemble(body.source, body.org)))
    }),
    Route.make({
      method: "POST",
      path: "/api/v1/boot",
      summary: "Power on and reset a machine; it stands at its first opcode fetch (half_cycle 0)",
      tags: ["chip"],
      body: BootRequest,
      responses: {
        200: { description: "StepResponse with stepped 0 (and the listing when a rom was given)", schema: StepResponse },
        400: { description: "unknown watch name", schema: errorBody },
        422: { description: "assembly failed or the body failed its schema", schema: AssembleErrorBody }
      },
      handler: ({ body }) => engine(() => pool.boot(body))
    }),
    Route.make({
      method: "POST",
      path: "/api/v1/step",
      summary: "Advance a machine by half-cycles, to the next instruction/cycle, or to a PC",
      description: `Exactly one of \`half_cycles\` or \`until\` (\`until_pc\` alone means: run to the opcode fetch at that address). ` +
        `\`completed\` is false when \`max_half_cycles\` is reached first. With \`trace: true\` and \`format: "rows"\`, ` +
        `\`trace_rows\` is ${TRACE_ROW_COLUMNS_DOC}`,
      tags: ["chip"],
      body: StepRequest,
      responses: {
        200: { description: "StepResponse", schema: StepResponse },
        400: { description: "unknown watch name, or a state blob the engine refuses", schema: errorBody },
        422: { description: "both or neither of half_cycles/until, malformed state blob, limits exceeded", schema: Route.ValidationErrorBody }
      },
      openapi: { "x-trace-rows-columns": TRACE_ROW_COLUMNS_DOC },
      handler: ({ body }) => engine(() => pool.step(body))
    }),
    Route.make({
      method: "GET",
      path: "/api/v1/console",
      summary: "The console contract: memory map, tile format, palette, cartridge format version, smallest ROM that is a cartridge (static)",
      tags: ["chip"],
      responses: { 200: { description: "console contract", schema: Schema.Unknown } },
      handler: cacheable(consoleEtag, consoleBody)
    }),
    Route.make({
      method: "POST",
      path: "/api/v1/cartridge",
      summary: "Mint a cartridge: assemble, check the layout, run the frames on the chip, pack (gzip; ?format=json for the document)",
      description:
        "The verify report carries frames completed, half-cycles per frame, whether the screen changed and the tile indices on screen; " +
        "a screen with one value everywhere is called out in notes. Gzip modification time is zero: the same request gives the same bytes.",
      tags: ["chip"],
      body: CartridgeRequest,
      query: Schema.Struct({ format: Schema.optional(Schema.Literal("gzip", "json")) }),
      responses: {
        200: { description: "the cartridge (application/gzip), or its JSON document with ?format=json", contentType: "application/gzip" },
        400: { description: "unknown watch name", schema: errorBody },
        422: {
          description: "a layout the console contract refuses ({error, reason, fix}), assembly failed ({error, line}), bad tiles ({error}), or the body failed its schema ({error, detail})",
          schema: Schema.Union(CartridgeLayoutBody, AssembleErrorBody, Route.ValidationErrorBody, errorBody)
        }
      },
      handler: ({ body, query }) =>
        engine(() => mintCartridge(body, { boot: (r) => pool.boot(r as never), frames: (r) => pool.frames(r) })).pipe(
          Effect.map((minted) =>
            query.format === "json"
              ? HttpServerResponse.unsafeJson(minted.document)
              : HttpServerResponse.uint8Array(minted.gzip, {
                  contentType: "application/gzip",
                  headers: { "content-disposition": `attachment; filename="${(minted.document.meta.name || "cartridge").replace(/[^A-Za-z0-9._-]/g, "_")}.cart.gz"` }
                })
          )
        )
    })
  ]
}
