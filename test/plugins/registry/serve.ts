/**
 * A platform in its own process for the registry tests: `node --import tsx serve.ts FILE`
 * serves FILE and prints `READY <chip listener url>`; SIGTERM stops it gracefully.
 */
import { startPlatform } from "../../../core/Kernel.ts"

const platform = await startPlatform({ file: process.argv[2]! })
process.stdout.write(`READY ${platform.url("chip")}\n`)
process.once("SIGTERM", () => {
  platform.stop().then(() => process.exit(0), () => process.exit(1))
})
