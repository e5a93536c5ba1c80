/** The WebAssembly text to binary step behind the settle kernel (WABT). */
import { describe, expect, it } from "vitest"
import { assemble } from "../../../../plugins/chip-sim/engine/SettleKernel.ts"

interface Wasm {
  Memory: new (d: { initial: number }) => { buffer: ArrayBuffer }
  Module: new (b: Uint8Array) => object
  Instance: new (m: object, i: object) => { exports: Record<string, (...a: Array<number>) => number> }
}
const W = (globalThis as unknown as { WebAssembly: Wasm }).WebAssembly

const instantiate = (src: string) => {
  const memory = new W.Memory({ initial: 1 })
  const { exports } = new W.Instance(new W.Module(assemble(src)), { env: { memory } })
  return { exports, memory }
}

describe("settle kernel assembly (WABT)", () => {
  it("assembles loops, branches, selects, locals and memory access that run as written", () => {
    const { exports, memory } = instantiate(`
      (module
        (import "env" "memory" (memory 1))
        ;; sum of 1..n, each term also stored as a word at 64 + 4 * i
        (func $sum (export "sum") (param $n i32) (result i32) (local $i i32) (local $acc i32)
          (block $done
            (loop $next
              (br_if $done (i32.ge_s (local.get $i) (local.get $n)))
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (i32.store offset=64 (i32.shl (local.get $i) (i32.const 2)) (local.get $i))
              (local.set $acc (i32.add (local.get $acc) (local.get $i)))
              (br $next)))
          (local.get $acc))
        (func $pick (export "pick") (param $a i32) (param $b i32) (param $c i32) (result i32)
          (if (i32.eqz (local.get $c)) (then (return (i32.const -70000))) (else (nop)))
          (select (local.get $a) (local.get $b) (i32.gt_u (local.get $c) (i32.const 1)))))`)
    expect(exports.sum!(10)).toBe(55)
    expect(Array.from(new Int32Array(memory.buffer, 68, 10))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    expect(exports.pick!(7, 9, 2)).toBe(7)
    expect(exports.pick!(7, 9, 1)).toBe(9)
    expect(exports.pick!(7, 9, 0)).toBe(-70000)
  })

  it("rejects malformed or ill-typed text", () => {
    const wrap = (body: string) => `(module (import "env" "memory" (memory 1)) (func $f (export "f") ${body}))`
    expect(() => assemble(wrap("(i64.add (i32.const 1) (i32.const 2))"))).toThrow()
    expect(() => assemble(wrap("(br $nowhere)"))).toThrow()
    expect(() => assemble(wrap("(local.get $x)"))).toThrow()
    expect(() => assemble(wrap("(nop"))).toThrow()
  })
})
