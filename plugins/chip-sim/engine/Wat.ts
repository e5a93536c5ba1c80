/**
 * A small assembler for a subset of the WebAssembly text format (folded s-expressions), enough
 * for one module with an imported memory and i32 functions.
 */
type Sx = string | Array<Sx>

const tokenize = (src: string): Array<string> => {
  const out: Array<string> = []
  const re = /\s+|;;[^\n]*|\(;[\s\S]*?;\)|(\(|\)|[^\s()]+)/g
  let m: RegExpExecArray | null
  while ((m = re.exec(src)) !== null) if (m[1] !== undefined) out.push(m[1])
  return out
}

const parse = (tokens: Array<string>): Array<Sx> => {
  let i = 0
  const one = (): Sx => {
    const t = tokens[i++]!
    if (t !== "(") {
      if (t === ")") throw new Error("wat: unexpected )")
      return t
    }
    const list: Array<Sx> = []
    while (tokens[i] !== ")") {
      if (i >= tokens.length) throw new Error("wat: missing )")
      list.push(one())
    }
    i++
    return list
  }
  const all: Array<Sx> = []
  while (i < tokens.length) all.push(one())
  return all
}

const uleb = (n: number): Array<number> => {
  const out: Array<number> = []
  do {
    let b = n & 0x7f
    n >>>= 7
    if (n !== 0) b |= 0x80
    out.push(b)
  } while (n !== 0)
  return out
}
const sleb = (n: number): Array<number> => {
  const out: Array<number> = []
  for (;;) {
    const b = n & 0x7f
    n >>= 7
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) {
      out.push(b)
      return out
    }
    out.push(b | 0x80)
  }
}
const str = (s: string): Array<number> => [...uleb(s.length), ...Buffer.from(s, "utf8")]
const section = (id: number, body: Array<number>): Array<number> => [id, ...uleb(body.length), ...body]
const vec = (items: Array<Array<number>>): Array<number> => [...uleb(items.length), ...items.flat()]

const PLAIN: Record<string, number> = {
  "unreachable": 0x00, "nop": 0x01, "return": 0x0f, "drop": 0x1a, "select": 0x1b,
  "i32.eqz": 0x45, "i32.eq": 0x46, "i32.ne": 0x47, "i32.lt_s": 0x48, "i32.lt_u": 0x49,
  "i32.gt_s": 0x4a, "i32.gt_u": 0x4b, "i32.le_s": 0x4c, "i32.le_u": 0x4d, "i32.ge_s": 0x4e,
  "i32.ge_u": 0x4f, "i32.clz": 0x67, "i32.ctz": 0x68, "i32.popcnt": 0x69, "i32.add": 0x6a,
  "i32.sub": 0x6b, "i32.mul": 0x6c, "i32.and": 0x71, "i32.or": 0x72, "i32.xor": 0x73,
  "i32.shl": 0x74, "i32.shr_s": 0x75, "i32.shr_u": 0x76
}
const MEM: Record<string, [number, number]> = {
  "i32.load": [0x28, 2], "i32.load8_u": [0x2d, 0], "i32.load16_u": [0x2f, 1],
  "i32.store": [0x36, 2], "i32.store8": [0x3a, 0], "i32.store16": [0x3b, 1]
}

interface Func {
  name: string
  params: Array<string>
  results: number
  locals: Array<string>
  body: Array<Sx>
}

const asList = (x: Sx, what: string): Array<Sx> => {
  if (typeof x === "string") throw new Error(`wat: expected a list in ${what}, got ${x}`)
  return x
}

