#!/usr/bin/env node
// The `platform` CLI (oclif). Commands are TypeScript under cli/commands and run without a
// build step: tsx's loader is registered before oclif loads them.
import { register } from "tsx/esm/api"

register()
const { execute } = await import("@oclif/core")
await execute({ dir: import.meta.url })
