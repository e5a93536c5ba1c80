/**
 * A two-pass NMOS 6502 assembler for the `Rom` resource of the chip-simulation specification
 * (`{source, org}` in, AssembleResponse out).
 *
 * Source syntax, one statement per line, `;` starts a comment:
 *
 * ```
 * label:  mnemonic operand      ; labels need the colon
 * name = expr                   ; constant (also `name .equ expr`, `name equ expr`)
 *         .org expr             ; also `* = expr`
 *         .byte 1, $ff, "text", <label   ; also .byt, .db
 *         .word label, $1234            ; little-endian; also .dw, .addr
 * ```
 *
 * Operands: `#expr`, `A` (or nothing) for the accumulator, `expr`, `expr,X`, `expr,Y`,
 * `(expr)`, `(expr,X)`, `(expr),Y`; expressions as in `Expression.ts`. Mnemonics, directives
 * and register names are case-insensitive; symbols are case-sensitive (as in ca65), and may not
 * be `A`, `X`, `Y` or a mnemonic. `*` is the address of the line (of the item, inside a
 * `.byte`/`.word` list, as in ca65). A label on a line that also holds `.org` takes the address
 * before the `.org`.
 *
 * Ranges: a byte (immediate, `.byte`) accepts -128 to 255 and a word (`.word`) -32768 to 65535,
 * negatives as two's complement (`#-1` is $FF; ca65 refuses these, most other assemblers
 * accept them); an address operand accepts 0 to 65535 and a zero-page one 0 to 255.
 *
 * Zero page versus absolute: a `zp` / `zp,X` / `zp,Y` form is used when the operand's value is
 * already known, on the line where it is written, to lie in 0 to 255 (`LDA $0012` too: the
 * value decides, not the digits written); an operand that depends
 * on a symbol defined further down takes the absolute form. The choice is made once, in the
 * sizing pass, and the encoding pass obeys it, so every line's size, and hence every label,
 * is the same in both passes (ca65 decides the same way). Where a mnemonic has only the
 * zero-page form of an indexed mode (`STX zp,Y`, `STY zp,X`) that form is used and the value
 * must fit in a byte.
 *
 * @module
 */

import { AssembleError } from "./AssembleError.ts"
import { evaluate, ExpressionError, parseExpression, symbolsOf, tokenize, type Expr, type Token } from "./Expression.ts"
import { MNEMONICS, MODE_SYNTAX, modesOf, OPERAND_BYTES, type Mode } from "./Opcodes.ts"

/** One line of the listing (AssembleResponse `listing`). */
export interface ListingLine {
  /** 1-based line number. */
  readonly n: number
  /** The line as written, without its terminator. */
  readonly text: string
  /** The symbol this line defines (label or constant), else null. */
  readonly label: string | null
  /** Address of the first byte this line emits; null when it emits none. */
  readonly addr: number | null
  /** Lower-case hex of the bytes this line emits; null when it emits none. */
  readonly bytes: string | null
}

/** What `assemble` returns: the AssembleResponse of the specification plus the raw image. */
export interface AssembleResult {
  /** Address of the image's first byte (0 to 65535). */
  readonly org: number
  /**
   * Address of the image's last byte, inclusive; always `org + size - 1`, so an empty image
   * has `end === org - 1` (which is -1 for an empty image at 0).
   */
  readonly end: number
  /** Bytes in the image, gaps left by `.org` included. */
  readonly size: number
  /** Lower-case hex of the whole image, two characters per byte. */
  readonly bytes: string
  /** The image itself; `image[i]` belongs at address `org + i`. */
  readonly image: Uint8Array
  /** Every label and constant, in definition order, to its value. */
  readonly labels: Record<string, number>
  /** One entry per source line (a final empty line after the last terminator is not a line). */
  readonly listing: Array<ListingLine>
}

/** The JSON body of POST /v1/assemble: AssembleResult without the binary image. */
export type AssembleResponse = Omit<AssembleResult, "image">

/** Strip the binary image, leaving exactly the specification's AssembleResponse fields. */
export const toAssembleResponse = (r: AssembleResult): AssembleResponse => ({
  org: r.org,
  end: r.end,
  size: r.size,
  bytes: r.bytes,
  labels: r.labels,
  listing: r.listing
})

/** Default load address of a Rom (specification: `org` optional, default 512). */
export const DEFAULT_ORG = 0x0200

// ---------------------------------------------------------------------------------------------
// Statements