const compileFunc = (f: Func): Array<number> => {
  const index = new Map<string, number>()
  ;[...f.params, ...f.locals].forEach((n, i) => index.set(n, i))
  const labels: Array<string | null> = []
  const code: Array<number> = []
  const local = (name: Sx): number => {
    const i = index.get(name as string)
    if (i === undefined) throw new Error(`wat ${f.name}: unknown local ${String(name)}`)
    return i
  }
  const depth = (name: Sx): number => {
    const i = labels.lastIndexOf(name as string)
    if (i < 0) throw new Error(`wat ${f.name}: unknown label ${String(name)}`)
    return labels.length - 1 - i
  }
  const emit = (x: Sx): void => {
    const e = asList(x, f.name)
    const op = e[0] as string
    let args = e.slice(1)
    if (op === "block" || op === "loop") {
      const label = typeof args[0] === "string" && args[0].startsWith("$") ? (args.shift() as string) : null
      code.push(op === "block" ? 0x02 : 0x03, 0x40)
      labels.push(label)
      args.forEach(emit)
      labels.pop()
      code.push(0x0b)
      return
    }
    if (op === "if") {
      const label = typeof args[0] === "string" && args[0].startsWith("$") ? (args.shift() as string) : null
      const thenI = args.findIndex((a) => Array.isArray(a) && a[0] === "then")
      if (thenI < 0) throw new Error(`wat ${f.name}: if without then`)
      args.slice(0, thenI).forEach(emit)
      code.push(0x04, 0x40)
      labels.push(label)
      asList(args[thenI]!, f.name).slice(1).forEach(emit)
      const els = args[thenI + 1]
      if (els !== undefined) {
        code.push(0x05)
        asList(els, f.name).slice(1).forEach(emit)
      }
      labels.pop()
      code.push(0x0b)
      return
    }
    if (op === "local.get" || op === "local.set" || op === "local.tee") {
      const name = args[0]!
      args.slice(1).forEach(emit)
      code.push(op === "local.get" ? 0x20 : op === "local.set" ? 0x21 : 0x22, ...uleb(local(name)))
      return
    }
    if (op === "i32.const") {
      code.push(0x41, ...sleb(Number(args[0]) | 0))
      return
    }
    if (op === "br" || op === "br_if") {
      const d = depth(args[0]!)
      args.slice(1).forEach(emit)
      code.push(op === "br" ? 0x0c : 0x0d, ...uleb(d))
      return
    }
    const mem = MEM[op]
    if (mem !== undefined) {
      let offset = 0
      if (typeof args[0] === "string" && args[0].startsWith("offset=")) {
        offset = Number(args[0].slice(7))
        args = args.slice(1)
      }
      args.forEach(emit)
      code.push(mem[0], mem[1], ...uleb(offset))
      return
    }
    const plain = PLAIN[op]
    if (plain === undefined) throw new Error(`wat ${f.name}: unknown instruction ${op}`)
    args.forEach(emit)
    code.push(plain)
  }
  f.body.forEach(emit)
  code.push(0x0b)
  const localDecl = f.locals.length ? [[...uleb(f.locals.length), 0x7f]] : []
  const body = [...vec(localDecl), ...code]
  return [...uleb(body.length), ...body]
}

/**
 * Assembles `(module (import "env" "memory" (memory N)) (func $name (export "name") (param $p i32)*
 * (result i32)? (local $l i32)* body...)*)`: i32 only, folded instructions, named locals and labels.
 */
export const assemble = (src: string): Uint8Array => {
  const top = parse(tokenize(src))
  const mod = asList(top[0]!, "module")
  if (mod[0] !== "module") throw new Error("wat: expected (module ...)")
  let memPages = 1
  const funcs: Array<Func & { exported: string | null }> = []
  for (const item of mod.slice(1)) {
    const it = asList(item, "module")
    if (it[0] === "import") {
      const m = asList(it[3]!, "import")
      memPages = Number(m[1])
      continue
    }
    if (it[0] !== "func") throw new Error(`wat: unsupported module field ${String(it[0])}`)
    const f: Func & { exported: string | null } = { name: it[1] as string, params: [], results: 0, locals: [], body: [], exported: null }
    for (const part of it.slice(2)) {
      const p = Array.isArray(part) ? part : null
      if (p && p[0] === "export") f.exported = JSON.parse(p[1] as string)
      else if (p && p[0] === "param") f.params.push(p[1] as string)
      else if (p && p[0] === "result") f.results = 1
      else if (p && p[0] === "local") f.locals.push(p[1] as string)
      else f.body.push(part)
    }
    funcs.push(f)
  }
  const types = funcs.map((f) => [0x60, ...vec(f.params.map(() => [0x7f])), ...vec(f.results ? [[0x7f]] : [])])
  const bytes = [
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, vec(types)),
    ...section(2, vec([[...str("env"), ...str("memory"), 0x02, 0x00, ...uleb(memPages)]])),
    ...section(3, vec(funcs.map((_, i) => uleb(i)))),
    ...section(7, vec(funcs.flatMap((f, i) => (f.exported === null ? [] : [[...str(f.exported), 0x00, ...uleb(i)]])))),
    ...section(10, vec(funcs.map(compileFunc)))
  ]
  return Uint8Array.from(bytes)
}
