/**
 * The one error the assembler throws for faults in the source.
 *
 * The HTTP route answers it as 422 `{error: message, line}` (specification, POST /v1/assemble),
 * the MCP `assemble` tool as a result with `isError`; both need only `message` and `line`.
 *
 * @module
 */

/**
 * A fault in the assembly source: unknown mnemonic or directive, a mode the mnemonic lacks,
 * an undefined or duplicate symbol, a value out of range, a bad number, a branch out of reach,
 * a backward `.org`, a program running past $FFFF.
 *
 * - `line`: 1-based source line of the fault; 0 only when the fault is in the arguments of
 *   `assemble` rather than in any line (an `org` outside 0 to 65535).
 * - `reason`: the problem alone, naming the offending token (`unknown mnemonic "LDB"`).
 * - `text`: the offending source line as written ("" for line 0).
 * - `message`: `line N: <reason> in "<trimmed text>"`, ready to show a person.
 *
 * It carries `_tag` so Effect code can select it with `Effect.catchTag("AssembleError", ...)`.
 * A plain `Error` rather than a `Schema.TaggedError`: the assembler runs in the simulator
 * threads and `platform chip assemble`, which load no `effect/Schema` (see `StepRequestError`).
 */
export class AssembleError extends Error {
  readonly _tag = "AssembleError"
  readonly line: number
  readonly reason: string
  readonly text: string

  constructor(line: number, reason: string, text = "") {
    const where = text.trim() === "" ? "" : ` in "${text.trim()}"`
    super(line > 0 ? `line ${line}: ${reason}${where}` : reason)
    this.name = "AssembleError"
    this.line = line
    this.reason = reason
    this.text = text
  }
}