/** Operand shape as written, before a mode is chosen. */
type Syntax = "imp" | "acc" | "imm" | "direct" | "x" | "y" | "ind" | "izx" | "izy"

type DataItem = { readonly kind: "expr"; readonly expr: Expr } | { readonly kind: "str"; readonly value: string }

type Op =
  | { readonly kind: "none" }
  | { readonly kind: "org"; readonly expr: Expr }
  | { readonly kind: "const"; readonly expr: Expr }
  | { readonly kind: "data"; readonly width: 1 | 2; readonly items: ReadonlyArray<DataItem> }
  | { readonly kind: "instr"; readonly mnemonic: string; readonly syntax: Syntax; readonly expr: Expr | null }

interface Statement {
  readonly n: number
  readonly text: string
  readonly label: string | null
  readonly op: Op
}

const isPunct = (t: Token | undefined, text: string): boolean => t?.kind === "punct" && t.text === text
const isReg = (t: Token | undefined, reg: "A" | "X" | "Y"): boolean =>
  t?.kind === "ident" && t.text.toUpperCase() === reg

const MNEMONIC_SET = new Set(MNEMONICS)

const DIRECTIVES: Readonly<Record<string, "org" | "byte" | "word" | "equ">> = {
  ".org": "org",
  ".byte": "byte",
  ".byt": "byte",
  ".db": "byte",
  ".word": "word",
  ".addr": "word",
  ".dw": "word",
  ".equ": "equ"
}

/** Index of the `)` matching the `(` at `open`, or -1. */
const matchingParen = (tokens: ReadonlyArray<Token>, open: number, to: number): number => {
  let depth = 0
  for (let i = open; i < to; i++) {
    if (isPunct(tokens[i], "(")) depth++
    else if (isPunct(tokens[i], ")") && --depth === 0) return i
  }
  return -1
}

/** Split `tokens[from, to)` at commas outside parentheses. */
const splitTopLevel = (tokens: ReadonlyArray<Token>, from: number, to: number): Array<[number, number]> => {
  const parts: Array<[number, number]> = []
  let depth = 0
  let start = from
  for (let i = from; i < to; i++) {
    if (isPunct(tokens[i], "(")) depth++
    else if (isPunct(tokens[i], ")")) depth--
    else if (depth === 0 && isPunct(tokens[i], ",")) {
      parts.push([start, i])
      start = i + 1
    }
  }
  parts.push([start, to])
  return parts
}

const checkName = (name: string): void => {
  const upper = name.toUpperCase()
  // A, X and Y would make `LDA X` or `ASL A` ambiguous; a mnemonic as a name makes a line
  // like `lda: nop` read like a typo. ca65 reserves the same.
  if (upper === "A" || upper === "X" || upper === "Y") {
    throw new ExpressionError(`"${name}" is a register name and cannot name a symbol`)
  }
  if (MNEMONIC_SET.has(upper)) throw new ExpressionError(`"${name}" is a mnemonic and cannot name a symbol`)
}

const parseOperand = (tokens: ReadonlyArray<Token>, from: number, to: number): { syntax: Syntax; expr: Expr | null } => {
  if (from === to) return { syntax: "imp", expr: null }
  if (to - from === 1 && isReg(tokens[from], "A")) return { syntax: "acc", expr: null }
  if (isPunct(tokens[from], "#")) return { syntax: "imm", expr: parseExpression(tokens, from + 1, to) }
  if (isPunct(tokens[from], "(")) {
    const close = matchingParen(tokens, from, to)
    if (close === to - 1) {
      // `(expr,X)` or `(expr)`: the parentheses enclose the whole operand.
      const parts = splitTopLevel(tokens, from + 1, close)
      if (parts.length === 2 && parts[1]![1] - parts[1]![0] === 1 && isReg(tokens[parts[1]![0]], "X")) {
        return { syntax: "izx", expr: parseExpression(tokens, from + 1, parts[0]![1]) }
      }
      if (parts.length === 2 && parts[1]![1] - parts[1]![0] === 1 && isReg(tokens[parts[1]![0]], "Y")) {
        throw new ExpressionError(`the 6502 has no (zp,Y) mode; indirect indexed is written (zp),Y`)
      }
      if (parts.length > 1) throw new ExpressionError(`unexpected "," inside parentheses`)
      return { syntax: "ind", expr: parseExpression(tokens, from + 1, close) }
    }
    if (close === to - 3 && isPunct(tokens[to - 2], ",") && isReg(tokens[to - 1], "Y")) {
      return { syntax: "izy", expr: parseExpression(tokens, from + 1, close) }
    }
    if (close === to - 3 && isPunct(tokens[to - 2], ",") && isReg(tokens[to - 1], "X")) {
      throw new ExpressionError(`the 6502 has no (zp),X mode; indexed indirect is written (zp,X)`)
    }
    // Otherwise the parenthesis only groups part of an expression, as in `(base+1)*2,X`.
  }
  const parts = splitTopLevel(tokens, from, to)
  if (parts.length === 1) return { syntax: "direct", expr: parseExpression(tokens, from, to) }
  const [last, lastEnd] = parts[parts.length - 1]!
  if (parts.length === 2 && lastEnd - last === 1 && isReg(tokens[last], "X")) {
    return { syntax: "x", expr: parseExpression(tokens, from, parts[0]![1]) }
  }
  if (parts.length === 2 && lastEnd - last === 1 && isReg(tokens[last], "Y")) {
    return { syntax: "y", expr: parseExpression(tokens, from, parts[0]![1]) }
  }
  const comma = tokens[parts[0]![1]]!
  throw new ExpressionError(`unexpected "," at column ${comma.col + 1}; an index is written ,X or ,Y`)
}

