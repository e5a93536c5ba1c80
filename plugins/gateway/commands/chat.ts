import { Flags } from "@oclif/core"
import * as readline from "node:readline"
import { PlatformCommand } from "../../../core/Command.ts"
import { serverSentEvents } from "../../../core/Sse.ts"

interface Message { role: "system" | "user" | "assistant"; content: string }

/** One turn's outcome. */
interface Turn { content: string; finish_reason: string | null; usage?: unknown }

/**
 * Sends one chat turn to the gateway at `url` and returns the reply text. With `stream`, text is
 * written to `out` as it arrives. Throws with the gateway's error message on a non-200 status or
 * an error event in the stream.
 */
export const sendTurn = async (
  url: string,
  token: string | undefined,
  body: Record<string, unknown>,
  out?: (text: string) => void
): Promise<Turn> => {
  const res = await fetch(`${url.replace(/\/+$/, "")}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body)
  })
  if (res.status !== 200) {
    const text = await res.text()
    let message = text
    try { message = JSON.parse(text)?.error?.message ?? JSON.stringify(JSON.parse(text)) } catch { /* not JSON */ }
    const retry = res.headers.get("retry-after")
    throw new Error(`HTTP ${res.status}: ${message}${retry ? ` (retry after ${retry} s)` : ""}`)
  }
  if (!body.stream) {
    const json = await res.json() as any
    const content = String(json.choices?.[0]?.message?.content ?? "")
    out?.(content)
    return { content, finish_reason: json.choices?.[0]?.finish_reason ?? null, usage: json.usage }
  }
  let content = "", finish: string | null = null, usage: unknown
  for await (const event of serverSentEvents(res.body as unknown as AsyncIterable<Uint8Array>)) {
    if (event.data === "" || event.data === "[DONE]") continue
    const chunk = JSON.parse(event.data)
    if (chunk.error) throw new Error(`stream error: ${chunk.error.message}`)
    if (chunk.usage) usage = chunk.usage
    const choice = chunk.choices?.[0]
    if (choice?.delta?.content) { content += choice.delta.content; out?.(choice.delta.content) }
    if (choice?.finish_reason) finish = choice.finish_reason
  }
  return { content, finish_reason: finish, usage }
}

/** `platform gateway chat`: an interactive terminal chat against a running gateway. */
export default class GatewayChat extends PlatformCommand {
  static summary = "Chat with a running gateway from the terminal."
  static description = "Keeps the conversation history and sends it with every turn; replies stream as they are generated when the model supports streaming. Type /reset to start over, /exit (or Ctrl-D) to leave. With --message, sends one turn and exits (use --json for the reply as JSON)."
  static examples = [
    "GATEWAY_TOKEN=... <%= config.bin %> gateway chat",
    "<%= config.bin %> gateway chat --model model-linear-gpu --system 'Answer briefly.'",
    "<%= config.bin %> gateway chat --message 'Say hello' --json"
  ]
  static flags = {
    url: Flags.string({ summary: "Base URL of the gateway listener.", default: "http://127.0.0.1:9001", env: "GATEWAY_URL" }),
    token: Flags.string({ summary: "Bearer token of the gateway.", env: "GATEWAY_TOKEN" }),
    model: Flags.string({ summary: "Model id (default: the gateway's default model)." }),
    system: Flags.string({ summary: "System prompt." }),
    "max-tokens": Flags.integer({ summary: "Maximum tokens per reply.", min: 1 }),
    temperature: Flags.string({ summary: "Sampling temperature, 0 to 2." }),
    stream: Flags.boolean({ summary: "Stream replies (turn off for non-streaming models).", default: true, allowNo: true }),
    message: Flags.string({ char: "m", summary: "Send this one message and exit." })
  }

  async run(): Promise<Turn | { turns: number }> {
    const { flags } = await this.parse(GatewayChat)
    const history: Message[] = flags.system ? [{ role: "system", content: flags.system }] : []
    const request = (stream: boolean): Record<string, unknown> => ({
      ...(flags.model ? { model: flags.model } : {}),
      messages: history,
      stream,
      ...(flags["max-tokens"] ? { max_tokens: flags["max-tokens"] } : {}),
      ...(flags.temperature !== undefined ? { temperature: Number(flags.temperature) } : {})
    })

    if (flags.message !== undefined) {
      history.push({ role: "user", content: flags.message })
      const json = this.jsonEnabled()
      try {
        const turn = await sendTurn(flags.url, flags.token, request(flags.stream && !json), json ? undefined : (t) => process.stdout.write(t))
        if (!json) process.stdout.write("\n")
        return turn
      } catch (e) {
        this.error((e as Error).message, { exit: 1 })
      }
    }

    const rl = readline.createInterface({ input: process.stdin, output: process.stdout, prompt: "you> " })
    // Lines are pulled through the async iterator, which buffers them: piped input (a script of
    // turns) is not lost while a reply is still streaming.
    const lines = rl[Symbol.asyncIterator]()
    let turns = 0
    this.log(`connected to ${flags.url}${flags.model ? ` (model ${flags.model})` : ""}; /reset starts over, /exit leaves`)
    try {
      for (;;) {
        rl.prompt()
        const next = await lines.next()
        if (next.done) break
        const text = String(next.value).trim()
        if (text === "/exit" || text === "/quit") break
        if (text === "/reset") { history.splice(flags.system ? 1 : 0); this.log("(history cleared)"); continue }
        if (!text) continue
        history.push({ role: "user", content: text })
        process.stdout.write("assistant> ")
        try {
          const turn = await sendTurn(flags.url, flags.token, request(flags.stream), (t) => process.stdout.write(t))
          process.stdout.write(turn.finish_reason === "length" ? " [cut at max tokens]\n" : "\n")
          history.push({ role: "assistant", content: turn.content })
          turns++
        } catch (e) {
          history.pop()
          process.stdout.write("\n")
          this.warn((e as Error).message)
        }
      }
    } finally {
      rl.close()
    }
    return { turns }
  }
}
