/**
 * Graph definitions (research-jobs spec, "Graph definition (YAML)"): parsing with source
 * positions and whole-graph validation before anything runs.
 *
 * A graph is a YAML mapping: `name`, `description`, `version`, `inputs` (list of `{name, type,
 * required, default, description}`), `stages` (list of `{name, <one mode key>}`), `outputs`
 * (state names). Every mode key takes a body mapping (see README.md for the full grammar):
 * - `sequential` / `parallel`: `{operations: [op...]}` (a bare list of operations is accepted);
 * - `parallel_foreach`: `{input: <list state>, as: <element name, default item>, operations,
 *   output: <state>, collect: <per-element state, default the last operation's output>,
 *   concurrency}`;
 * - `conditional`: `{if: <expression>, operations, else: [op...]}`;
 * - `loop`: `{until: <expression>, max_iterations: <1..100, default 5>, operations}`; a state the
 *   body writes may be read anywhere in the body (null before its first write).
 * An operation is `{op, input: <state or list of states>, params: {...}, output: <state>}`.
 *
 * `validate` reports every problem at once, each with the 1-based line and column of the YAML
 * node at fault and its path (`stages[2].operations[0].op`): YAML syntax, unknown keys, missing
 * keys, zero or two mode keys, unknown operations, a state read before any stage writes it, an
 * input state whose type does not fit the operation (`url[]` into an op taking `html[]`), bad
 * params (checked against the op's params Schema), `{{ expr }}` syntax and undefined names,
 * inputs with unknown types or defaults of the wrong type, and the job's `params` against the
 * inputs (missing required, wrong type, unknown names).
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { isMap, isSeq, LineCounter, parseDocument, type Document } from "yaml"
import type { GraphOperation } from "../../core/Contribution.ts"
import { elementType, fits, type GraphType, isGraphType, parseGraphType } from "../../core/GraphTypes.ts"
import { issuesOf } from "../../core/Issues.ts"
import { ExprSyntaxError, FUNCTIONS, isTemplate, references, templateExpressions } from "./Expr.ts"

/** One problem found in a graph: where (1-based line/column, path) and what. */
export interface Problem {
  readonly line: number
  readonly column: number
  readonly path: string
  readonly message: string
}

/** The text of a problem: `line:col path: message`. */
export const formatProblem = (p: Problem): string => `${p.line}:${p.column} ${p.path || "(graph)"}: ${p.message}`

/** An input of a graph. `type` is a graph type of inputs: string, int, float, bool, url, and their lists. */
export interface InputDef {
  readonly name: string
  readonly type: GraphType
  readonly required: boolean
  readonly default?: unknown
  readonly description?: string
}

/** One operation of a stage, as validated. `inputs` is empty for an op given no input. */
export interface OpStep {
  readonly op: string
  readonly inputs: ReadonlyArray<string>
  /** True when `input` was written as a list (the op then receives a list of the values). */
  readonly inputList: boolean
  readonly params: Readonly<Record<string, unknown>>
  readonly output: string | null
  readonly path: string
}

/** Stage bodies by mode. */
export type Stage =
  | { readonly name: string; readonly mode: "sequential" | "parallel"; readonly operations: ReadonlyArray<OpStep> }
  | {
    readonly name: string
    readonly mode: "parallel_foreach"
    readonly input: string
    readonly as: string
    readonly operations: ReadonlyArray<OpStep>
    readonly output: string | null
    readonly collect: string | null
    readonly concurrency: number | null
  }
  | { readonly name: string; readonly mode: "conditional"; readonly if: string; readonly operations: ReadonlyArray<OpStep>; readonly else: ReadonlyArray<OpStep> }
  | { readonly name: string; readonly mode: "loop"; readonly until: string; readonly maxIterations: number; readonly operations: ReadonlyArray<OpStep> }