const parseData = (tokens: ReadonlyArray<Token>, from: number, to: number, width: 1 | 2, name: string): Op => {
  if (from === to) throw new ExpressionError(`${name} needs at least one value`)
  const items = splitTopLevel(tokens, from, to).map(([a, b]): DataItem => {
    const t = tokens[a]
    // A string standing alone is its characters, one byte each; inside an expression a
    // one-character string is its code, as in ca65.
    if (b - a === 1 && t?.kind === "str") {
      if (width === 2) throw new ExpressionError(`strings are allowed in .byte, not ${name}: ${t.text}`)
      return { kind: "str", value: t.value }
    }
    if (a === b) throw new ExpressionError(`empty value in ${name} list`)
    return { kind: "expr", expr: parseExpression(tokens, a, b) }
  })
  return { kind: "data", width, items }
}

/** Parse one line. Throws ExpressionError; the caller adds the line number. */
const parseLine = (n: number, text: string): Statement => {
  const tokens = tokenize(text)
  const end = tokens.length
  const t0 = tokens[0]
  const t1 = tokens[1]
  // Constants: `name = expr`, `name .equ expr`, `name equ expr`.
  if (t0?.kind === "ident" && t1 !== undefined &&
    (isPunct(t1, "=") ||
      (t1.kind === "directive" && DIRECTIVES[t1.text.toLowerCase()] === "equ") ||
      (t1.kind === "ident" && t1.text.toUpperCase() === "EQU"))) {
    checkName(t0.text)
    return { n, text, label: t0.text, op: { kind: "const", expr: parseExpression(tokens, 2, end) } }
  }
  let k = 0
  let label: string | null = null
  if (t0?.kind === "ident" && isPunct(t1, ":")) {
    checkName(t0.text)
    label = t0.text
    k = 2
  }
  const head = tokens[k]
  if (head === undefined) return { n, text, label, op: { kind: "none" } }
  if (isPunct(head, "*") && isPunct(tokens[k + 1], "=")) {
    return { n, text, label, op: { kind: "org", expr: parseExpression(tokens, k + 2, end) } }
  }
  if (head.kind === "directive") {
    const d = DIRECTIVES[head.text.toLowerCase()]
    switch (d) {
      case "org":
        return { n, text, label, op: { kind: "org", expr: parseExpression(tokens, k + 1, end) } }
      case "byte":
        return { n, text, label, op: parseData(tokens, k + 1, end, 1, head.text) }
      case "word":
        return { n, text, label, op: parseData(tokens, k + 1, end, 2, head.text) }
      case "equ":
        throw new ExpressionError(`${head.text} needs a name before it: name ${head.text} value`)
      default:
        throw new ExpressionError(`unknown directive "${head.text}"`)
    }
  }
  if (head.kind === "ident") {
    const mnemonic = head.text.toUpperCase()
    if (!MNEMONIC_SET.has(mnemonic)) {
      const next = tokens[k + 1]
      const hint = next?.kind === "ident" && MNEMONIC_SET.has(next.text.toUpperCase())
        ? ` (a label needs a colon: "${head.text}:")`
        : ""
      throw new ExpressionError(`unknown mnemonic "${head.text}"${hint}`)
    }
    const { syntax, expr } = parseOperand(tokens, k + 1, end)
    return { n, text, label, op: { kind: "instr", mnemonic, syntax, expr } }
  }
  throw new ExpressionError(`expected a mnemonic, a directive or a label but found "${head.text}"`)
}

