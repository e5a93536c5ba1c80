/**
 * `platform research` as a user runs it: the real binary in a real pseudo-terminal (tmux),
 * against the real kernel (jobs, job-graph, web, text, job-vectl, llm) whose operations reach
 * loopback fixtures: the fixture web, a SearXNG-shaped search API (its `FIXTURE_DELAY_MS` knob
 * makes a search slow) and an OpenAI-compatible model behind the gateway. Also without a
 * terminal: the raw-mode fallback to test mode, exit codes, `--templates --json`, and an API
 * that does not answer.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, startPlatform } from "../../../../core/Kernel.ts"
import { payloadFor, TERMINAL_TEMPLATES } from "../../../../plugins/job-graph/research/Templates.ts"
import { type ModelServer, startModelServer } from "../../../fixtures/model-server.ts"
import type { Fixture } from "../../../fixtures/pages-server.ts"
import { searxngServer } from "../../../fixtures/searxng-server.ts"
import { type WebFixture, webServer } from "../../../fixtures/web-server.ts"
import { researchYaml } from "../../../support/research.ts"
import { startInTmux, type TmuxPane } from "../../../support/tmux.ts"
import { freePort, tempDir } from "../../jobs/support.ts"

process.env.PLATFORM_LOG_LEVEL ??= "error"
const workspacesPluginPresent = fs.existsSync(path.join(ROOT, "plugins/workspaces/plugin.ts"))

let web: WebFixture
let searx: Fixture
let model: ModelServer
let platform: Awaited<ReturnType<typeof startPlatform>>
let api: string
let pane: TmuxPane
/** The runs without a terminal, started in `beforeAll` so their start-up overlaps the terminal tests. */
let piped: Promise<Array<{ code: number; stdout: string; stderr: string }>>
let down: string

beforeAll(async () => {
  web = await webServer()
  searx = await searxngServer(web.url)
  model = await startModelServer({ token: "upstream-key" })
  platform = await startPlatform({
    cwd: ROOT,
    yaml: await researchYaml({
      dataDir: tempDir("research-client-"),
      modelUrl: model.url,
      upstreamKey: "upstream-key",
      token: "research-client-token",
      plugins: `  job-graph: {}
  web:
    searxng_url: ${searx.url}
    per_host_per_minute: 60000
    per_host_burst: 200
  text: {}
  job-vectl: {}
  job-archive: {}
  job-transcript: {}
${workspacesPluginPresent ? "  workspaces: {}\n" : ""}`
    })
  })
  api = platform.url("jobs")
  pane = await startInTmux({
    command: [process.execPath, "bin/platform.js", "research"],
    cwd: ROOT,
    env: { PLATFORM_API_URL: api, PLATFORM_LOG_LEVEL: "error" },
    width: 110,
    height: 45
  })
  down = `http://127.0.0.1:${await freePort()}`
  piped = Promise.all([
    runPiped(["research"], { PLATFORM_API_URL: api }, "solar power record output\n"),
    runPiped(["research", "--template", "news_50_states", "-t", `${web.url}/no-such-page`, "--json"], { PLATFORM_API_URL: api }),
    runPiped(["research", "--templates", "--json"], {}),
    runPiped(["research", "-t", "anything"], { PLATFORM_API_URL: down }),
    runPiped(["research", "--auto", "2", "--json"], { PLATFORM_API_URL: api })
  ])
  // The client's start-up (oclif, tsx) is the slow part on a loaded machine: waited for once here.
  await pane.waitFor(/research \(simple_search\)> $/m, 150_000, 250)
}, 240_000)

afterAll(async () => {
  if (pane) {
    // The session, for docs/research-session.txt (see README, "Terminal research client").
    fs.mkdirSync(path.join(ROOT, "test/.generated"), { recursive: true })
    fs.writeFileSync(path.join(ROOT, "test/.generated/research-session.txt"), await pane.capture(true).catch(() => ""))
    await pane.close()
  }
  await platform?.stop()
  for (const f of [model, searx, web]) await f?.close()
})

