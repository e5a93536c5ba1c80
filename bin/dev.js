#!/usr/bin/env node
// The `platform` CLI from the TypeScript sources (tsx), for development: commands are found by
// importing cli/index.ts (oclif's `explicit` discovery: the kernel's commands and every
// plugins/<name>/commands.ts), not from the build's manifest, so edits show without a build.
// Slower to start than bin/platform.js, which runs the build.
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { register } from "tsx/esm/api"

register()
const { Config, flush, handle, Plugin, run } = await import("@oclif/core")
const root = fileURLToPath(new URL("..", import.meta.url))
const pjson = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"))
pjson.oclif = { ...pjson.oclif, commands: { strategy: "explicit", target: "./cli/index.ts", identifier: "default" } }
const plugin = new Plugin({ root, isRoot: true, pjson, ignoreManifest: true })
await plugin.load()
const config = await Config.load({ root, plugins: new Map([[plugin.name, plugin]]) })
await run(process.argv.slice(2), config).then(flush, handle)