// ---------------------------------------------------------------------------------------------
// Modes

const describeModes = (modes: Partial<Record<Mode, number>>): string =>
  (Object.keys(modes) as Array<Mode>).map((m) => (m === "imp" ? "no operand" : MODE_SYNTAX[m])).join(", ")

const SYNTAX_NAME: Readonly<Record<Syntax, string>> = {
  imp: "an operand",
  acc: "the accumulator mode (A)",
  imm: "the immediate mode (#v)",
  direct: "a plain address operand",
  x: "an ,X index",
  y: "a ,Y index",
  ind: "the indirect mode ((abs))",
  izx: "the (zp,X) mode",
  izy: "the (zp),Y mode"
}

/**
 * Choose the addressing mode in the sizing pass.
 *
 * @param known the operand value if it is known on this line, else undefined.
 */
const chooseMode = (mnemonic: string, syntax: Syntax, known: number | undefined): Mode => {
  const modes = modesOf(mnemonic)!
  const bad = (): never => {
    const what = syntax === "imp" ? `${mnemonic} needs an operand` : `${mnemonic} does not take ${SYNTAX_NAME[syntax]}`
    throw new ExpressionError(`${what}; it takes ${describeModes(modes)}`)
  }
  const pick = (zp: Mode, abs: Mode): Mode => {
    const hasZp = modes[zp] !== undefined
    const hasAbs = modes[abs] !== undefined
    if (!hasZp && !hasAbs) return bad()
    if (hasZp && known !== undefined && known >= 0 && known <= 0xff) return zp
    return hasAbs ? abs : zp
  }
  switch (syntax) {
    case "imp":
      // `ASL` alone means `ASL A`, as in ca65 and most assemblers.
      if (modes.imp !== undefined) return "imp"
      if (modes.acc !== undefined) return "acc"
      return bad()
    case "acc":
    case "imm":
    case "ind":
    case "izx":
    case "izy":
      return modes[syntax] !== undefined ? syntax : bad()
    case "direct":
      if (modes.rel !== undefined) return "rel"
      return pick("zp", "abs")
    case "x":
      return pick("zpx", "abx")
    case "y":
      return pick("zpy", "aby")
  }
}

// ---------------------------------------------------------------------------------------------
// Symbols

type Sym =
  | { readonly kind: "label"; readonly value: number; readonly line: number }
  | { readonly kind: "const"; readonly expr: Expr; readonly pc: number; readonly line: number; value?: number }

const hex = (v: number, digits: number) => "$" + v.toString(16).toUpperCase().padStart(digits, "0")

class SymbolTable {
  readonly table = new Map<string, Sym>()
  private readonly evaluating = new Set<string>()

  define(name: string, sym: Sym): void {
    const prior = this.table.get(name)
    if (prior !== undefined) throw new ExpressionError(`duplicate symbol "${name}" (first defined on line ${prior.line})`)
    this.table.set(name, sym)
  }

