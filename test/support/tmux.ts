/**
 * Drives a program in a real pseudo-terminal through tmux (its own server socket, so nothing of
 * a user's tmux is touched): start it in a detached session of a fixed size, type with
 * `send-keys`, read the screen with `capture-pane`, wait for text to appear.
 */
import { execFile } from "node:child_process"
import { promisify } from "node:util"

const run = promisify(execFile)

/** A program running in a tmux pane. */
export interface TmuxPane {
  /** Types `text` literally, then Enter unless `enter` is false. */
  readonly type: (text: string, enter?: boolean) => Promise<void>
  /** Sends tmux key names (`C-c`, `Tab`, `Up`, `Enter`, `C-u`). */
  readonly keys: (...names: ReadonlyArray<string>) => Promise<void>
  /** The pane's text: the visible screen, or with `history` all the scrollback too. */
  readonly capture: (history?: boolean) => Promise<string>
  /** Polls the screen (with scrollback) every `everyMs` until `test` passes; rejects after `timeoutMs` with the last screen. */
  readonly waitFor: (test: RegExp | ((screen: string) => boolean), timeoutMs?: number, everyMs?: number) => Promise<string>
  /** True once the program has exited (the pane stays, remain-on-exit). */
  readonly exited: () => Promise<boolean>
  /** Kills the session and its server. */
  readonly close: () => Promise<void>
}

/**
 * Starts `command` (argv) in `cwd` with `env` added, in a `width` x `height` terminal.
 * Needs `tmux` (Debian package; scripts/setup.sh installs it).
 */
export const startInTmux = async (o: { command: ReadonlyArray<string>; cwd: string; env?: Record<string, string>; width?: number; height?: number }): Promise<TmuxPane> => {
  const socket = `platform-test-${process.pid}-${Date.now()}`
  const tmux = (...args: Array<string>) => run("tmux", ["-L", socket, "-f", "/dev/null", ...args], { maxBuffer: 16 * 1024 * 1024 })
  const env = Object.entries(o.env ?? {}).flatMap(([k, v]) => ["-e", `${k}=${v}`])
  await tmux("new-session", "-d", "-s", "main", "-x", String(o.width ?? 110), "-y", String(o.height ?? 40), "-c", o.cwd, ...env, ...o.command)
  await tmux("set-option", "-t", "main", "remain-on-exit", "on")
  await tmux("set-option", "-t", "main", "history-limit", "20000")
  const capture = async (history = false) => (await tmux("capture-pane", "-p", "-J", "-t", "main", ...(history ? ["-S", "-"] : []))).stdout
  return {
    type: async (text, enter = true) => {
      await tmux("send-keys", "-t", "main", "-l", text)
      if (enter) await tmux("send-keys", "-t", "main", "Enter")
    },
    keys: async (...names) => {
      await tmux("send-keys", "-t", "main", ...names)
    },
    capture,
    waitFor: async (test, timeoutMs = 30_000, everyMs = 150) => {
      const ok = typeof test === "function" ? test : (s: string) => test.test(s)
      const until = Date.now() + timeoutMs
      let screen = ""
      while (Date.now() < until) {
        screen = await capture(true)
        if (ok(screen)) return screen
        await new Promise((r) => setTimeout(r, everyMs))
      }
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${test}; the screen:\n${screen}`)
    },
    exited: async () => (await tmux("display-message", "-p", "-t", "main", "#{pane_dead}")).stdout.trim() === "1",
    close: async () => {
      await tmux("kill-server").catch(() => {})
    }
  }
}