/** A validated graph. `types` gives the graph type of every state (inputs included). */
export interface Graph {
  readonly name: string
  readonly description: string
  readonly version: string | null
  readonly inputs: ReadonlyArray<InputDef>
  readonly stages: ReadonlyArray<Stage>
  readonly outputs: ReadonlyArray<string>
  readonly types: ReadonlyMap<string, GraphType>
}

/** The stage modes of the spec. */
export const MODES = ["sequential", "parallel", "parallel_foreach", "conditional", "loop"] as const
/** Graph types an input may declare. */
export const INPUT_TYPES: ReadonlyArray<GraphType> = ["string", "int", "float", "bool", "url", "string[]", "int[]", "float[]", "url[]", "json"]
/** The hard cap of `loop.max_iterations`; the default when a loop names none. */
export const LOOP_CAP = 100
export const LOOP_DEFAULT = 5

const GRAPH_KEYS = ["name", "description", "version", "inputs", "stages", "outputs"]
const INPUT_KEYS = ["name", "type", "required", "default", "description"]
const OP_KEYS = ["op", "input", "params", "output"]
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/
/** Names expressions may use besides inputs and states. */
const RESERVED = new Set(["iteration", "true", "false", "null"])

type Path = ReadonlyArray<string | number>

const pathText = (path: Path): string =>
  path.reduce<string>((acc, k) => (typeof k === "number" ? `${acc}[${k}]` : acc === "" ? k : `${acc}.${k}`), "")

const editDistance = (a: string, b: string): number => {
  const d = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0]!
    d[0] = i
    for (let j = 1; j <= b.length; j++) {
      const t = d[j]!
      d[j] = Math.min(d[j]! + 1, d[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1))
      prev = t
    }
  }
  return d[b.length]!
}

/** ` (did you mean "x"?)` when a known name is close to `name`. */
export const suggest = (name: string, known: Iterable<string>): string => {
  let best: string | undefined
  let bestD = Infinity
  for (const k of known) {
    const dd = editDistance(name, k)
    if (dd < bestD) [best, bestD] = [k, dd]
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(name.length / 3)) ? ` (did you mean "${best}"?)` : ""
}

/** A parsed YAML document with a locator from paths to positions. */
export interface Source {
  readonly value: unknown
  readonly syntax: ReadonlyArray<Problem>
  /** Position of the node at `path`, or of its nearest existing ancestor. */
  readonly at: (path: Path, key?: boolean) => { line: number; column: number }
}

/** Parses YAML text keeping positions; syntax errors become problems (value then null). */
export const parseSource = (text: string): Source => {
  const lineCounter = new LineCounter()
  const doc: Document = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true })
  const pos = (offset: number) => {
    const p = lineCounter.linePos(offset)
    return { line: p.line, column: p.col }
  }
  const syntax = doc.errors.map((e) => ({ ...pos(e.pos[0]), path: "", message: `YAML: ${e.message.split("\n")[0]}` }))
  const at = (path: Path, key = false): { line: number; column: number } => {
    for (let n = path.length; n >= 0; n--) {
      const sub = path.slice(0, n)
      if (key && n === path.length && n > 0) {
        const parent = sub.length > 1 ? doc.getIn(sub.slice(0, -1), true) : doc.contents
        if (isMap(parent)) {
          const pair = parent.items.find((p) => (p.key as { value?: unknown })?.value === sub[sub.length - 1])
          const range = (pair?.key as { range?: [number, number, number] } | undefined)?.range
          if (range) return pos(range[0])
        }
      }
      const node = n === 0 ? doc.contents : doc.getIn(sub, true)
      const range = (node as { range?: [number, number, number] } | null | undefined)?.range
      if (range) return pos(range[0])
    }
    return { line: 1, column: 1 }
  }
  if (syntax.length > 0) return { value: null, syntax, at }
  try {
    return { value: doc.toJS({ maxAliasCount: 100 }), syntax, at }
  } catch (e) {
    // An alias to no anchor (`*a`), or one expanding past maxAliasCount: found only on conversion.
    return { value: null, syntax: [{ line: 1, column: 1, path: "", message: `YAML: ${(e as Error).message.split("\n")[0]}` }], at }
  }
}

