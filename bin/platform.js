#!/usr/bin/env node
// The `platform` CLI (oclif), from the compiled build (`dist/` and `oclif.manifest.json`, made by
// `npm install`/`npm ci` through `prepare`, or `npm run build`): `--help` and command lookup read
// the manifest and load no command; running a command loads its own module only. Without a build
// (a clone before `npm install`), it runs from the TypeScript sources through bin/dev.js.
import { existsSync } from "node:fs"

if (existsSync(new URL("../oclif.manifest.json", import.meta.url))) {
  const { execute } = await import("@oclif/core")
  await execute({ dir: import.meta.url })
} else {
  await import("./dev.js")
}