const job = async (id: string) => (await (await fetch(`${api}/api/v1/jobs/${id}`)).json()) as { status: string; payload: Record<string, unknown>; progress: number }
/** The text printed after the last occurrence of `marker`. */
const after = (screen: string, marker: string) => screen.slice(screen.lastIndexOf(marker))

/** Runs the binary without a terminal (stdin a pipe given `input`, closed). */
const runPiped = (args: Array<string>, env: Record<string, string>, input = ""): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, "bin/platform.js"), ...args], { cwd: ROOT, env: { ...process.env, PLATFORM_LOG_LEVEL: "error", ...env } })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stderr += d))
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }))
    child.stdin.end(input)
  })

describe("platform research in a terminal", () => {
  it("slash commands, Tab completion of commands and template names, history", async () => {
    await pane.type("/help")
    let screen = await pane.waitFor(/\/auto stop\s+stop the experiments/)
    for (const [c] of [["/workspace create <name>"], ["/run <template> <input>"], ["/auto stats"], ["/exit"]]) expect(screen).toContain(c)
    await pane.type("/templates")
    screen = await pane.waitFor(/tor_search_crawl \(query\)/)
    const listed = after(screen, "/templates")
    for (const t of TERMINAL_TEMPLATES) expect(listed).toContain(`${t.name} (`)
    expect(listed).toContain("graph:graphs/news_50_states.yaml")
    // Tab: "/u" → "/use ", "position_tr" → "position_tracker".
    await pane.type("/u", false)
    await pane.keys("Tab")
    await pane.type("position_tr", false)
    await pane.keys("Tab")
    await pane.waitFor(/> \/use position_tracker\s*$/m)
    await pane.keys("Enter")
    await pane.waitFor(/template: position_tracker \(person_name, topic\)\n.*research \(position_tracker\)> $/m)
    // History: Up brings the last line back for editing.
    await pane.keys("Up")
    await pane.waitFor(/research \(position_tracker\)> \/use position_tracker\s*$/m)
    await pane.keys("C-u")
    await pane.type("/use simple_search")
    await pane.type("/nonsense")
    await pane.waitFor(/unknown command \/nonsense: \/help lists them/)
    await pane.type("/run position_tracker topic=energy")
    await pane.waitFor(/missing person_name: position_tracker \(person_name, topic\)/)
  }, 120_000)

  it("a query runs to completion: the progress bar moves, elapsed time counts, the answer is rendered", async () => {
    await pane.type("solar power record output FIXTURE_DELAY_MS=700")
    // The bar's line: `███░░░ 40% | 1.2 s | PROCESSING stage 2/5 ...`.
    const seen: Array<{ percent: number; elapsed: number }> = []
    const screen = await pane.waitFor((s) => {
      const run = after(s, "▶ simple_search solar power record output")
      for (const m of run.matchAll(/(\d+)% \| (\d+\.\d) s \| (\w+)/g)) {
        const point = { percent: Number(m[1]), elapsed: Number(m[2]) }
        const last = seen[seen.length - 1]
        if (!last || last.percent !== point.percent || last.elapsed !== point.elapsed) seen.push(point)
      }
      return /✔ job_\w+ COMPLETED/.test(run)
    }, 90_000, 50)
    const run = after(screen, "▶ simple_search solar power record output")
    const percents = seen.map((p) => p.percent)
    expect(percents.some((p) => p < 100), JSON.stringify(seen)).toBe(true)
    expect(percents[percents.length - 1]).toBe(100)
    expect([...percents].sort((a, b) => a - b)).toEqual(percents)
    expect(new Set(percents).size, JSON.stringify(seen)).toBeGreaterThanOrEqual(2)
    expect(new Set(seen.map((p) => p.elapsed)).size).toBeGreaterThanOrEqual(3)
    expect(run).toMatch(/COMPLETED in \d+\.\d s · basic_research · 5\/5 stages/)
    expect(run).toMatch(/── synthesis/)
    expect(run).toMatch(/solar/i)
    expect(run).toContain(`${web.url}/energy-daily/`)
    const id = /✔ (job_\w+) COMPLETED/.exec(run)![1]!
    expect((await job(id)).status).toBe("COMPLETED")
    await pane.waitFor(/research \(simple_search\)> $/m)
  }, 120_000)

  it("Ctrl-C cancels the running job (CANCELLED) and the client stays", async () => {
    await pane.type("/run simple_search wind FIXTURE_DELAY_MS=20000")
    await pane.waitFor((s) => /\| PROCESSING/.test(after(s, "▶ simple_search wind")), 30_000)
    const began = Date.now()
    await pane.keys("C-c")
    const screen = await pane.waitFor((s) => /✖ job_\w+ CANCELLED/.test(after(s, "▶ simple_search wind")), 15_000)
    // Well before the 20 s search would have answered.
    expect(Date.now() - began).toBeLessThan(10_000)
    const id = /✖ (job_\w+) CANCELLED/.exec(after(screen, "▶ simple_search wind"))![1]!
    expect((await job(id)).status).toBe("CANCELLED")
    await pane.waitFor(/research \(simple_search\)> $/m)
    expect(await pane.exited()).toBe(false)
  }, 90_000)

  it("/auto 3 runs three experiments in the background; /auto stats; /auto stop", async () => {
    await pane.type("/auto 3")
    let screen = await pane.waitFor(/auto done: 3 runs of 3, 3 succeeded, 0 failed, 0 cancelled, mean \d+\.\d s/, 90_000)
    expect(screen.match(/auto \d\/3: ✔ simple_search/g)).toHaveLength(3)
    await pane.type("/auto stats")
    screen = await pane.waitFor((s) => /^3 runs of 3, 3 succeeded, 0 failed, 0 cancelled, mean \d+\.\d s$/m.test(after(s, "/auto stats")))
    await pane.type("/auto 40")
    await pane.waitFor(/auto: 40 experiments with simple_search/)
    await pane.type("/auto stop")
    screen = await pane.waitFor(/auto stopped: (\d+) runs? of 40/, 30_000)
    expect(Number(/auto stopped: (\d+) runs? of 40/.exec(screen)![1])).toBeLessThan(40)
  }, 150_000)

  it.skipIf(!workspacesPluginPresent)("workspace commands: create, list, info, runs filed into it, clear, use", async () => {
    await pane.type("/workspace create terminal demo")
    let screen = await pane.waitFor(/created workspace (ws_\w+) \(terminal demo\)/)
    const ws = /created workspace (ws_\w+)/.exec(screen)![1]!
    await pane.waitFor(/research \(simple_search · terminal demo\)> $/m)
    await pane.type("/workspace list")
    await pane.waitFor((s) => after(s, "/workspace list").includes(ws))
    await pane.type("/workspace info")
    await pane.waitFor((s) => /workspace_id\s+ws_/.test(after(s, "/workspace info")))
    await pane.type("Acme Robotics chief executive")
    screen = await pane.waitFor((s) => /✔ job_\w+ COMPLETED/.test(after(s, "▶ simple_search Acme Robotics")), 60_000)
    const id = /✔ (job_\w+) COMPLETED/.exec(after(screen, "▶ simple_search Acme Robotics"))![1]!
    expect((await job(id)).payload.workspace_id).toBe(ws)
    await pane.type("/workspace clear")
    await pane.waitFor(/research \(simple_search\)> $/m)
    await pane.type(`/workspace use ${ws}`)
    await pane.waitFor(new RegExp(`using workspace ${ws} \\(terminal demo\\)`))
    await pane.type("/workspace clear")
  }, 120_000)

  it("/exit leaves", async () => {
    await pane.type("/exit")
    const until = Date.now() + 20_000
    while (!(await pane.exited()) && Date.now() < until) await new Promise((r) => setTimeout(r, 100))
    expect(await pane.exited()).toBe(true)
  }, 30_000)
})

