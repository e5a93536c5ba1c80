/**
 * The graph engine: runs a validated `Graph` stage by stage over a state of named values.
 *
 * - Inputs seed the state (the job's `params`, else the input's default; a default may be a
 *   `{{ expr }}`, e.g. `{{ today() }}`).
 * - `sequential` runs its operations in order; `parallel` runs them concurrently (each reads the
 *   state as it was when the stage began); `parallel_foreach` runs its operations in order once
 *   per element of a list state, elements concurrently, each element in its own scope (the
 *   element under its `as` name), and writes to `output` the collected value of every element
 *   that succeeded, in input order (list values are concatenated), and to `<output>_errors`
 *   `{index, item, kind, error}` for each element that failed; the stage fails only when every
 *   element failed. `conditional` runs `operations` when `if` holds, else `else`. `loop` runs its
 *   operations, then evaluates `until`, at most `max_iterations` times (`iteration` counts from 0).
 * - GRAPH_MAX_PARALLEL bounds the operations running at once across the whole graph (one
 *   semaphore; only operations hold permits, so nesting cannot deadlock). GRAPH_TIMEOUT bounds
 *   the run. Aborting `signal` interrupts every running operation: their `ctx.signal`s abort.
 * - A failing operation fails its stage: the run rejects with `JobFailure` of the operation's
 *   kind, message `stage "<name>" failed: <message>`, details `{stage_name, message,
 *   partial_outputs: {outputs, state}, stages_completed}`.
 *
 * The engine names no operation: it looks each up in the registry it is given.
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { Artifact, GraphResult } from "./Api.ts"
import type { GraphLimits, GraphOpContext, GraphOperation, OutputFiles } from "../../core/Contribution.ts"
import type { GraphType } from "../../core/GraphTypes.ts"
import { issuesOf } from "../../core/Issues.ts"
import { JobFailure, type JobErrorKind } from "../jobs/Contract.ts"
import { evaluate, fill, truthy } from "./Expr.ts"
import { type Graph, inputSchema, type OpLookup, type OpStep, type Stage } from "./Graph.ts"

export { Artifact, GraphResult } from "./Api.ts"

/** Engine settings: the spec's graph limits plus GRAPH_TIMEOUT. */
export interface EngineLimits extends GraphLimits {
  /** GRAPH_TIMEOUT in milliseconds. */
  readonly timeoutMs: number
}

/** What a run needs. */
export interface RunOptions {
  readonly graph: Graph
  readonly params: Readonly<Record<string, unknown>>
  readonly ops: OpLookup
  readonly limits: EngineLimits
  readonly files: OutputFiles
  readonly progress: (percent: number, message?: string) => Promise<void>
  readonly signal: AbortSignal
  readonly workspaceId?: string | null
}

/** A failed operation, as the engine carries it up to its stage. */
class OpFailed {
  readonly _tag = "OpFailed"
  constructor(readonly kind: JobErrorKind, readonly message: string, readonly retryable?: boolean) {}
}

const NETWORK_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_SOCKET", "UND_ERR_CONNECT_TIMEOUT"])

const toFailure = (op: string, e: unknown): OpFailed => {
  if (e instanceof JobFailure) return new OpFailed(e.kind, e.message.startsWith(op) ? e.message : `${op}: ${e.message}`, e.retryable)
  const err = e as { name?: string; message?: string; code?: string; cause?: { code?: string } }
  const message = `${op}: ${err?.message ?? String(e)}`
  if (err?.name === "TimeoutError") return new OpFailed("TIMEOUT", message)
  const code = err?.code ?? err?.cause?.code
  if (code && NETWORK_CODES.has(code)) return new OpFailed("NETWORK_ERROR", message)
  return new OpFailed("INTERNAL_ERROR", message)
}

const firstIssue = (e: ParseResult.ParseError): string => {
  const i = issuesOf(e)[0]
  return i ? `${i.path.length > 0 ? i.path.join(".") + ": " : ""}${i.message}` : e.message
}

