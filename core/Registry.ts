/**
 * A registry of contributions of one kind, keyed by id, remembering which plugin gave each.
 * Registering an id twice fails with `DuplicateContribution` naming both plugins.
 */
import { Effect, Schema } from "effect"

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

/** Mutable during boot, read afterwards. `kind` names the contribution kind in errors. */
export class Registry<T> {
  private readonly entries = new Map<string, Entry<T>>()
  constructor(readonly kind: string) {}

  /** Adds `value` under `id` for `plugin`; fails on a duplicate id. */
  register(plugin: string, id: string, value: T): Effect.Effect<void, DuplicateContribution> {
    const existing = this.entries.get(id)
    if (existing) {
      return Effect.fail(new DuplicateContribution({ kind: this.kind, id, first: existing.plugin, second: plugin }))
    }
    this.entries.set(id, { plugin, value })
    return Effect.void
  }

  get(id: string): T | undefined {
    return this.entries.get(id)?.value
  }

  entry(id: string): Entry<T> | undefined {
    return this.entries.get(id)
  }

  ids(): ReadonlyArray<string> {
    return [...this.entries.keys()]
  }

  values(): ReadonlyArray<Entry<T> & { id: string }> {
    return [...this.entries].map(([id, e]) => ({ id, ...e }))
  }
}
