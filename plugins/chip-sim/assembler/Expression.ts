/**
 * Tokens and operand expressions of the 6502 assembly dialect.
 *
 * The dialect is the common subset of conventional 6502 assemblers (ca65, DASM, 64tass):
 * `$hex`, `%binary`, decimal, `'c'` character literals, `"strings"` (data only), symbols,
 * `*` for the current address, parentheses, and the operators below. Precedence follows ca65
 * for the unary operators (they bind tightest, so `>label+1` is `(>label)+1`; write
 * `>(label+1)` for the other reading) and C for the binary ones:
 *
 * | level | operators |
 * |---|---|
 * | 1 (tightest) | unary `-` `+` `~` `<` (low byte) `>` (high byte) |
 * | 2 | `*` `/` |
 * | 3 | `+` `-` |
 * | 4 | `<<` `>>` |
 * | 5 | `&` |
 * | 6 | `^` |
 * | 7 | `\|` |
 *
 * Values are exact integers (JavaScript safe integers); `/` truncates toward zero, the
 * bitwise operators work on 32-bit two's complement. Range checks happen where a value is
 * used (byte, word, address), not here.
 *
 * @module
 */

/** A fault in the text of one line; the assembler attaches the line number. */
export class ExpressionError extends Error {
  readonly _tag = "ExpressionError"
  constructor(message: string) {
    super(message)
    this.name = "ExpressionError"
  }
}

/** One lexical token of a source line. `col` is the 0-based column of its first character. */
export type Token =
  | { readonly kind: "ident"; readonly text: string; readonly col: number }
  /** `.org`, `.byte`: `text` keeps the dot and the source case. */
  | { readonly kind: "directive"; readonly text: string; readonly col: number }
  | { readonly kind: "num"; readonly value: number; readonly text: string; readonly col: number }
  | { readonly kind: "str"; readonly value: string; readonly text: string; readonly col: number }
  | { readonly kind: "punct"; readonly text: string; readonly col: number }

// Character classes by code rather than by regular expression: the tokenizer is the inner loop
// of assembling a large image.
const isLetter = (k: number) => (k >= 65 && k <= 90) || (k >= 97 && k <= 122) || k === 95
const isDigit = (k: number) => k >= 48 && k <= 57
const isIdentStart = (c: string) => isLetter(c.charCodeAt(0))
const isIdentPart = (c: string) => {
  const k = c.charCodeAt(0)
  return isLetter(k) || isDigit(k)
}
const PUNCT1 = "#(),:=+-*/<>&|^~"

// Larger literals would lose precision in later arithmetic and are never meaningful on an
// 8-bit machine with a 16-bit address space.
const MAX_LITERAL = 0xffffffff

const parseLiteral = (text: string): number => {
  let digits: string
  let radix: number
  if (text.startsWith("$")) [digits, radix] = [text.slice(1), 16]
  else if (text.startsWith("%")) [digits, radix] = [text.slice(1), 2]
  else if (/^0[xX]/.test(text)) [digits, radix] = [text.slice(2), 16]
  else [digits, radix] = [text, 10]
  const valid = radix === 16 ? /^[0-9A-Fa-f]+$/ : radix === 2 ? /^[01]+$/ : /^[0-9]+$/
  if (!valid.test(digits)) throw new ExpressionError(`bad number "${text}"`)
  const value = parseInt(digits, radix)
  if (value > MAX_LITERAL) throw new ExpressionError(`number too large "${text}"`)
  return value
}

/**
 * Split one source line into tokens, dropping the `;` comment.
 *
 * @param line one line without its line terminator.
 * @returns tokens in source order.
 * @throws ExpressionError on a malformed number, character literal or string, or a character
 *   that starts no token.
 */
