/**
 * The interactive research client: a readline prompt (line editing, history, Tab completion of
 * slash commands and template names), slash commands, queries run with a live progress bar
 * (Ctrl-C cancels the job, not the client), results rendered, and `/auto` experiments running
 * in the background while the prompt stays usable.
 */
import * as readline from "node:readline"
import { table } from "../../../core/Command.ts"
import { ApiError, type Job, ResearchApi, type Workspace } from "./Client.ts"
import { renderJob, seconds } from "./Render.ts"
import { barView, lineView, startJob } from "./Run.ts"
import { findTemplate, InputError, payloadFor, signature, TERMINAL_TEMPLATES, type TerminalTemplate } from "./Templates.ts"

/** The slash commands, as `/help` lists them (also the Tab completion words). */
export const COMMANDS: ReadonlyArray<readonly [string, string]> = [
  ["/help", "this list"],
  ["/templates", "the terminal templates and their parameters"],
  ["/use <template>", "make <template> the current one (queries run with it)"],
  ["/run <template> <input>", "run <template> once with <input>"],
  ["/workspace create <name>", "create a workspace and use it"],
  ["/workspace list", "the workspaces"],
  ["/workspace use <id>", "file the next runs into workspace <id>"],
  ["/workspace info", "the current workspace"],
  ["/workspace clear", "stop filing runs into a workspace"],
  ["/auto [count]", "run <count> experiments (default 5) in the background"],
  ["/auto stats", "runs, succeeded, failed, mean duration"],
  ["/auto stop", "stop the experiments (cancels the running one)"],
  ["/clear", "clear the screen"],
  ["/exit", "leave (also Ctrl-D)"]
]

/** Statistics of `/auto` experiments. */
export interface AutoStats {
  runs: number
  succeeded: number
  failed: number
  cancelled: number
  totalSeconds: number
  planned: number
  running: boolean
}

/** `/auto stats` as one line. */
export const statsLine = (s: AutoStats): string =>
  `${s.runs} run${s.runs === 1 ? "" : "s"} of ${s.planned}, ${s.succeeded} succeeded, ${s.failed} failed, ${s.cancelled} cancelled, mean ${s.runs ? seconds(s.totalSeconds / s.runs) : "-"}${s.running ? " (running)" : ""}`

/** Input for `/auto`: the template's examples, else the last input run with it. */
const experimentInputs = (t: TerminalTemplate, lastInput: string | undefined): ReadonlyArray<string> => (t.examples.length > 0 ? t.examples : lastInput ? [lastInput] : [])

/** Words a line can complete to at its end (commands, subcommands, template names). */
export const completions = (line: string): [Array<string>, string] => {
  const names = TERMINAL_TEMPLATES.map((t) => t.name)
  const sub = (prefix: string, words: ReadonlyArray<string>): [Array<string>, string] | undefined => {
    if (!line.startsWith(prefix)) return undefined
    const rest = line.slice(prefix.length)
    if (rest.includes(" ")) return [[], rest]
    return [words.filter((w) => w.startsWith(rest)), rest]
  }
  const hit = sub("/use ", names) ?? sub("/run ", names) ?? sub("/workspace ", ["create", "list", "use", "info", "clear"]) ?? sub("/auto ", ["stats", "stop"])
  if (hit) return hit
  if (line.startsWith("/") && !line.includes(" ")) {
    const words = [...new Set(COMMANDS.map(([c]) => c.split(" ")[0]!))]
    const m = words.filter((w) => w.startsWith(line))
    // A unique command that takes arguments completes with its space, ready for the next word.
    return [m.length === 1 && ["/use", "/run", "/workspace", "/auto"].includes(m[0]!) ? [`${m[0]} `] : m, line]
  }
  return [[], line]
}

/** Options of an interactive session. */
export interface SessionOptions {
  readonly api: ResearchApi
  readonly template: TerminalTemplate
  /** Start `/auto <count>` at once (`--auto`). */
  readonly auto?: number
}

/**
 * Runs the interactive client on the terminal until `/exit` or Ctrl-D. Resolves with the
 * `/auto` statistics (for `--json`).
 */