/** The compiled guard of an operation's output type (compiled once per operation). */
const guards = new WeakMap<GraphOperation, (u: unknown) => boolean>()
const outputCheck = (op: GraphOperation): ((u: unknown) => boolean) => {
  let g = guards.get(op)
  if (g === undefined) guards.set(op, g = Schema.is(Schema.typeSchema(op.output)))
  return g
}

/** A scope of state: the graph's, or a foreach element's over it (writes stay in the element). */
class Scope {
  private readonly values = new Map<string, unknown>()
  constructor(private readonly parent: Scope | null, private readonly known: Iterable<string>) {}
  has(name: string): boolean {
    return this.values.has(name) || (this.parent?.has(name) ?? false)
  }
  get(name: string): unknown {
    return this.values.has(name) ? this.values.get(name) : this.parent?.get(name)
  }
  set(name: string, v: unknown): void {
    this.values.set(name, v)
  }
  /** Every visible value; known names not yet written read as null. */
  context(extra: Record<string, unknown> = {}): Record<string, unknown> {
    const out: Record<string, unknown> = {}
    for (const k of this.known) out[k] = null
    Object.assign(out, this.parent?.context() ?? {})
    for (const [k, v] of this.values) out[k] = v
    return Object.assign(out, extra)
  }
  own(): Record<string, unknown> {
    return Object.fromEntries(this.values)
  }
}

/**
 * Runs `o.graph`. Resolves the GraphResult; rejects with `JobFailure` (stage failures carry
 * details, see the module docstring) or, when `o.signal` aborted, with its reason.
 */