export const tokenize = (line: string): Array<Token> => {
  const tokens: Array<Token> = []
  let i = 0
  const n = line.length
  // Reads the run of identifier characters from j, so that `12ab` or `$12g` is one bad number
  // instead of a number followed by a symbol.
  const runEnd = (j: number) => {
    while (j < n && isIdentPart(line[j]!)) j++
    return j
  }
  while (i < n) {
    const c = line[i]!
    if (c === " " || c === "\t" || c === "\f" || c === "\v") {
      i++
    } else if (c === ";") {
      break
    } else if (isIdentStart(c)) {
      const j = runEnd(i + 1)
      tokens.push({ kind: "ident", text: line.slice(i, j), col: i })
      i = j
    } else if (c === ".") {
      const j = runEnd(i + 1)
      if (j === i + 1) throw new ExpressionError(`stray "." at column ${i + 1}`)
      tokens.push({ kind: "directive", text: line.slice(i, j), col: i })
      i = j
    } else if (isDigit(c.charCodeAt(0)) || c === "$" || (c === "%" && i + 1 < n && isIdentPart(line[i + 1]!))) {
      const j = runEnd(i + 1)
      const text = line.slice(i, j)
      tokens.push({ kind: "num", value: parseLiteral(text), text, col: i })
      i = j
    } else if (c === "'") {
      // Exactly one character between quotes; the common `'c` form without the closing quote
      // is refused because it makes `';'` ambiguous with a comment.
      if (i + 2 >= n || line[i + 2] !== "'") {
        throw new ExpressionError(`bad character literal "${line.slice(i, i + 3)}" (write 'c')`)
      }
      const ch = line[i + 1]!
      const code = ch.charCodeAt(0)
      if (code > 0xff) throw new ExpressionError(`character '${ch}' is not a single byte`)
      tokens.push({ kind: "num", value: code, text: line.slice(i, i + 3), col: i })
      i += 3
    } else if (c === '"') {
      const j = line.indexOf('"', i + 1)
      if (j < 0) throw new ExpressionError(`unterminated string ${line.slice(i)}`)
      const value = line.slice(i + 1, j)
      for (const ch of value) {
        if (ch.charCodeAt(0) > 0xff || ch.length > 1) {
          throw new ExpressionError(`character "${ch}" in string ${line.slice(i, j + 1)} is not a single byte`)
        }
      }
      tokens.push({ kind: "str", value, text: line.slice(i, j + 1), col: i })
      i = j + 1
    } else if ((c === "<" || c === ">") && line[i + 1] === c) {
      tokens.push({ kind: "punct", text: c + c, col: i })
      i += 2
    } else if (PUNCT1.includes(c)) {
      tokens.push({ kind: "punct", text: c, col: i })
      i++
    } else {
      throw new ExpressionError(`unexpected character "${c}" at column ${i + 1}`)
    }
  }
  return tokens
}

/** Parsed expression tree. */
export type Expr =
  | { readonly kind: "num"; readonly value: number }
  | { readonly kind: "sym"; readonly name: string }
  | { readonly kind: "pc" }
  | { readonly kind: "unary"; readonly op: "-" | "+" | "~" | "<" | ">"; readonly arg: Expr }
  | {
    readonly kind: "binary"
    readonly op: "*" | "/" | "+" | "-" | "<<" | ">>" | "&" | "^" | "|"
    readonly left: Expr
    readonly right: Expr
  }

const LEVELS: ReadonlyArray<ReadonlyArray<string>> = [
  ["|"],
  ["^"],
  ["&"],
  ["<<", ">>"],
  ["+", "-"],
  ["*", "/"]
]

const describe = (t: Token | undefined) => (t === undefined ? "end of line" : `"${t.text}"`)

/**
 * Parse `tokens[from, to)` as one expression.
 *
 * @returns the tree; the whole range must be consumed.
 * @throws ExpressionError naming the unexpected token.
 */
