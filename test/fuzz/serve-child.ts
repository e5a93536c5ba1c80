/**
 * The platform under fuzzing, in its own process (so a crash is seen as one, and its RSS is its
 * own): boots the config file named by argv[2], prints `READY {listener: url}` on stdout, and
 * stops cleanly on SIGTERM.
 */
import { startPlatform } from "../../core/Kernel.ts"

const platform = await startPlatform({ file: process.argv[2]! })
const urls = Object.fromEntries([...platform.kernel.listeners.keys()].map((name) => [name, platform.url(name)]))
process.stdout.write(`READY ${JSON.stringify(urls)}\n`)
process.once("SIGTERM", () => {
  platform.stop().then(() => process.exit(0), () => process.exit(1))
})