export const run = async (o: RunOptions): Promise<GraphResult> => {
  const started = Date.now()
  const g = o.graph
  const state = new Scope(null, g.types.keys())
  const artifacts: Array<Artifact> = []
  let stagesCompleted = 0
  let current: { stage: string; op: string } = { stage: "", op: "" }

  // Inputs: params, else defaults (templates evaluated), decoded with the input's type.
  for (const inp of g.inputs) {
    let v = o.params[inp.name]
    if (v === undefined || v === null) v = inp.default === undefined ? null : fill(inp.default, {})
    if (v === null) {
      if (inp.required) throw new JobFailure("VALIDATION_ERROR", `params.${inp.name} is required`, false)
      state.set(inp.name, null)
      continue
    }
    const d = Schema.decodeUnknownEither(inputSchema(inp.type))(v)
    if (Either.isLeft(d)) throw new JobFailure("VALIDATION_ERROR", `params.${inp.name} must be ${inp.type}: ${firstIssue(d.left)}`, false)
    state.set(inp.name, d.right)
  }

  const total = g.stages.length
  const stageProgress = (i: number, fraction: number, message: string) =>
    o.progress(Math.min(99, Math.floor((100 * (i + Math.max(0, Math.min(1, fraction)))) / total)), message).catch(() => {})

  const files = (stage: string, op: string): OutputFiles => ({
    put: async (name, data, contentType) => {
      const stored = await o.files.put(name, data, contentType)
      const size = typeof data === "string" ? Buffer.byteLength(data) : data.byteLength
      artifacts.push({ name, url: stored.url, content_type: contentType ?? null, size_bytes: size, stage, op })
      return stored
    }
  })

  return Effect.runPromise(Effect.gen(function*() {
    const permits = yield* Effect.makeSemaphore(Math.max(1, o.limits.maxParallel))

    const runOp = (step: OpStep, scope: Scope, stageIndex: number, stage: string, extra: Record<string, unknown>) =>
      Effect.gen(function*() {
        const op = o.ops(step.op) as GraphOperation | undefined
        if (op === undefined) return yield* Effect.fail(new OpFailed("INTERNAL_ERROR", `operation "${step.op}" is not registered in this worker`, false))
        const ctxValues = scope.context(extra)
        const filled = yield* Effect.try({
          try: () => fill(step.params, ctxValues),
          catch: (e) => new OpFailed("VALIDATION_ERROR", `${op.name}: params: ${(e as Error).message}`, false)
        })
        const params = Schema.decodeUnknownEither(op.params)(filled, { onExcessProperty: "error" })
        if (Either.isLeft(params)) return yield* Effect.fail(new OpFailed("VALIDATION_ERROR", `${op.name}: params: ${firstIssue(params.left)}`, false))
        const raw = step.inputs.length === 0
          ? null
          : step.inputList
          ? step.inputs.map((s) => scope.get(s)).filter((v) => v !== null && v !== undefined)
          : scope.get(step.inputs[0]!) ?? null
        const input = Schema.decodeUnknownEither(op.input)(raw)
        if (Either.isLeft(input)) {
          const what = step.inputs.length === 0 ? "no input" : `input ${step.inputs.join(", ")}`
          return yield* Effect.fail(new OpFailed("VALIDATION_ERROR", `${op.name}: ${what} does not fit: ${firstIssue(input.left)}`, false))
        }
        current = { stage, op: op.name }
        const ctx = (signal: AbortSignal): GraphOpContext => ({
          signal,
          files: files(stage, op.name),
          limits: o.limits,
          progress: (p, m) => stageProgress(stageIndex, p / 100, `${stage}: ${op.name}${m ? `: ${m}` : ""}`)
        })
        const value = yield* permits.withPermits(1)(Effect.tryPromise({
          try: (signal) => op.handler(params.right, input.right, ctx(signal)),
          catch: (e) => toFailure(op.name, e)
        }))
        if (!outputCheck(op)(value)) {
          const checked = Schema.validateEither(Schema.typeSchema(op.output))(value)
          const why = Either.isLeft(checked) ? firstIssue(checked.left) : "rejected"
          return yield* Effect.fail(new OpFailed("INTERNAL_ERROR", `${op.name}: output does not match its declared schema: ${why}`, false))
        }
        if (step.output !== null) scope.set(step.output, value)
        return value
      })

    const runSequence = (steps: ReadonlyArray<OpStep>, scope: Scope, i: number, stage: string, extra: Record<string, unknown> = {}) =>
      Effect.forEach(steps, (s) => runOp(s, scope, i, stage, extra), { discard: true })

    const runStage = (s: Stage, i: number): Effect.Effect<string, OpFailed> =>
      Effect.gen(function*() {
        switch (s.mode) {
          case "sequential":
            yield* runSequence(s.operations, state, i, s.name)
            return `${s.operations.length} operation(s)`
          case "parallel":
            yield* Effect.forEach(s.operations, (step) => runOp(step, state, i, s.name, {}), { concurrency: "unbounded", discard: true })
            return `${s.operations.length} operation(s) in parallel`
          case "conditional": {
            const holds = yield* Effect.try({
              try: () => truthy(evaluate(s.if, state.context())),
              catch: (e) => new OpFailed("VALIDATION_ERROR", `condition {{ ${s.if} }}: ${(e as Error).message}`, false)
            })
            yield* runSequence(holds ? s.operations : s.else, state, i, s.name)
            return holds ? "condition held" : s.else.length > 0 ? "condition did not hold: else branch" : "condition did not hold: skipped"
          }
          case "loop": {
            let n = 0
            for (; n < s.maxIterations; n++) {
              yield* runSequence(s.operations, state, i, s.name, { iteration: n })
              const done = yield* Effect.try({
                try: () => truthy(evaluate(s.until, state.context({ iteration: n }))),
                catch: (e) => new OpFailed("VALIDATION_ERROR", `until {{ ${s.until} }}: ${(e as Error).message}`, false)
              })
              yield* Effect.promise(() => stageProgress(i, (n + 1) / s.maxIterations, `${s.name}: iteration ${n + 1}${done ? " (until held)" : ""}`))
              if (done) return `${n + 1} iteration(s), until held`
            }
            return `${n} iteration(s), max_iterations reached`
          }
          case "parallel_foreach": {
            const items = state.get(s.input)
            const list = Array.isArray(items) ? items : items === null || items === undefined ? [] : [items]
            let done = 0
            const results = yield* Effect.forEach(list, (item, index) => {
              const scope = new Scope(state, [])
              scope.set(s.as, item)
              return runSequence(s.operations, scope, i, s.name).pipe(
                Effect.map(() => (s.collect === null ? null : scope.get(s.collect))),
                Effect.either,
                Effect.tap(() => {
                  done++
                  return Effect.promise(() => stageProgress(i, done / list.length, `${s.name}: ${done}/${list.length} element(s)`))
                }),
                Effect.map((r) => ({ index, item, r }))
              )
            }, { concurrency: s.concurrency ?? Math.max(1, o.limits.maxParallel) })
            const ok: Array<unknown> = []
            const errors: Array<{ index: number; item: unknown; kind: string; error: string }> = []
            for (const { index, item, r } of results) {
              if (Either.isRight(r)) {
                if (Array.isArray(r.right)) ok.push(...r.right)
                else if (r.right !== null && r.right !== undefined) ok.push(r.right)
              } else errors.push({ index, item, kind: r.left.kind, error: r.left.message })
            }
            if (s.output !== null) {
              state.set(s.output, ok)
              state.set(`${s.output}_errors`, errors)
            }
            if (list.length > 0 && errors.length === list.length) {
              return yield* Effect.fail(new OpFailed(errors[0]!.kind as JobErrorKind, `every element failed (${errors.length}); first: ${errors[0]!.error}`))
            }
            return `${list.length - errors.length} of ${list.length} element(s) succeeded`
          }
        }
      })

    for (const [i, s] of g.stages.entries()) {
      yield* Effect.promise(() => stageProgress(i, 0, `stage ${i + 1}/${total} ${s.name}: started`))
      const outcome = yield* runStage(s, i).pipe(
        Effect.mapError((f) => ({ stage: s.name, failure: f }))
      )
      stagesCompleted++
      yield* Effect.promise(() => stageProgress(i, 1, `stage ${i + 1}/${total} ${s.name}: ${outcome}`))
    }
  }).pipe(
    Effect.timeoutFail({
      duration: Duration.millis(o.limits.timeoutMs),
      onTimeout: () => ({ stage: current.stage, failure: new OpFailed("TIMEOUT", `graph exceeded GRAPH_TIMEOUT of ${Math.round(o.limits.timeoutMs / 1000)} s (in operation ${current.op || "?"})`, true) })
    }),
    Effect.exit
  ), { signal: o.signal }).then(async (exit) => {
    const snapshot = state.own()
    const outputs = Object.fromEntries(g.outputs.map((n) => [n, snapshot[n] ?? null]))
    if (Exit.isFailure(exit)) {
      if (o.signal.aborted) throw o.signal.reason
      const failed = Cause.failureOption(exit.cause)
      if (Option.isNone(failed)) throw Cause.squash(exit.cause)
      const { stage, failure } = failed.value
      const message = `stage "${stage}" failed: ${failure.message}`
      throw new JobFailure(failure.kind, message, failure.retryable, {
        stage_name: stage,
        message: failure.message,
        stages_completed: stagesCompleted,
        partial_outputs: { outputs, state: snapshot }
      })
    }
    const index = await o.files.put("artifacts.json", JSON.stringify({ graph_name: g.name, artifacts }, null, 2), "application/json")
    return {
      graph_name: g.name,
      stages_completed: stagesCompleted,
      stages_total: total,
      duration_seconds: (Date.now() - started) / 1000,
      outputs,
      state: snapshot,
      artifacts,
      artifacts_url: index.url,
      ...(o.workspaceId !== undefined ? { workspace_id: o.workspaceId } : {})
    } satisfies GraphResult
  }, (e: unknown) => {
    // The fiber was interrupted (cancel, worker timeout): the abort reason says why.
    throw o.signal.aborted ? o.signal.reason : e
  })
}

/** The declared graph type of a state (for listings). */
export const typeOf = (g: Graph, state: string): GraphType | undefined => g.types.get(state)