/** Lookup of operations by name (the kernel's graph operation registry). */
export type OpLookup = (name: string) => GraphOperation | undefined

/** What `validate` needs besides the text. */
export interface ValidateOptions {
  readonly ops: OpLookup
  readonly opNames: () => Iterable<string>
  /** The job's `params`, checked against the inputs when given. */
  readonly params?: Readonly<Record<string, unknown>>
}

/** An input value's Schema for its declared type. */
export const inputSchema = (t: GraphType): Schema.Schema<any, any> => {
  const p = parseGraphType(t)!
  const base: Schema.Schema<any, any> =
    p.base === "int" ? Schema.Int
    : p.base === "float" ? Schema.Number
    : p.base === "bool" ? Schema.Boolean
    : p.base === "url" ? Schema.String.pipe(Schema.pattern(/^https?:\/\/\S+$/i, { message: () => "expected an http(s) URL" }))
    : p.base === "json" ? Schema.Unknown
    : Schema.String
  return p.list ? Schema.Array(base) : base
}

/** True when `schema` accepts `null` (an op whose input Schema does takes no input when given none). */
const acceptsNull = (schema: Schema.Schema<any, any>): boolean => Either.isRight(Schema.decodeUnknownEither(schema)(null))

/**
 * Validates graph YAML `text` as a whole. Returns the graph when there is no problem; otherwise
 * every problem found (the graph is then undefined). Never throws.
 */
export const validate = (text: string, o: ValidateOptions): { graph?: Graph; problems: ReadonlyArray<Problem> } => {
  const src = parseSource(text)
  if (src.syntax.length > 0) return { problems: src.syntax }
  return validateValue(src, o)
}