describe("the terminal templates on the platform", () => {
  it("each of the 14 maps to a graph the platform validates with its params", async () => {
    const inputs: Record<string, string> = {
      simple_search: "solar power",
      person_deep_research: `person_name="Jane Doe" context=Senate`,
      opponent_deep_dive: `opponent_name="Jane Doe" geo_focus=Springfield`,
      corporate_intelligence: `company_name="Acme Robotics" ticker=ACME industry=robotics`,
      news_50_states: `${web.url}/energy-daily/solar-record-output`,
      geo_news_comparison: `url=${web.url}/energy-daily/solar-record-output regions=us,gb`,
      recent_website_changes: "url=http://example.com/ days_back=60",
      historical_change_tracker: "target_urls=http://example.com/,http://example.org/ date_from=2019-01-01",
      position_tracker: `person_name="Jane Doe" topic=energy`,
      competitor_comparison: "Acme Robotics, Globex",
      topic_sentiment_tracker: `topic="solar power" subtopics=storage,prices`,
      media_coverage_analysis: "Acme Robotics",
      autonomous_research_agent: "query=solar depth=2",
      tor_search_crawl: "Acme Robotics credentials"
    }
    for (const t of TERMINAL_TEMPLATES) {
      const res = await fetch(`${api}/api/v1/graph/validate`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(payloadFor(t, inputs[t.name]!)) })
      const report = (await res.json()) as { valid: boolean; problems: unknown[] }
      expect(report, t.name).toMatchObject({ valid: true, problems: [] })
    }
  })
})

