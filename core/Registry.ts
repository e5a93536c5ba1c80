/**
 * A registry of contributions of one kind, keyed by id, remembering which plugin gave each.
 * Registering an id twice fails with `DuplicateContribution` naming both plugins.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/** Two plugins contributed the same id (or the same method and path on one listener). */
export class DuplicateContribution extends Schema.TaggedError<DuplicateContribution>()("DuplicateContribution", {
  kind: Schema.String,
  id: Schema.String,
  first: Schema.String,
  second: Schema.String
}) {
  get message(): string {
    return `duplicate ${this.kind} "${this.id}": contributed by plugin "${this.first}" and plugin "${this.second}"`
  }
}

/** An entry: the contribution and the plugin that contributed it. */
export interface Entry<T> {
  readonly plugin: string
  readonly value: T
}

/** Contributions of one kind by id; filled during boot, read afterwards. */
export interface Registry<T> {
  /** Names the contribution kind in errors (`graph operation`). */
  readonly kind: string
  /** Adds `value` under `id` for `plugin`; fails on a duplicate id. */
  readonly register: (plugin: string, id: string, value: T) => Effect.Effect<void, DuplicateContribution>
  readonly get: (id: string) => T | undefined
  readonly entry: (id: string) => Entry<T> | undefined
  readonly ids: () => ReadonlyArray<string>
  readonly values: () => ReadonlyArray<Entry<T> & { id: string }>
}

/** An empty registry of `kind`. */
export const make = <T>(kind: string): Registry<T> => {
  const entries = new Map<string, Entry<T>>()
  return {
    kind,
    register: (plugin, id, value) => {
      const existing = entries.get(id)
      if (existing) return Effect.fail(new DuplicateContribution({ kind, id, first: existing.plugin, second: plugin }))
      entries.set(id, { plugin, value })
      return Effect.void
    },
    get: (id) => entries.get(id)?.value,
    entry: (id) => entries.get(id),
    ids: () => [...entries.keys()],
    values: () => [...entries].map(([id, e]) => ({ id, ...e }))
  }
}
