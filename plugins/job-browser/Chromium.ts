/** Chromium facts the plugin's config defaults need, apart from the pool (which loads playwright-core). */

/** Chromium flags that keep a headless server browser quiet (ENVIRONMENT-NOTES.md). */
export const DEFAULT_ARGS: ReadonlyArray<string> = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"
]

/**
 * The `bypass` of a routed context: Chromium bypasses its proxy for loopback hosts unless told
 * `<-loopback>`, and a page fetched under a geo route must go out through that route, whatever
 * its host (the cluster's loopback banks and their tests rely on it).
 */
export const LOOPBACK_TOO = "<-loopback>"
