/**
 * Whole-graph validation: each broken graph is rejected with the problem at the right YAML line
 * and column and path, and every problem of a graph is reported at once.
 */
import { describe, expect, it } from "vitest"
import { formatProblem, validate } from "../../../plugins/job-graph/Graph.ts"
import { testRegistry } from "./testOps.ts"

const reg = testRegistry()
const check = (yaml: string, params?: Record<string, unknown>) =>
  validate(yaml, { ops: (n) => reg.get(n), opNames: () => reg.ids(), ...(params ? { params } : {}) })

const HEAD = "name: g\n"

/** [title, yaml, expected line, column, path, message fragment] */
const BROKEN: ReadonlyArray<readonly [string, string, number, number, string, string]> = [
  ["YAML syntax", `name: g\nstages: [ {name: a\n`, 3, 1, "", "YAML"],
  ["not a mapping", `- a\n- b\n`, 1, 1, "", "YAML mapping"],
  // Found by the fuzz suite: an alias to no anchor fails only when converted (was a 500).
  ["alias to no anchor", ` *SbK`, 1, 1, "", "YAML: Unresolved alias"],
  ["unknown top-level key", `${HEAD}stagez: []\nstages:\n  - name: a\n    sequential:\n      - { op: list_urls, params: { n: 1 }, output: u }\noutputs: [u]\n`, 2, 1, "stagez", `unknown key "stagez" (did you mean "stages"?)`],
  ["missing stages", `${HEAD}outputs: []\n`, 1, 1, "", `missing "stages"`],
  ["empty stages", `${HEAD}stages: []\n`, 2, 9, "stages", "stages is empty"],
  ["stage without mode", `${HEAD}stages:\n  - name: a\n`, 3, 5, "stages[0]", "has no mode key"],
  ["stage with two modes", `${HEAD}stages:\n  - name: a\n    sequential: []\n    parallel: []\n`, 5, 5, "stages[0].parallel", "2 mode keys"],
  ["unknown stage key", `${HEAD}stages:\n  - name: a\n    sequental:\n      - { op: list_urls, params: { n: 1 } }\n`, 4, 5, "stages[0].sequental", `did you mean "sequential"`],
  ["unknown op", `${HEAD}stages:\n  - name: a\n    sequential:\n      operations:\n        - op: list_url\n          params: { n: 1 }\n`, 6, 15, "stages[0].sequential.operations[0].op", `unknown operation "list_url" (did you mean "list_urls"?)`],
  ["missing op", `${HEAD}stages:\n  - name: a\n    sequential:\n      - params: { n: 1 }\n`, 5, 9, "stages[0].sequential[0]", `missing "op"`],
  ["unknown op key", `${HEAD}stages:\n  - name: a\n    sequential:\n      - op: list_urls\n        params: { n: 1 }\n        ouput: u\n`, 7, 9, "stages[0].sequential[0].ouput", `unknown key "ouput"`],
  ["state read before written", `${HEAD}stages:\n  - name: a\n    sequential:\n      - { op: text_of, input: pages, output: t }\n`, 5, 31, "stages[0].sequential[0].input", `state "pages" is read before any stage writes it`],
  ["type mismatch url[] into html[]", `${HEAD}stages:\n  - name: a\n    sequential:\n      - { op: list_urls, params: { n: 2 }, output: urls }\n      - { op: text_of, input: urls, output: t }\n`, 6, 31, "stages[0].sequential[1].input", `holds url[], but operation "text_of" takes html[] or html`],
  ["op needs an input", `${HEAD}stages:\n  - name: a\n    sequential:\n      - { op: count, output: c }\n`, 5, 9, "stages[0].sequential[0]", `needs an input of type any[]`],
  ["op takes no input", `${HEAD}inputs:\n  - { name: q, type: string }\nstages:\n  - name: a\n    sequential:\n      - { op: list_urls, input: q, params: { n: 1 } }\n`, 7, 33, "stages[0].sequential[0].input", "takes no input"],
  ["undefined name in {{ }}", `${HEAD}inputs:\n  - { name: query, type: string }\nstages:\n  - name: a\n    sequential:\n      - op: say\n        params: { text: "about {{ querry }}" }\n`, 8, 25, "stages[0].sequential[0].params.text", `"querry" is not defined`],
  ["bad expression syntax", `${HEAD}stages:\n  - name: a\n    sequential:\n      - op: say\n        params: { text: "{{ 1 +* 2 }}" }\n`, 6, 25, "stages[0].sequential[0].params.text", "bad expression"],
  ["unknown function", `${HEAD}stages:\n  - name: a\n    sequential:\n      - op: say\n        params: { text: "{{ lenght(x) }}" }\n`, 6, 25, "stages[0].sequential[0].params.text", `unknown function "lenght"`],
  ["unknown param", `${HEAD}stages:\n  - name: a\n    sequential:\n      - op: list_urls\n        params: { n: 1, count: 3 }\n`, 6, 25, "stages[0].sequential[0].params.count", `unknown param "count"`],
  ["param of wrong type", `${HEAD}stages:\n  - name: a\n    sequential:\n      - op: list_urls\n        params: { n: many }\n`, 6, 22, "stages[0].sequential[0].params.n", "param n"],
  ["missing required param", `${HEAD}stages:\n  - name: a\n    sequential:\n      - op: list_urls\n        params: {}\n`, 6, 17, "stages[0].sequential[0].params.n", "is missing"],
  ["unknown input type", `${HEAD}inputs:\n  - { name: q, type: strng }\nstages:\n  - name: a\n    sequential:\n      - { op: list_urls, params: { n: 1 } }\n`, 3, 22, "inputs[0].type", "unknown input type"],
  ["default of wrong type", `${HEAD}inputs:\n  - { name: n, type: int, default: ten }\nstages:\n  - name: a\n    sequential:\n      - { op: list_urls, params: { n: "{{ n }}" } }\n`, 3, 36, "inputs[0].default", "default does not fit type int"],
  ["duplicate stage name", `${HEAD}stages:\n  - name: a\n    sequential:\n      - { op: list_urls, params: { n: 1 } }\n  - name: a\n    sequential:\n      - { op: list_urls, params: { n: 1 } }\n`, 6, 11, "stages[1].name", `duplicate stage name "a"`],
  ["output not written", `${HEAD}stages:\n  - name: a\n    sequential:\n      - { op: list_urls, params: { n: 1 }, output: urls }\noutputs: [urls, report]\n`, 6, 17, "outputs[1]", `output "report" is not written by any stage`],
  ["foreach over a non-list", `${HEAD}stages:\n  - name: a\n    sequential:\n      - { op: say, params: { text: x }, output: s }\n  - name: b\n    parallel_foreach:\n      input: s\n      operations:\n        - { op: page, params: { url: "{{ item }}" } }\n`, 8, 14, "stages[1].parallel_foreach.input", "needs a list state"],
  ["loop without until", `${HEAD}stages:\n  - name: a\n    loop:\n      max_iterations: 3\n      operations:\n        - { op: list_urls, params: { n: 1 } }\n`, 5, 7, "stages[0].loop", `missing "until"`],
  ["loop cap exceeded", `${HEAD}stages:\n  - name: a\n    loop:\n      until: "true"\n      max_iterations: 1000\n      operations:\n        - { op: list_urls, params: { n: 1 } }\n`, 6, 23, "stages[0].loop.max_iterations", "from 1 to 100"],
  ["conditional without if", `${HEAD}stages:\n  - name: a\n    conditional:\n      operations:\n        - { op: list_urls, params: { n: 1 } }\n`, 5, 7, "stages[0].conditional", `missing "if"`],
  ["condition names an unknown state", `${HEAD}stages:\n  - name: a\n    conditional:\n      if: length(urls) > 0\n      operations:\n        - { op: list_urls, params: { n: 1 } }\n`, 5, 11, "stages[0].conditional.if", `"urls" is not defined`],
  ["two parallel ops write one state", `${HEAD}stages:\n  - name: a\n    parallel:\n      - { op: list_urls, params: { n: 1 }, output: u }\n      - { op: list_urls, params: { n: 2 }, output: u }\n`, 6, 52, "stages[0].parallel[1].output", `both write "u"`],
  ["state type changes", `${HEAD}stages:\n  - name: a\n    sequential:\n      - { op: list_urls, params: { n: 1 }, output: u }\n      - { op: say, input: u, params: { text: x }, output: u }\n`, 6, 59, "stages[0].sequential[1].output", `state "u" holds url[]`],
  ["output overwrites an input", `${HEAD}inputs:\n  - { name: q, type: string }\nstages:\n  - name: a\n    sequential:\n      - { op: say, params: { text: x }, output: q }\n`, 7, 49, "stages[0].sequential[0].output", "would overwrite the graph input"]
]

