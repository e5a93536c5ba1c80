// Preloaded with `node --import` (NODE_OPTIONS) by tests that check what a command loads:
// registers the module-load hooks of hooks.mjs, which list every ESM module URL loaded.
import { register } from "node:module"

register(new URL("./hooks.mjs", import.meta.url))