export const parseExpression = (tokens: ReadonlyArray<Token>, from = 0, to = tokens.length): Expr => {
  if (from >= to) throw new ExpressionError("missing expression")
  let i = from
  const peek = (): Token | undefined => (i < to ? tokens[i] : undefined)
  const isPunct = (t: Token | undefined, text: string) => t !== undefined && t.kind === "punct" && t.text === text

  const binary = (level: number): Expr => {
    if (level === LEVELS.length) return unary()
    let left = binary(level + 1)
    for (;;) {
      const t = peek()
      if (t === undefined || t.kind !== "punct" || !LEVELS[level]!.includes(t.text)) return left
      i++
      const right = binary(level + 1)
      left = { kind: "binary", op: t.text as "+", left, right }
    }
  }

  const unary = (): Expr => {
    const t = peek()
    if (t !== undefined && t.kind === "punct" && ["-", "+", "~", "<", ">"].includes(t.text)) {
      i++
      return { kind: "unary", op: t.text as "-", arg: unary() }
    }
    return primary()
  }

  const primary = (): Expr => {
    const t = peek()
    if (t === undefined) throw new ExpressionError("expression ends too early")
    i++
    switch (t.kind) {
      case "num":
        return { kind: "num", value: t.value }
      case "ident":
        return { kind: "sym", name: t.text }
      case "punct":
        // `*` where a value is expected is the address of the current line, as in ca65 and
        // DASM; where an operator is expected it multiplies (handled in `binary`).
        if (t.text === "*") return { kind: "pc" }
        if (t.text === "(") {
          const inner = binary(0)
          if (!isPunct(peek(), ")")) throw new ExpressionError(`expected ")" but found ${describe(peek())}`)
          i++
          return inner
        }
        break
      case "str":
        if (t.value.length === 1) return { kind: "num", value: t.value.charCodeAt(0) }
        throw new ExpressionError(`string ${t.text} cannot be used as a number`)
    }
    throw new ExpressionError(`unexpected ${describe(t)} in expression`)
  }

  const e = binary(0)
  if (i < to) throw new ExpressionError(`unexpected ${describe(tokens[i])} after expression`)
  return e
}

/**
 * What an expression may refer to. `resolve` answers `undefined` for a symbol whose value is not
 * known yet (a forward reference during sizing) and throws for one that can never be known.
 */
export interface Scope {
  /** Address of the line being assembled; the value of `*`. */
  readonly pc: number
  readonly resolve: (name: string) => number | undefined
}

const checked = (v: number): number => {
  if (!Number.isSafeInteger(v)) throw new ExpressionError(`value too large`)
  return v
}

/**
 * Evaluate an expression.
 *
 * @returns the exact integer value, or `undefined` when it depends on a symbol not known yet.
 * @throws ExpressionError on division by zero or overflow past a safe integer; whatever
 *   `scope.resolve` throws.
 */
export const evaluate = (e: Expr, scope: Scope): number | undefined => {
  switch (e.kind) {
    case "num":
      return e.value
    case "pc":
      return scope.pc
    case "sym":
      return scope.resolve(e.name)
    case "unary": {
      const v = evaluate(e.arg, scope)
      return v === undefined ? undefined : applyUnary(e.op, v)
    }
    case "binary": {
      // Both sides are evaluated even when one is unknown, so an undefined symbol on either
      // side is reported in the final pass.
      const l = evaluate(e.left, scope)
      const r = evaluate(e.right, scope)
      return l === undefined || r === undefined ? undefined : applyBinary(e.op, l, r)
    }
  }
}

const applyUnary = (op: Extract<Expr, { kind: "unary" }>["op"], v: number): number => {
  switch (op) {
    case "-": return checked(-v)
    case "+": return v
    case "~": return ~v
    case "<": return v & 0xff
    // `>` is bits 8-15, so it is a byte even for values past $FFFF (ca65 does the same).
    case ">": return (v >> 8) & 0xff
  }
}

const applyBinary = (op: Extract<Expr, { kind: "binary" }>["op"], l: number, r: number): number => {
  switch (op) {
    case "+": return checked(l + r)
    case "-": return checked(l - r)
    case "*": return checked(l * r)
    case "/":
      if (r === 0) throw new ExpressionError("division by zero")
      return checked(Math.trunc(l / r))
    case "<<": return l << r
    case ">>": return l >> r
    case "&": return l & r
    case "^": return l ^ r
    case "|": return l | r
  }
}

/** Symbol names an expression mentions, in order of appearance, for messages. */
export const symbolsOf = (e: Expr): Array<string> => {
  switch (e.kind) {
    case "sym": return [e.name]
    case "unary": return symbolsOf(e.arg)
    case "binary": return [...symbolsOf(e.left), ...symbolsOf(e.right)]
    default: return []
  }
}