/** `validate` over an already parsed source. */
export const validateValue = (src: Source, o: ValidateOptions): { graph?: Graph; problems: ReadonlyArray<Problem> } => {
  const problems: Array<Problem> = []
  const report = (path: Path, message: string, key = false) => problems.push({ ...src.at(path, key), path: pathText(path), message })
  const root = src.value
  if (root === null || typeof root !== "object" || Array.isArray(root)) {
    report([], "a graph is a YAML mapping with name, stages and outputs")
    return { problems }
  }
  const g = root as Record<string, unknown>
  const unknownKeys = (obj: Record<string, unknown>, allowed: ReadonlyArray<string>, path: Path) => {
    for (const k of Object.keys(obj)) if (!allowed.includes(k)) report([...path, k], `unknown key "${k}"${suggest(k, allowed)}; allowed: ${allowed.join(", ")}`, true)
  }
  unknownKeys(g, GRAPH_KEYS, [])
  const str = (v: unknown, path: Path, what: string, required: boolean): string | null => {
    if (v === undefined || v === null) {
      if (required) report(path.slice(0, -1), `missing "${String(path[path.length - 1])}" (${what})`)
      return null
    }
    if (typeof v !== "string" || v.trim() === "") {
      report(path, `${what} must be a non-empty string`)
      return null
    }
    return v
  }
  const name = str(g.name, ["name"], "the graph's name", true) ?? "graph"
  const description = typeof g.description === "string" ? g.description : ""
  if (g.description !== undefined && typeof g.description !== "string") report(["description"], "description must be a string")
  const version = g.version === undefined || g.version === null ? null : String(g.version)

  // Inputs: declared types, defaults, and the job's params against them.
  const types = new Map<string, GraphType>()
  const inputs: Array<InputDef> = []
  if (g.inputs !== undefined && g.inputs !== null && !Array.isArray(g.inputs)) report(["inputs"], "inputs must be a list of {name, type, required, default}")
  for (const [i, raw] of (Array.isArray(g.inputs) ? g.inputs : []).entries()) {
    const path = ["inputs", i]
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
      report(path, "an input is a mapping {name, type, required, default}")
      continue
    }
    const inp = raw as Record<string, unknown>
    unknownKeys(inp, INPUT_KEYS, path)
    const n = str(inp.name, [...path, "name"], "the input's name", true)
    if (n !== null && !NAME.test(n)) report([...path, "name"], `input name "${n}" must match ${NAME.source}`)
    if (n !== null && types.has(n)) report([...path, "name"], `duplicate input "${n}"`)
    const t = inp.type === undefined ? "string" : inp.type
    if (typeof t !== "string" || !isGraphType(t) || !INPUT_TYPES.includes(t as GraphType)) {
      report([...path, "type"], `unknown input type ${JSON.stringify(t)}; one of ${INPUT_TYPES.join(", ")}`)
      continue
    }
    if (inp.required !== undefined && typeof inp.required !== "boolean") report([...path, "required"], "required must be true or false")
    const required = inp.required === true
    if (inp.default !== undefined && inp.default !== null && !(typeof inp.default === "string" && isTemplate(inp.default))) {
      const d = Schema.decodeUnknownEither(inputSchema(t as GraphType))(inp.default)
      if (Either.isLeft(d)) report([...path, "default"], `default does not fit type ${t}: ${issuesOf(d.left)[0]?.message}`)
    }
    if (n === null) continue
    types.set(n, t as GraphType)
    inputs.push({ name: n, type: t as GraphType, required, ...(inp.default !== undefined ? { default: inp.default } : {}), ...(typeof inp.description === "string" ? { description: inp.description } : {}) })
  }
  const inputNames = new Set(inputs.map((i) => i.name))
  // Problems of the job's params are reported at `params.<name>`, positioned at the input's declaration.
  const paramProblem = (inp: InputDef, message: string) => problems.push({ ...src.at(["inputs", inputs.indexOf(inp)]), path: `params.${inp.name}`, message })
  if (o.params !== undefined) {
    for (const inp of inputs) {
      const v = o.params[inp.name]
      if (v === undefined || v === null) {
        if (inp.required && (inp.default === undefined || inp.default === null)) paramProblem(inp, `params.${inp.name} is required (${inp.type})`)
        continue
      }
      const d = Schema.decodeUnknownEither(inputSchema(inp.type))(v)
      if (Either.isLeft(d)) paramProblem(inp, `params.${inp.name} must be ${inp.type}: ${issuesOf(d.left)[0]?.message}`)
    }
    for (const k of Object.keys(o.params)) {
      if (!inputNames.has(k)) problems.push({ ...src.at(["inputs"]), path: `params.${k}`, message: `params.${k} is not an input of this graph${suggest(k, inputNames)}; inputs: ${[...inputNames].join(", ") || "none"}` })
    }
  }

  // Expressions: syntax, and every name defined where the expression is evaluated.
  const checkExpr = (expr: string, path: Path, scope: ReadonlySet<string>) => {
    try {
      const refs = references(expr)
      for (const f of refs.functions) if (!(f in FUNCTIONS)) report(path, `unknown function "${f}" in {{ ${expr} }}${suggest(f, Object.keys(FUNCTIONS))}`)
      for (const nm of refs.names) {
        if (!scope.has(nm) && !RESERVED.has(nm)) report(path, `"${nm}" is not defined in {{ ${expr} }}: not an input${nm === "" ? "" : " nor a state written by an earlier stage"}${suggest(nm, scope)}`)
      }
    } catch (e) {
      if (e instanceof ExprSyntaxError) report(path, `bad expression {{ ${expr} }}: ${e.message}`)
      else throw e
    }
  }
  const checkTemplates = (v: unknown, path: Path, scope: ReadonlySet<string>) => {
    if (typeof v === "string") for (const e of templateExpressions(v)) checkExpr(e, path, scope)
    else if (Array.isArray(v)) v.forEach((x, i) => checkTemplates(x, [...path, i], scope))
    else if (v !== null && typeof v === "object") for (const [k, x] of Object.entries(v)) checkTemplates(x, [...path, k], scope)
  }
  for (const [i, inp] of inputs.entries()) if (typeof inp.default === "string") checkTemplates(inp.default, ["inputs", i, "default"], new Set())

  // Stages, in order: `written` grows as stages write states.
  const written = new Set<string>(inputNames)
  const stages: Array<Stage> = []
  const stageNames = new Set<string>()

  const setType = (state: string, t: GraphType, path: Path) => {
    const prev = types.get(state)
    if (prev !== undefined && prev !== t && !fits(t, prev)) report(path, `state "${state}" holds ${prev}; this operation writes ${t}`)
    else if (prev === undefined) types.set(state, t)
  }

  /** Validates one operation; `scope` are the names readable; returns the step and its output type. */
  const checkOp = (raw: unknown, path: Path, scope: Set<string>): OpStep | null => {
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
      report(path, "an operation is a mapping {op, input, params, output}")
      return null
    }
    const e = raw as Record<string, unknown>
    unknownKeys(e, OP_KEYS, path)
    const opName = str(e.op, [...path, "op"], "the operation's name", true)
    const op = opName === null ? undefined : o.ops(opName)
    if (opName !== null && op === undefined) report([...path, "op"], `unknown operation "${opName}"${suggest(opName, o.opNames())}`)
    let inputs: Array<string> = []
    const inputList = Array.isArray(e.input)
    if (e.input !== undefined && e.input !== null) {
      const list = inputList ? (e.input as Array<unknown>) : [e.input]
      if (inputList && list.length === 0) report([...path, "input"], "input list is empty")
      for (const [j, s] of list.entries()) {
        const ip = inputList ? [...path, "input", j] : [...path, "input"]
        if (typeof s !== "string" || !NAME.test(s)) {
          report(ip, `input must name a state (or be a list of state names), got ${JSON.stringify(s)}`)
          continue
        }
        if (!scope.has(s)) {
          report(ip, `state "${s}" is read before any stage writes it${suggest(s, scope)}`)
          continue
        }
        inputs.push(s)
      }
    }
    if (op !== undefined) {
      if (op.inputTypes.length === 0 && inputs.length > 0) report([...path, "input"], `operation "${op.name}" takes no input (everything comes from params)`)
      else if (op.inputTypes.length > 0 && e.input === undefined && !acceptsNull(op.input)) {
        report(path, `operation "${op.name}" needs an input of type ${op.inputTypes.join(" or ")}`)
      }
      for (const [j, s] of inputs.entries()) {
        const t = types.get(s)
        if (t === undefined || op.inputTypes.length === 0) continue
        if (!op.inputTypes.some((a) => fits(t, a))) {
          const ip = inputList ? [...path, "input", j] : [...path, "input"]
          report(ip, `state "${s}" holds ${t}, but operation "${op.name}" takes ${op.inputTypes.join(" or ")}`)
        }
      }
    }
    const params = e.params === undefined || e.params === null ? {} : e.params
    if (typeof params !== "object" || Array.isArray(params)) report([...path, "params"], "params must be a mapping")
    else {
      checkTemplates(params, [...path, "params"], scope)
      if (op !== undefined) {
        // Values holding {{ }} are known only at run time: their issues are left to then.
        const templated = new Set<string>()
        const mark = (v: unknown, p: Path) => {
          if (typeof v === "string" && isTemplate(v)) templated.add(pathText(p))
          else if (Array.isArray(v)) v.forEach((x, i) => mark(x, [...p, i]))
          else if (v !== null && typeof v === "object") for (const [k, x] of Object.entries(v)) mark(x, [...p, k])
        }
        mark(params, [])
        const d = Schema.decodeUnknownEither(op.params)(params, { errors: "all", onExcessProperty: "error" })
        if (Either.isLeft(d)) {
          for (const issue of issuesOf(d.left)) {
            const ipath = pathText(issue.path as Path)
            if ([...templated].some((t) => ipath === t || ipath.startsWith(`${t}.`) || ipath.startsWith(`${t}[`) || t.startsWith(`${ipath}.`) || t.startsWith(`${ipath}[`))) continue
            const message = issue._tag === "Unexpected" ? `unknown param "${String(issue.path[issue.path.length - 1])}" of operation "${op.name}"` : `param ${ipath || "(params)"}: ${issue.message}`
            report([...path, "params", ...(issue.path as Path)], message, issue._tag === "Unexpected")
          }
        }
      }
    }
    let output: string | null = null
    if (e.output !== undefined && e.output !== null) {
      if (typeof e.output !== "string" || !NAME.test(e.output)) report([...path, "output"], `output must be a state name matching ${NAME.source}`)
      else if (inputNames.has(e.output)) report([...path, "output"], `output "${e.output}" would overwrite the graph input of that name`)
      else output = e.output
    }
    if (op !== undefined && output !== null) {
      let t = op.outputType
      // A type-preserving op (any[] in, any[] out, like merge) outputs what its inputs hold.
      if (t === "any[]" && op.inputTypes.every((a) => a === "any[]")) {
        const ts = [...new Set(inputs.map((s) => types.get(s)).filter((x): x is GraphType => x !== undefined))]
        if (ts.length === 1 && parseGraphType(ts[0]!)?.list) t = ts[0]!
      }
      setType(output, t, [...path, "output"])
    }
    if (opName === null) return null
    return { op: opName, inputs, inputList, params: (typeof params === "object" && !Array.isArray(params) ? params : {}) as Record<string, unknown>, output, path: pathText(path) }
  }

  /** Validates a list of operations run one after another: each sees the outputs before it. */
  const checkOps = (raw: unknown, path: Path, scope: Set<string>, sequentialScope: boolean): Array<OpStep> => {
    if (!Array.isArray(raw)) {
      report(path, "operations must be a list of {op, input, params, output}")
      return []
    }
    if (raw.length === 0) report(path, "operations is empty")
    const out: Array<OpStep> = []
    const before = new Set(scope)
    const outputs = new Map<string, number>()
    for (const [j, r] of raw.entries()) {
      const step = checkOp(r, [...path, j], sequentialScope ? scope : before)
      if (step === null) continue
      if (step.output !== null) {
        if (!sequentialScope && outputs.has(step.output)) report([...path, j, "output"], `operations ${outputs.get(step.output)} and ${j} of a parallel stage both write "${step.output}"`)
        outputs.set(step.output, j)
        scope.add(step.output)
      }
      out.push(step)
    }
    return out
  }

  /** The body of a mode key: a mapping with `operations`, or a bare list of operations. */
  const body = (v: unknown, path: Path, allowed: ReadonlyArray<string>): Record<string, unknown> | null => {
    if (Array.isArray(v)) return { operations: v, __bare: true }
    if (v === null || typeof v !== "object") {
      report(path, `the body must be a mapping with ${allowed.join(", ")}`)
      return null
    }
    unknownKeys(v as Record<string, unknown>, allowed, path)
    return v as Record<string, unknown>
  }
  const opsPath = (b: Record<string, unknown>, path: Path): Path => (b.__bare ? path : [...path, "operations"])

  if (g.stages === undefined || g.stages === null) report([], `missing "stages" (a list of stages)`)
  else if (!Array.isArray(g.stages)) report(["stages"], "stages must be a list")
  else if (g.stages.length === 0) report(["stages"], "stages is empty")
  for (const [i, raw] of (Array.isArray(g.stages) ? g.stages : []).entries()) {
    const path: Path = ["stages", i]
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
      report(path, "a stage is a mapping: name plus exactly one mode key")
      continue
    }
    const s = raw as Record<string, unknown>
    const sname = str(s.name, [...path, "name"], "the stage's name", true) ?? `stage${i}`
    if (stageNames.has(sname)) report([...path, "name"], `duplicate stage name "${sname}"`)
    stageNames.add(sname)
    const modes = MODES.filter((m) => m in s)
    for (const k of Object.keys(s)) if (k !== "name" && !(MODES as ReadonlyArray<string>).includes(k)) report([...path, k], `unknown key "${k}"${suggest(k, [...MODES, "name"])}; a stage has name and one of ${MODES.join(", ")}`, true)
    if (modes.length === 0) {
      report(path, `stage "${sname}" has no mode key: give exactly one of ${MODES.join(", ")}`)
      continue
    }
    if (modes.length > 1) {
      report([...path, modes[1]!], `stage "${sname}" has ${modes.length} mode keys (${modes.join(", ")}): give exactly one`, true)
      continue
    }
    const mode = modes[0]!
    const mpath: Path = [...path, mode]
    if (mode === "sequential" || mode === "parallel") {
      const b = body(s[mode], mpath, ["operations"])
      if (b === null) continue
      const ops = checkOps(b.operations, opsPath(b, mpath), written, mode === "sequential")
      stages.push({ name: sname, mode, operations: ops })
    } else if (mode === "parallel_foreach") {
      const b = body(s[mode], mpath, ["input", "as", "operations", "output", "collect", "concurrency"])
      if (b === null || b.__bare) {
        if (b?.__bare) report(mpath, "parallel_foreach needs a mapping {input, as, operations, output}")
        continue
      }
      const input = str(b.input, [...mpath, "input"], "the list state to iterate", true)
      let elemType: GraphType = "any"
      if (input !== null) {
        if (!written.has(input)) report([...mpath, "input"], `state "${input}" is read before any stage writes it${suggest(input, written)}`)
        else {
          const t = types.get(input)
          const el = t === undefined ? "any" : elementType(t)
          if (el === undefined) report([...mpath, "input"], `parallel_foreach needs a list state; "${input}" holds ${t}`)
          else elemType = el
        }
      }
      const as = b.as === undefined ? "item" : b.as
      if (typeof as !== "string" || !NAME.test(as)) report([...mpath, "as"], `as must be a name matching ${NAME.source}`)
      const asName = typeof as === "string" ? as : "item"
      if (written.has(asName)) report([...mpath, "as"], `"${asName}" already names a state or input; pick another element name`)
      const prevAs = types.get(asName)
      types.set(asName, elemType)
      const scope = new Set(written)
      scope.add(asName)
      const ops = checkOps(b.operations, [...mpath, "operations"], scope, true)
      const collect = b.collect === undefined ? ops[ops.length - 1]?.output ?? null : typeof b.collect === "string" ? b.collect : null
      if (b.collect !== undefined && (typeof b.collect !== "string" || !ops.some((x) => x.output === b.collect))) report([...mpath, "collect"], `collect must name a state an operation of this body writes`)
      let output: string | null = null
      if (b.output !== undefined && b.output !== null) {
        if (typeof b.output !== "string" || !NAME.test(b.output)) report([...mpath, "output"], `output must be a state name`)
        else if (inputNames.has(b.output)) report([...mpath, "output"], `output "${b.output}" would overwrite the graph input of that name`)
        else output = b.output
      }
      if (output !== null && collect !== null) {
        const ct = types.get(collect) ?? "any"
        const p = parseGraphType(ct)!
        setType(output, (p.list ? ct : `${p.base}[]`) as GraphType, [...mpath, "output"])
        setType(`${output}_errors`, "json[]", [...mpath, "output"])
        written.add(output)
        written.add(`${output}_errors`)
      }
      if (prevAs === undefined) types.delete(asName)
      const conc = b.concurrency
      if (conc !== undefined && (typeof conc !== "number" || !Number.isInteger(conc) || conc < 1)) report([...mpath, "concurrency"], "concurrency must be a positive integer")
      if (input !== null) stages.push({ name: sname, mode, input, as: asName, operations: ops, output, collect, concurrency: typeof conc === "number" ? conc : null })
    } else if (mode === "conditional") {
      const b = body(s[mode], mpath, ["if", "operations", "else"])
      if (b === null || b.__bare) {
        if (b?.__bare) report(mpath, "conditional needs a mapping {if, operations, else}")
        continue
      }
      const cond = str(b.if, [...mpath, "if"], "the condition (an expression)", true)
      if (cond !== null) checkExpr(cond.replace(/^\s*\{\{|\}\}\s*$/g, ""), [...mpath, "if"], written)
      const thenScope = new Set(written)
      const ops = checkOps(b.operations, [...mpath, "operations"], thenScope, true)
      const elseScope = new Set(written)
      const elseOps = b.else === undefined || b.else === null ? [] : checkOps(b.else, [...mpath, "else"], elseScope, true)
      // A state written in either branch may be read later (an unset state reads as null).
      for (const x of [...thenScope, ...elseScope]) written.add(x)
      if (cond !== null) stages.push({ name: sname, mode, if: cond.replace(/^\s*\{\{|\}\}\s*$/g, "").trim(), operations: ops, else: elseOps })
    } else {
      const b = body(s[mode], mpath, ["until", "max_iterations", "operations"])
      if (b === null || b.__bare) {
        if (b?.__bare) report(mpath, "loop needs a mapping {until, max_iterations, operations}")
        continue
      }
      const max = b.max_iterations === undefined ? LOOP_DEFAULT : b.max_iterations
      if (typeof max !== "number" || !Number.isInteger(max) || max < 1 || max > LOOP_CAP) report([...mpath, "max_iterations"], `max_iterations must be an integer from 1 to ${LOOP_CAP}`)
      const scope = new Set(written)
      scope.add("iteration")
      // A state the body writes may be read anywhere in the body (accumulating across
      // iterations); before its first write it reads as null, which a list input skips.
      if (Array.isArray(b.operations)) {
        for (const x of b.operations) {
          const out = (x as { output?: unknown } | null)?.output
          if (typeof out === "string" && NAME.test(out) && !inputNames.has(out)) scope.add(out)
        }
      }
      const ops = checkOps(b.operations, [...mpath, "operations"], scope, true)
      scope.delete("iteration")
      for (const x of scope) written.add(x)
      const until = str(b.until, [...mpath, "until"], "the stop condition (an expression)", true)
      const untilScope = new Set(written)
      untilScope.add("iteration")
      if (until !== null) checkExpr(until.replace(/^\s*\{\{|\}\}\s*$/g, ""), [...mpath, "until"], untilScope)
      if (until !== null) stages.push({ name: sname, mode, until: until.replace(/^\s*\{\{|\}\}\s*$/g, "").trim(), maxIterations: typeof max === "number" ? max : LOOP_DEFAULT, operations: ops })
    }
  }

  const outputs: Array<string> = []
  if (g.outputs !== undefined && g.outputs !== null && !Array.isArray(g.outputs)) report(["outputs"], "outputs must be a list of state names")
  for (const [i, out] of (Array.isArray(g.outputs) ? g.outputs : []).entries()) {
    if (typeof out !== "string") report(["outputs", i], "an output names a state")
    else if (!written.has(out)) report(["outputs", i], `output "${out}" is not written by any stage${suggest(out, written)}`)
    else outputs.push(out)
  }
  if (problems.length > 0) return { problems }
  return { graph: { name, description, version, inputs, stages, outputs, types }, problems }
}
