/** Chromium facts the plugin's config defaults need, apart from the pool (which loads playwright-core). */

/** Chromium flags that keep a headless server browser quiet (ENVIRONMENT-NOTES.md). */
export const DEFAULT_ARGS: ReadonlyArray<string> = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"
]