describe("platform research without a terminal", () => {
  it("raw-mode error then test mode (exit 0 / 1 by outcome), --auto 2 --json, --templates --json, an unreachable API", async () => {
    const [fromStdin, failing, list, unreachable, auto] = await piped
    expect(fromStdin.code, fromStdin.stderr).toBe(0)
    expect(fromStdin.stderr).toMatch(/^Error: Raw mode is not supported on the current process.stdin: interactive mode needs a terminal; falling back to test mode$/m)
    expect(fromStdin.stderr).toMatch(/^\[ *\d+%\] PROCESSING/m)
    expect(fromStdin.stdout).toMatch(/✔ job_\w+ COMPLETED in .* · basic_research · 5\/5 stages/)
    expect(fromStdin.stdout).toContain(`${web.url}/energy-daily/`)

    expect(failing.code, failing.stderr).toBe(1)
    const failed = JSON.parse(failing.stdout) as { status: string; error: string }
    expect(failed.status).toBe("FAILED")
    expect(failed.error).toMatch(/stage "story" failed: fetch: .*HTTP 404/)

    expect(list.code, list.stderr).toBe(0)
    const templates = JSON.parse(list.stdout) as Array<{ name: string; params: Array<{ name: string; optional: boolean }>; runs: string }>
    expect(templates.map((t) => t.name)).toEqual([
      "simple_search", "person_deep_research", "opponent_deep_dive", "corporate_intelligence", "news_50_states", "geo_news_comparison", "recent_website_changes",
      "historical_change_tracker", "position_tracker", "competitor_comparison", "topic_sentiment_tracker", "media_coverage_analysis", "autonomous_research_agent", "tor_search_crawl"
    ])
    expect(templates.find((t) => t.name === "corporate_intelligence")!.params.map((p) => `${p.name}${p.optional ? "?" : ""}`)).toEqual(["company_name", "ticker?", "industry?"])

    expect(auto.code, auto.stderr).toBe(0)
    expect(JSON.parse(auto.stdout)).toMatchObject({ runs: 2, succeeded: 2, failed: 0, cancelled: 0, planned: 2, running: false })

    expect(unreachable.code).toBe(1)
    expect(unreachable.stdout).toBe("")
    expect(unreachable.stderr.trim().split("\n")).toEqual([`Error: cannot reach the Jobs API at ${down} (ECONNREFUSED); start it with \`platform serve\` or set PLATFORM_API_URL`])
  }, 180_000)
})