export const interactive = async (o: SessionOptions): Promise<AutoStats> => {
  const out = process.stdout
  const history: Array<string> = []
  let template = o.template
  let workspace: Workspace | null = null
  let rl: readline.Interface | undefined
  let busy = false
  const lastInput = new Map<string, string>()
  const stats: AutoStats = { runs: 0, succeeded: 0, failed: 0, cancelled: 0, totalSeconds: 0, planned: 0, running: false }
  let autoStop: (() => void) | undefined
  let exit: () => void = () => {}
  const finished = new Promise<void>((resolve) => (exit = resolve))

  const promptText = () => `research (${template.name}${workspace ? ` · ${workspace.name}` : ""})> `

  /** Prints above the prompt without losing what is being typed. */
  const say = (text: string) => {
    if (rl && !busy) {
      readline.clearLine(out, 0)
      readline.cursorTo(out, 0)
      out.write(`${text}\n`)
      rl.prompt(true)
    } else {
      out.write(`${text}\n`)
    }
  }

  const openPrompt = () => {
    rl = readline.createInterface({
      input: process.stdin,
      output: out,
      terminal: true,
      history,
      historySize: 500,
      removeHistoryDuplicates: true,
      completer: (line: string) => completions(line)
    })
    rl.setPrompt(promptText())
    // readline keeps `history` newest first and shares the array it was given.
    rl.on("line", (line) => void handle(line.trim()))
    rl.on("SIGINT", () => {
      if (stats.running) {
        say("(Ctrl-C: stopping the experiments)")
        autoStop?.()
      } else if (rl && rl.line.length > 0) {
        rl.write(null, { ctrl: true, name: "u" })
      } else {
        say("(Ctrl-C cancels a running job; /exit or Ctrl-D leaves)")
      }
    })
    rl.on("close", () => {
      if (!busy) {
        autoStop?.()
        exit()
      }
    })
    rl.prompt()
  }

  /** A foreground job: the prompt is closed while it runs, so keys reach the cancel handler. */
  const foreground = async (t: TerminalTemplate, input: string) => {
    if (stats.running) return say("experiments are running: /auto stop first, or /auto stats")
    let payload
    try {
      payload = payloadFor(t, input)
    } catch (e) {
      if (e instanceof InputError) return say(`✖ ${e.message}`)
      throw e
    }
    lastInput.set(t.name, input)
    busy = true
    rl?.close()
    rl = undefined
    const stdin = process.stdin
    const onKey = (data: Buffer) => {
      if (data.includes(3)) running?.cancel()
    }
    let running: Awaited<ReturnType<typeof startJob>> | undefined
    try {
      out.write(`▶ ${t.name} ${input}${workspace ? ` (workspace ${workspace.name})` : ""}  · Ctrl-C cancels\n`)
      stdin.setRawMode?.(true)
      stdin.on("data", onKey)
      stdin.resume()
      running = await startJob(o.api, payload, workspace?.workspace_id ?? null, barView(out))
      const job = await running.done
      out.write(`\n${renderJob(job)}\n\n`)
    } catch (e) {
      out.write(`✖ ${(e as Error).message}\n`)
    } finally {
      stdin.off("data", onKey)
      busy = false
      openPrompt()
    }
  }

  const startAuto = (count: number) => {
    if (stats.running) return say(`experiments already running: ${statsLine(stats)}`)
    const inputs = experimentInputs(template, lastInput.get(template.name))
    if (inputs.length === 0) return say(`✖ ${template.name} has no example input: run a query with it first, then /auto`)
    Object.assign(stats, { runs: 0, succeeded: 0, failed: 0, cancelled: 0, totalSeconds: 0, planned: count, running: true })
    let stopped = false
    let current: Awaited<ReturnType<typeof startJob>> | undefined
    autoStop = () => {
      stopped = true
      current?.cancel()
    }
    const t = template
    say(`auto: ${count} experiments with ${t.name} (/auto stats, /auto stop)`)
    void (async () => {
      for (let i = 0; i < count && !stopped; i++) {
        const input = inputs[i % inputs.length]!
        const began = Date.now()
        let job: Job | undefined
        try {
          current = await startJob(o.api, payloadFor(t, input), workspace?.workspace_id ?? null, { start: () => {}, update: () => {}, stop: () => {} })
          job = await current.done
        } catch (e) {
          say(`auto ${i + 1}/${count}: ✖ ${(e as Error).message}`)
        }
        const took = (Date.now() - began) / 1000
        stats.runs++
        stats.totalSeconds += took
        if (job?.status === "COMPLETED") stats.succeeded++
        else if (job?.status === "CANCELLED") stats.cancelled++
        else stats.failed++
        if (job) say(`auto ${i + 1}/${count}: ${job.status === "COMPLETED" ? "✔" : "✖"} ${t.name} "${input}" ${job.status} in ${seconds(took)}${job.error ? `: ${job.error}` : ""}`)
      }
      stats.running = false
      autoStop = undefined
      say(`auto ${stopped ? "stopped" : "done"}: ${statsLine(stats)}`)
    })()
  }

  const workspaceCommand = async (args: Array<string>) => {
    const [sub, ...rest] = args
    if (sub === "create" && rest.length > 0) {
      workspace = await o.api.createWorkspace(rest.join(" "))
      rl?.setPrompt(promptText()) // before `say` re-prompts
      return say(`created workspace ${workspace.workspace_id} (${workspace.name}); runs are filed into it`)
    }
    if (sub === "list") {
      const all = await o.api.listWorkspaces()
      if (all.length === 0) return say("no workspaces: /workspace create <name>")
      return say(table(["ID", "NAME", "DESCRIPTION"], all.map((w) => [w.workspace_id, w.name, w.description ?? null])))
    }
    if (sub === "use" && rest.length === 1) {
      workspace = await o.api.getWorkspace(rest[0]!)
      rl?.setPrompt(promptText())
      return say(`using workspace ${workspace.workspace_id} (${workspace.name})`)
    }
    if (sub === "info") {
      if (!workspace) return say("no workspace in use: /workspace use <id> or /workspace create <name>")
      const fresh = await o.api.getWorkspace(workspace.workspace_id)
      return say(table(["FIELD", "VALUE"], Object.entries(fresh).map(([k, v]) => [k, typeof v === "object" && v !== null ? JSON.stringify(v) : (v as string)])))
    }
    if (sub === "clear") {
      workspace = null
      rl?.setPrompt(promptText())
      return say("no workspace in use: runs are not filed")
    }
    say("usage: /workspace create <name> | list | use <id> | info | clear")
  }

  const handle = async (line: string) => {
    if (line === "") return rl?.prompt()
    const [cmd, ...args] = line.split(/\s+/)
    try {
      switch (line.startsWith("/") ? cmd : "") {
        case "":
          return await foreground(template, line)
        case "/help":
          return say(table(["COMMAND", "WHAT IT DOES"], COMMANDS.map(([c, d]) => [c, d])) + "\nAny other input runs as a query with the current template (Tab completes commands and template names).")
        case "/templates":
          return say(table(["", "TEMPLATE", "RUNS"], TERMINAL_TEMPLATES.map((t) => [t.name === template.name ? "*" : "", signature(t), t.runs])))
        case "/clear":
          console.clear()
          return rl?.prompt()
        case "/exit":
        case "/quit":
          return rl?.close()
        case "/use": {
          const t = findTemplate(args[0] ?? "")
          if (!t) return say(`✖ unknown template "${args[0] ?? ""}": /templates lists them`)
          template = t
          rl?.setPrompt(promptText())
          return say(`template: ${signature(t)}`)
        }
        case "/run": {
          const t = findTemplate(args[0] ?? "")
          if (!t) return say(`✖ unknown template "${args[0] ?? ""}": /templates lists them`)
          return await foreground(t, line.slice(line.indexOf(args[0]!) + args[0]!.length).trim())
        }
        case "/workspace":
          await workspaceCommand(args)
          return rl?.setPrompt(promptText())
        case "/auto": {
          if (args[0] === "stats") return say(statsLine(stats))
          if (args[0] === "stop") {
            if (!stats.running) return say("no experiments running")
            return autoStop?.()
          }
          const count = args[0] === undefined ? 5 : Number(args[0])
          if (!Number.isInteger(count) || count < 1) return say("usage: /auto [count] | /auto stats | /auto stop")
          return startAuto(count)
        }
        default:
          return say(`✖ unknown command ${cmd}: /help lists them`)
      }
    } catch (e) {
      say(`✖ ${e instanceof ApiError ? e.message : String((e as Error)?.message ?? e)}`)
    }
  }

  out.write(`platform research · ${o.api.base} · template ${signature(template)}\n/help lists the commands; Tab completes; Ctrl-C cancels a running job; /exit leaves.\n`)
  openPrompt()
  if (o.auto) startAuto(o.auto)
  await finished
  return { ...stats }
}

/** Test mode: runs `input` with `template` once, progress on stderr; resolves with the final job. */
export const runOnce = async (api: ResearchApi, template: TerminalTemplate, input: string): Promise<Job> => {
  const running = await startJob(api, payloadFor(template, input), null, lineView())
  // Without a terminal Ctrl-C is a signal: cancel the job, then report it as it ends.
  const onSigint = () => running.cancel()
  process.on("SIGINT", onSigint)
  try {
    return await running.done
  } finally {
    process.off("SIGINT", onSigint)
  }
}
