/**
 * The graph service of this plugin: validates graphs against the operations registered in the
 * kernel and the templates, resolves a job payload to a graph, lists operations.
 */
import * as Either from "effect/Either"
import * as JSONSchema from "effect/JSONSchema"
import * as Schema from "effect/Schema"
import type { GraphOperation } from "../../core/Contribution.ts"
import type { Registry } from "../../core/Registry.ts"
import { type Graph, type Problem, validate } from "./Graph.ts"
import { TemplateStore } from "./Templates.ts"

/** Why a payload has no runnable graph: problems keyed by the payload field at fault. */
export interface PayloadProblems {
  readonly field: "graph" | "template" | "params"
  readonly problems: ReadonlyArray<Problem>
}

/** Graph validation and resolution over the kernel's operation registry and the template store. */
export class Graphs {
  constructor(readonly ops: Registry<GraphOperation>, readonly templates: TemplateStore) {}

  /** Validates YAML text; `params` are checked against the inputs when given. */
  check(yaml: string, params?: Readonly<Record<string, unknown>>): { graph?: Graph; problems: ReadonlyArray<Problem> } {
    return validate(yaml, { ops: (n) => this.ops.get(n), opNames: () => this.ops.ids(), ...(params !== undefined ? { params } : {}) })
  }

  /**
   * The graph a payload runs: its inline `graph`, or the named `template`, validated with its
   * `params`. Left: what is wrong (`field` says which payload field to fix).
   */
  resolve(p: { graph?: string | undefined; template?: string | undefined; params?: Readonly<Record<string, unknown>> }): Either.Either<Graph, PayloadProblems> {
    const at = { line: 1, column: 1 }
    if ((p.graph === undefined) === (p.template === undefined)) {
      return Either.left({ field: p.graph === undefined ? "graph" : "template", problems: [{ ...at, path: "", message: "give exactly one of graph (inline YAML) or template (a template name)" }] })
    }
    let yaml: string
    let field: "graph" | "template" = "graph"
    if (p.template !== undefined) {
      const t = this.templates.get(p.template)
      if (t === undefined) {
        const names = this.templates.list().map((x) => x.name)
        return Either.left({ field: "template", problems: [{ ...at, path: "", message: `unknown template "${p.template}"; templates: ${names.join(", ")}` }] })
      }
      yaml = t.yaml
      field = "template"
    } else yaml = p.graph!
    const r = this.check(yaml, p.params)
    if (r.graph !== undefined) return Either.right(r.graph)
    const onlyParams = r.problems.every((x) => x.path.startsWith("params."))
    return Either.left({ field: onlyParams ? "params" : field, problems: r.problems })
  }

  /** Every registered operation with its types and params JSON Schema, by name. */
  operations() {
    return this.ops.values().map(({ id, plugin, value: op }) => {
      let params: unknown
      try {
        params = JSONSchema.make(op.params)
      } catch {
        params = { description: "params schema not expressible as JSON Schema" }
      }
      return {
        name: id,
        plugin,
        category: op.category,
        description: op.description,
        input_types: [...op.inputTypes],
        input_optional: op.inputTypes.length === 0 || Either.isRight(Schema.decodeUnknownEither(op.input)(null)),
        output_type: op.outputType,
        params
      }
    }).sort((a, b) => a.name.localeCompare(b.name))
  }
}