  /**
   * The value of a symbol. In the sizing pass (`final` false) a symbol not defined yet is
   * unknown (undefined); in the encoding pass every symbol must be defined.
   */
  resolve(name: string, final: boolean): number | undefined {
    const sym = this.table.get(name)
    if (sym === undefined) {
      if (!final) return undefined
      const near = [...this.table.keys()].find((k) => k.toLowerCase() === name.toLowerCase())
      throw new ExpressionError(`undefined symbol "${name}"${near === undefined ? "" : ` (symbols are case-sensitive; did you mean "${near}"?)`}`)
    }
    if (sym.kind === "label") return sym.value
    if (sym.value !== undefined) return sym.value
    if (this.evaluating.has(name)) throw new ExpressionError(`circular definition of "${name}"`)
    this.evaluating.add(name)
    try {
      // `*` in a constant means the address where the constant was written.
      const v = evaluate(sym.expr, { pc: sym.pc, resolve: (s) => this.resolve(s, final) })
      // Once known a constant never changes (labels are fixed by the sizing pass), so cache.
      if (v !== undefined) sym.value = v
      return v
    } finally {
      this.evaluating.delete(name)
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Assembly

const toHex = (bytes: ArrayLike<number>): string => {
  let s = ""
  for (let i = 0; i < bytes.length; i++) s += bytes[i]!.toString(16).padStart(2, "0")
  return s
}

const splitLines = (source: string): Array<string> => {
  const lines = source.split(/\r\n|\r|\n/)
  // "a\n" is one line, and "" is none: a terminator ends a line rather than starting one.
  if (lines[lines.length - 1] === "") lines.pop()
  return lines
}

const stringBytes = (value: string): Array<number> => [...value].map((c) => c.charCodeAt(0))

const dataSize = (op: Extract<Op, { kind: "data" }>): number =>
  op.items.reduce((sum, item) => sum + (item.kind === "str" ? item.value.length : op.width), 0)

/**
 * Assemble NMOS 6502 source into a memory image.
 *
 * Facts: opcodes from `Opcodes.ts` (MOS programming manual); behaviour of `.org` and the
 * AssembleResponse shape from the chip-simulation specification (Rom, POST /v1/assemble).
 *
 * @param source assembly text, lines ended by LF, CRLF or CR; syntax in this module's header.
 * @param org load address (0 to 65535) used until a `.org`; default $0200. A `.org` that comes
 *   before the first emitted byte moves the image start, so the source's `.org` wins.
 * @returns the image from its first emitted byte to its last, `.org` gaps filled with $00;
 *   an image with no bytes has `size` 0, `org` at the address assembly stopped at (the `org`
 *   argument for empty source) and `end` = `org - 1`.
 * @throws AssembleError with the 1-based line of the first fault (sizing-pass faults such as
 *   syntax, unknown mnemonic, bad mode, duplicate symbol or backward `.org` come before
 *   encoding-pass faults such as undefined symbols, values out of range and unreachable
 *   branches), or line 0 when `org` is not an integer in 0 to 65535.
 */
export const assemble = (source: string, org: number = DEFAULT_ORG): AssembleResult => {
  if (!Number.isInteger(org) || org < 0 || org > 0xffff) {
    throw new AssembleError(0, `org ${org} is not an address (0 to 65535)`)
  }
  const lines = splitLines(source)
  const symbols = new SymbolTable()
  const statements: Array<Statement> = []
  const modes: Array<Mode | null> = []

  const atLine = <A>(n: number, text: string, f: () => A): A => {
    try {
      return f()
    } catch (e) {
      if (e instanceof ExpressionError) throw new AssembleError(n, e.message, text)
      throw e
    }
  }

  // Sizing pass: parse, define symbols, fix each instruction's mode and so its size.
  let pc = org
  let emitted = false
  lines.forEach((text, i) => {
    const n = i + 1
    atLine(n, text, () => {
      const st = parseLine(n, text)
      statements.push(st)
      const known = (e: Expr) => evaluate(e, { pc, resolve: (s) => symbols.resolve(s, false) })
      if (st.op.kind === "const") {
        symbols.define(st.label!, { kind: "const", expr: st.op.expr, pc, line: n })
        modes.push(null)
        return
      }
      if (st.label !== null) symbols.define(st.label, { kind: "label", value: pc, line: n })
      let size = 0
      let mode: Mode | null = null
      switch (st.op.kind) {
        case "none":
          break
        case "org": {
          const v = known(st.op.expr)
          if (v === undefined) {
            const names = symbolsOf(st.op.expr).filter((s) => symbols.resolve(s, false) === undefined)
            throw new ExpressionError(`.org needs a value known on this line; "${names[0] ?? "?"}" is not defined above it`)
          }
          if (v < 0 || v > 0xffff) throw new ExpressionError(`.org ${v} is not an address (0 to 65535)`)
          // Before the first byte a .org only chooses where the image starts; after it, going
          // back would overwrite bytes already placed.
          if (emitted && v < pc) {
            throw new ExpressionError(`.org ${hex(v, 4)} goes backward (already at ${hex(pc, 4)})`)
          }
          pc = v
          break
        }
        case "data":
          size = dataSize(st.op)
          break
        case "instr": {
          const value = st.op.expr === null ? undefined : known(st.op.expr)
          mode = chooseMode(st.op.mnemonic, st.op.syntax, value)
          size = 1 + OPERAND_BYTES[mode]
          break
        }
      }
      modes.push(mode)
      if (size > 0) {
        if (pc + size > 0x10000) throw new ExpressionError(`program runs past $FFFF (this line starts at ${hex(pc, 4)})`)
        emitted = true
        pc += size
      }
    })
  })

  // Encoding pass: every symbol is now defined; emit bytes in the modes fixed above.
  const image: Array<number> = []
  const listing: Array<ListingLine> = []
  let start: number | null = null
  pc = org
  const finalValue = (e: Expr, at = pc) => evaluate(e, { pc: at, resolve: (s) => symbols.resolve(s, true) })!

  statements.forEach((st, i) => {
    const { n, text } = st
    atLine(n, text, () => {
      const op = st.op
      if (st.label !== null && op.kind !== "const") {
        const sym = symbols.table.get(st.label)
        // The sizing pass fixed every size, so addresses cannot move; a mismatch is a bug here.
        if (sym?.kind !== "label" || sym.value !== pc) throw new Error(`assembler defect: label ${st.label} moved`)
      }
      let out: Array<number> = []
      const byte = (v: number, what: string): number => {
        // Negative bytes are accepted as two's complement (`#-1` is $FF), as in most assemblers.
        if (v < -0x80 || v > 0xff) throw new ExpressionError(`${what} ${v} (${hex(v & 0xffff, 4)}) does not fit in a byte`)
        return v & 0xff
      }
      const word = (v: number, what: string): Array<number> => {
        if (v < -0x8000 || v > 0xffff) throw new ExpressionError(`${what} ${v} does not fit in a word`)
        return [v & 0xff, (v >> 8) & 0xff]
      }
      switch (op.kind) {
        case "none":
          break
        case "const": {
          // Reported here so an undefined name in an unused constant still names its line.
          symbols.resolve(st.label!, true)
          break
        }
        case "org": {
          const v = finalValue(op.expr)
          if (start !== null) while (pc < v) image.push(0), pc++
          pc = v
          break
        }
        case "data":
          for (const item of op.items) {
            // In a data list `*` is the address of the item itself, as in ca65, so
            // `.word *, *` gives two different addresses.
            const at = pc + out.length
            if (item.kind === "str") out.push(...stringBytes(item.value))
            else if (op.width === 1) out.push(byte(finalValue(item.expr, at), "value"))
            else out.push(...word(finalValue(item.expr, at), "value"))
          }
          break
        case "instr": {
          const mode = modes[i]!
          const opcode = modesOf(op.mnemonic)![mode]!
          out = [opcode]
          if (op.expr === null) break
          const v = finalValue(op.expr)
          switch (OPERAND_BYTES[mode]) {
            case 2:
              if (v < 0 || v > 0xffff) throw new ExpressionError(`address ${v} is outside 0 to 65535`)
              out.push(v & 0xff, v >> 8)
              break
            case 1:
              if (mode === "imm") {
                out.push(byte(v, "immediate value"))
              } else if (mode === "rel") {
                if (v < 0 || v > 0xffff) throw new ExpressionError(`branch target ${v} is outside 0 to 65535`)
                const offset = v - (pc + 2)
                if (offset < -128 || offset > 127) {
                  throw new ExpressionError(
                    `branch out of range: target ${hex(v, 4)} is ${offset} bytes from ${hex(pc + 2, 4)} (reach is -128 to +127)`
                  )
                }
                out.push(offset & 0xff)
              } else {
                if (v < 0 || v > 0xff) {
                  throw new ExpressionError(
                    `${hex(v & 0xffff, 4)} is not a zero-page address, and ${op.mnemonic} has only the ${MODE_SYNTAX[mode]} form here`
                  )
                }
                out.push(v)
              }
              break
          }
          break
        }
      }
      if (out.length > 0 && start === null) start = pc
      listing.push({
        n,
        text,
        label: st.label,
        addr: out.length > 0 ? pc : null,
        bytes: out.length > 0 ? toHex(out) : null
      })
      image.push(...out)
      pc += out.length
    })
  })

  const labels: Record<string, number> = {}
  for (const name of symbols.table.keys()) {
    Object.defineProperty(labels, name, {
      value: symbols.resolve(name, true)!,
      enumerable: true,
      writable: true,
      configurable: true
    })
  }
  const first = start ?? pc
  const bytes = Uint8Array.from(image)
  return {
    org: first,
    end: first + bytes.length - 1,
    size: bytes.length,
    bytes: toHex(bytes),
    image: bytes,
    labels,
    listing
  }
}
