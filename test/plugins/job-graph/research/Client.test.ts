/**
 * The research client's HTTP side against loopback servers: following a job by polling when the
 * API has no event stream, and the one-line errors (refused job, nothing listening).
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ApiError, type Job, ResearchApi, Unreachable } from "../../../../plugins/job-graph/research/Client.ts"
import { freePort } from "../../jobs/support.ts"

// An API without `/events` (404) whose job moves 0 → 50 → COMPLETED over successive GETs.
let server: Server
let base: string
let gets = 0
const states: Array<Partial<Job>> = [{ status: "PROCESSING", progress: 0 }, { status: "PROCESSING", progress: 50, message: "half" }, { status: "COMPLETED", progress: 100, result: { ok: true } }]

beforeAll(async () => {
  server = createServer((req, res) => {
    res.setHeader("content-type", "application/json")
    if (req.method === "POST") return res.writeHead(422).end(JSON.stringify({ job_id: "job_x", status: "FAILED", error: "VALIDATION_ERROR: params.query is required" }))
    if (req.url === "/api/v1/jobs/job_1") return res.end(JSON.stringify({ job_id: "job_1", created_at: "", ...states[Math.min(gets++, states.length - 1)] }))
    res.writeHead(404).end(JSON.stringify({ error: "not found" }))
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(() => new Promise<void>((r) => server.close(() => r())))

describe("ResearchApi", () => {
  it("follows a job by polling when the event stream is not there", async () => {
    const seen: Array<number> = []
    const job = await new ResearchApi(base).follow("job_1", (j) => seen.push(j.progress), new AbortController().signal, 10)
    expect(job.status).toBe("COMPLETED")
    expect(seen).toEqual([0, 50, 100])
  })

  it("a refused job and an address nobody listens on are one-line errors", async () => {
    const refused = await new ResearchApi(base).submit({ template: "basic_research", params: {} }, null).catch((x) => x)
    expect(refused).toBeInstanceOf(ApiError)
    expect(refused).toMatchObject({ status: 422, message: "the job was refused (HTTP 422): VALIDATION_ERROR: params.query is required" })
    const down = new ResearchApi(`http://127.0.0.1:${await freePort()}`)
    const e = await down.ping().catch((x) => x)
    expect(e).toBeInstanceOf(Unreachable)
    expect(e.message).toMatch(/^cannot reach the Jobs API at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/)
  })
})
