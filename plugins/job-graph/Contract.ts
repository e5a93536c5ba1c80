/**
 * The public contract of the `job-graph` plugin: the only module of it other plugins import.
 *
 * `GraphRunObservers` is an extension point: a plugin registering an observer (list `job-graph`
 * in `dependsOn`, return `extensions: graphRunObservers(...)`) is told when a graph job run
 * starts and ends, e.g. to file a run into a workspace. The graph result types are exported for
 * consumers of runs.
 */
import * as ExtensionPoint from "../../core/ExtensionPoint.ts"
import type { OutputFiles } from "../../core/Contribution.ts"
import type { GraphResult } from "./Engine.ts"

export { type Artifact, GraphResult } from "./Engine.ts"

/** What an observer learns of a run. */
export interface GraphRun {
  readonly jobId: string
  /** 1-based attempt of the job. */
  readonly attempt: number
  readonly graphName: string
  /** The template it came from, when the payload named one. */
  readonly template: string | null
  readonly params: Readonly<Record<string, unknown>>
  readonly workspaceId: string | null
  readonly startedAt: string
}

/** How a run ended. `error_details` of a failure carries the stage and partial outputs. */
export type GraphRunOutcome =
  | { readonly status: "COMPLETED"; readonly result: GraphResult }
  | { readonly status: "FAILED"; readonly errorKind: string; readonly error: string; readonly details?: Record<string, unknown> }

/**
 * An observer of graph runs. `onStart` runs before the first stage: rejecting with `JobFailure`
 * fails the job (e.g. VALIDATION_ERROR for an unknown or archived workspace). `onFinished` runs
 * after the last stage (or the failure); its rejection fails the job with the observer's error
 * (a run that could not be filed is not silently lost). Neither runs for a cancelled job.
 */
export interface GraphRunObserver {
  readonly id: string
  readonly onStart?: (run: GraphRun, ctx: { readonly signal: AbortSignal }) => Promise<void>
  readonly onFinished: (run: GraphRun, outcome: GraphRunOutcome, ctx: { readonly signal: AbortSignal; readonly files: OutputFiles }) => Promise<void>
}

/** The extension point observers register into (owned by `job-graph`). */
export const GraphRunObservers = ExtensionPoint.make<GraphRunObserver>({ name: "graphRunObservers", kind: "graph run observer", owner: "job-graph", idOf: (o) => o.id })

/** The contributions registering `observers`. */
export const graphRunObservers = (...observers: ReadonlyArray<GraphRunObserver>) => ExtensionPoint.extend(GraphRunObservers, ...observers)
