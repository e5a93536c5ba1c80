/**
 * Extension points (Backstage's idea): a plugin owns a kind of contribution that other plugins
 * register into, e.g. the `jobs` plugin's job types. The owner declares the point in its public
 * contract module; contributors return `ExtensionPoint.extend(point, ...values)` among their
 * contributions and list the owner in `dependsOn`, so the kernel sets them up after it. The
 * kernel keeps one registry per point (ids unique per point, a duplicate is a boot error naming
 * both plugins) and hands it to whoever asks through the `Extensions` service.
 */
import type { Registry } from "./Registry.ts"

/** A point `T` values are registered into. */
export interface ExtensionPoint<T> {
  readonly _tag: "ExtensionPoint"
  /** Key of the point's ids in a plugin's status (`platform plugins list`), e.g. `jobTypes`. */
  readonly name: string
  /** What one value is called in errors, e.g. `job type`. */
  readonly kind: string
  /** Name of the plugin that owns the point and reads what is registered. */
  readonly owner: string
  /** The id a value is registered under. */
  readonly idOf: (value: T) => string
}

/** One value contributed to a point. */
export interface Extension<T = any> {
  readonly point: ExtensionPoint<T>
  readonly value: T
}

/** Declares a point; `options.owner` is the owning plugin's name. */
export const make = <T>(options: Omit<ExtensionPoint<T>, "_tag">): ExtensionPoint<T> => ({ _tag: "ExtensionPoint", ...options })

/** The contributions registering `values` into `point`. */
export const extend = <T>(point: ExtensionPoint<T>, ...values: ReadonlyArray<T>): ReadonlyArray<Extension<T>> =>
  values.map((value) => ({ point, value }))

/** The registries of every point, as the kernel fills them. */
export interface Extensions {
  /** The registry of `point` (empty until contributors are set up; created on first use). */
  readonly registry: <T>(point: ExtensionPoint<T>) => Registry<T>
}