describe("graph validation", () => {
  it(`rejects ${BROKEN.length} broken graphs, each with its line, column and path`, () => {
    expect(BROKEN.length).toBeGreaterThanOrEqual(20)
    const wrong: Array<string> = []
    for (const [title, yaml, line, column, path, fragment] of BROKEN) {
      const r = check(yaml)
      expect(r.graph, title).toBeUndefined()
      const hit = r.problems.find((p) => p.path === path && p.message.includes(fragment))
      if (hit === undefined || hit.line !== line || hit.column !== column) wrong.push(`${title}: expected ${line}:${column} ${path} "${fragment}", got ${r.problems.map(formatProblem).join(" | ")}`)
    }
    expect(wrong).toEqual([])
  })

  it("reports every problem of a graph at once", () => {
    const r = check(`${HEAD}stages:\n  - name: a\n    sequential:\n      - { op: nope, output: x }\n      - { op: text_of, input: missing }\n  - name: b\noutputs: [zzz]\n`)
    expect(r.problems.map((p) => p.path)).toEqual([
      "stages[0].sequential[0].op",
      "stages[0].sequential[1].input",
      "stages[1]",
      "outputs[0]"
    ])
  })

  it("checks the job's params against the inputs", () => {
    const yaml = `${HEAD}inputs:\n  - { name: query, type: string, required: true }\n  - { name: max_urls, type: int, default: 30 }\nstages:\n  - name: a\n    sequential:\n      - { op: say, params: { text: "{{ query }} {{ max_urls }}" }, output: s }\noutputs: [s]\n`
    expect(check(yaml, { query: "x" }).graph?.name).toBe("g")
    const r = check(yaml, { max_urls: "lots", qurey: "x" })
    expect(r.problems.map((p) => [p.path, p.line])).toEqual([["params.query", 3], ["params.max_urls", 4], ["params.qurey", 3]])
    expect(r.problems[2]!.message).toContain(`did you mean "query"`)
  })

  it("accepts templated params whose value is known only at run time, and type-preserving merge", () => {
    const r = check(`${HEAD}inputs:\n  - { name: n, type: int, default: 3 }\nstages:\n  - name: a\n    parallel:\n      - { op: list_urls, params: { n: "{{ n }}" }, output: a }\n      - { op: list_urls, params: { n: 2, prefix: "http://x/" }, output: b }\n  - name: m\n    sequential:\n      - { op: merge, input: [a, b], output: all }\n      - { op: count, input: all, output: c }\noutputs: [all, c]\n`)
    expect(r.problems).toEqual([])
    expect(r.graph!.types.get("all")).toBe("url[]")
  })
})
