import { Args, Flags } from "@oclif/core"
import { PlatformCommand, table } from "../../../core/Command.ts"
import { apiUrl, ApiError, type Job, ResearchApi } from "../research/Client.ts"
import type { AutoStats } from "../research/Session.ts"
import { findTemplate, InputError, signature, TERMINAL_TEMPLATES, type TerminalTemplate } from "../research/Templates.ts"

/** The raw-mode error of the spec, as terminal UI libraries word it, and what happens next. */
const RAW_MODE_ERROR = "Raw mode is not supported on the current process.stdin: interactive mode needs a terminal; falling back to test mode"

/** Reads all of piped stdin (test mode's query when `--test` is not given). */
const readStdin = async (): Promise<string> => {
  if (process.stdin.isTTY) return ""
  const chunks: Array<Buffer> = []
  for await (const c of process.stdin) chunks.push(c as Buffer)
  return Buffer.concat(chunks).toString("utf8").trim()
}

/** `platform research`: the terminal research client over the Jobs API. */
export default class Research extends PlatformCommand {
  static summary = "Interactive research client: run graph research jobs from the terminal."
  static description = `Talks to a running Jobs API over HTTP (PLATFORM_API_URL, default http://127.0.0.1:9003): POST /api/v1/jobs/graph, GET /api/v1/jobs/{id} and its SSE events, DELETE to cancel, and the workspace routes.

In a terminal: a prompt with history, line editing and Tab completion; slash commands (/help lists them); any other input runs as a query with the current template, with a live progress bar; Ctrl-C cancels the running job. Without a terminal it fails with a raw-mode error and falls back to test mode (the query from --test or stdin). Test mode prints the result and exits 0 when the job completed, 1 otherwise.

A template's input is its first parameter as free text, or name=value words (quote values with spaces), or a JSON object; list parameters are comma-separated.`
  static examples = [
    "<%= config.bin %> research",
    "<%= config.bin %> research --template corporate_intelligence",
    "<%= config.bin %> research -t 'solar power storage'",
    "<%= config.bin %> research -t 'person_name=\"Jane Doe\" topic=energy' --template position_tracker --json",
    "<%= config.bin %> research --auto 3",
    "<%= config.bin %> research -T --json",
    "PLATFORM_API_URL=http://10.0.0.5:9003 <%= config.bin %> research"
  ]
  static args = {
    count: Args.integer({ description: "number of experiments after --auto (as --count)", required: false, min: 1, ignoreStdin: true })
  }
  static flags = {
    help: Flags.help({ char: "h" }),
    test: Flags.string({ char: "t", summary: "Run one query non-interactively (test mode)." }),
    template: Flags.string({ summary: "Template for test mode (and the first one in interactive mode).", options: TERMINAL_TEMPLATES.map((t) => t.name), default: "simple_search" }),
    auto: Flags.boolean({ char: "a", summary: "Automatic experiments (default 5; count as the next argument or --count)." }),
    count: Flags.integer({ char: "n", summary: "Number of experiments.", min: 1 }),
    templates: Flags.boolean({ char: "T", summary: "List the templates." })
  }

  async run(): Promise<unknown> {
    const { args, flags } = await this.parse(Research)
    const template = findTemplate(flags.template) as TerminalTemplate
    const json = this.jsonEnabled()
    if (flags.templates) {
      const rows = TERMINAL_TEMPLATES.map((t) => ({ name: t.name, description: t.description, params: t.params, runs: t.runs }))
      if (!json) this.log(table(["TEMPLATE", "RUNS", "DESCRIPTION"], TERMINAL_TEMPLATES.map((t) => [signature(t), t.runs, t.description])))
      return rows
    }
    // The terminal UI (marked-terminal pulls in a syntax highlighter) loads only when it runs:
    // every `platform` command imports this module to list it.
    const { renderJob, seconds } = await import("../research/Render.ts")
    const api = new ResearchApi(apiUrl())
    const count = flags.count ?? args.count ?? 5
    const auto = flags.auto || flags.count !== undefined
    try {
      await api.ping()
      const terminal = process.stdin.isTTY === true && process.stdout.isTTY === true && flags.test === undefined && !json
      if (terminal) {
        const { interactive } = await import("../research/Session.ts")
        return await interactive({ api, template, ...(auto ? { auto: count } : {}) })
      }
      if (flags.test === undefined) process.stderr.write(`Error: ${RAW_MODE_ERROR}\n`)
      if (auto) return await this.autoTestMode(api, template, count, json)
      const query = flags.test ?? (await readStdin())
      if (query === "") this.fail1("no query for test mode: give --test <query> or pipe one on stdin")
      const { runOnce } = await import("../research/Session.ts")
      const job = await runOnce(api, template, query)
      if (!json) this.log(renderJob(job))
      if (job.status !== "COMPLETED") {
        if (json) this.logJson(job)
        this.exit(1)
      }
      return job
    } catch (e) {
      if (e instanceof ApiError || e instanceof InputError) this.fail1(e.message)
      throw e
    }
  }

  /** One line on stderr, exit 1: no stack trace for what the user can fix. */
  private fail1(message: string): never {
    process.stderr.write(`Error: ${message}\n`)
    this.exit(1)
  }

  /** `--auto` without a terminal: the experiments one after another, a line each, then the statistics. */
  private async autoTestMode(api: ResearchApi, template: TerminalTemplate, count: number, json: boolean): Promise<AutoStats> {
    const { runOnce, statsLine } = await import("../research/Session.ts")
    const { seconds } = await import("../research/Render.ts")
    const inputs = template.examples
    if (inputs.length === 0) this.fail1(`${template.name} has no example input for experiments: use --test`)
    const stats: AutoStats = { runs: 0, succeeded: 0, failed: 0, cancelled: 0, totalSeconds: 0, planned: count, running: true }
    for (let i = 0; i < count; i++) {
      const began = Date.now()
      const job: Job = await runOnce(api, template, inputs[i % inputs.length]!)
      const took = (Date.now() - began) / 1000
      stats.runs++
      stats.totalSeconds += took
      if (job.status === "COMPLETED") stats.succeeded++
      else if (job.status === "CANCELLED") stats.cancelled++
      else stats.failed++
      if (!json) this.log(`auto ${i + 1}/${count}: ${job.status} in ${seconds(took)}${job.error ? `: ${job.error}` : ""}`)
    }
    stats.running = false
    if (!json) this.log(`auto done: ${statsLine(stats)}`)
    if (stats.succeeded < stats.runs) {
      if (json) this.logJson(stats)
      this.exit(1)
    }
    return stats
  }
}
