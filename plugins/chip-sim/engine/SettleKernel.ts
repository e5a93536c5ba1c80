/**
 * The settle loop of Chip (see Chip.settle and the module comment of Chip.ts) as a WebAssembly
 * function, for consistent states (transistors conduct as their gates say); for the memo it can
 * log each change, and `toggle` applies the net flips of a recorded settle or span.
 *
 * Same event order as Chip.settleGeneral, the TypeScript statement of the scheme: the list of a
 * pass is worked in order; a node with no conducting node-to-node channel is settled from its
 * drive word; otherwise its group is found, as a pair (start and one neighbour with no other
 * channel), a star (a centre, start or its one neighbour, whose other channels end at leaves:
 * the order a walk visits them in is start, [centre,] leaves in bit order), or by a depth-first
 * walk in transistor-row order; a group whose members all have its level already is passed
 * over; else the level is applied in walk order, each changed node adding (rising) or
 * subtracting (falling) its effect list to the node words and queuing its dependants, once per
 * pass. Typed-array code in V8 pays a bounds check and reloads per access; here the same loop
 * runs over one linear memory close to native speed (about 3x the TypeScript loop).
 *
 * Memory layout (byte offsets, see KernelLayout): the chip's own state and scratch (node
 * levels as bytes, node words, lists, stamps, the walk stack, the change log) followed by copies
 * of the static tables it reads (channel lists, effect lists with byte addresses of their target
 * words, dependant lists). Chip's typed arrays for these are views of the same memory, so its
 * TypeScript paths and the kernel share one state. The source is assembled by Wat.ts when the
 * first chip of a netlist is built.
 */
import { assemble } from "./Wat.ts"

/** The parts of the WebAssembly JS API used here (the project's type libraries do not declare it). */
interface WasmMemory {
  readonly buffer: ArrayBuffer
}
interface WasmApi {
  Memory: new (descriptor: { initial: number; maximum?: number }) => WasmMemory
  Module: new (bytes: Uint8Array) => object
  Instance: new (module: object, imports: object) => { readonly exports: Record<string, unknown> }
}
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly

/** What the kernel needs of ChipTables (node numbering, CSR tables; see ChipTables). */
export interface KernelTables {
  readonly nodeCount: number
  readonly vss: number
  readonly vcc: number
  readonly nnStart: Int32Array
  readonly nnOther: Int32Array
  readonly effStart: Int32Array
  readonly effIdx: Int32Array
  readonly effAmt: Int32Array
  readonly depStart: Int32Array
  readonly dep: Int32Array
}

/** Byte offsets of the regions of a kernel's memory, and its size in 64 KiB pages. */
export interface KernelLayout {
  readonly value: number
  readonly ns: number
  readonly listA: number
  readonly listB: number
  readonly listStamp: number
  readonly groupStamp: number
  readonly group: number
  readonly stackNode: number
  readonly stackMask: number
  /**
   * Log of changes (2 * node id + new level, in order) when logging is on, up to the kernel's
   * logMax entries; also scratch for node lists handed to toggle (up to nodeCount).
   */
  readonly log: number
  /** Two words the kernel leaves behind: the list and group generation stamps it reached. */
  readonly regs: number
  readonly nnStart: number
  readonly nnOther: number
  readonly effStart: number
  /** Effect pairs: byte address of the target node word, amount. */
  readonly eff: number
  readonly depStart: number
  readonly dep: number
  readonly pages: number
}

/** Changes a logged settle may record by default; beyond it the log reports overflow. */
export const LOG_MAX = 1 << 16

/** Bounds a kernel is built with. */
export interface KernelOptions {
  /** Passes after which a settle gives up (Chip's MAX_SETTLE_PASSES). */
  readonly maxPasses: number
  /** Changes a logged settle records at most (default LOG_MAX; smaller only in tests). */
  readonly logMax?: number
}

const layoutOf = (t: KernelTables, logMax: number): KernelLayout => {
  const nn = t.nodeCount
  let at = 0
  const take = (bytes: number): number => {
    const start = at
    at += (bytes + 7) & ~7
    return start
  }
  const value = take(nn)
  const ns = take(8 * nn)
  const listA = take(4 * nn)
  const listB = take(4 * nn)
  const listStamp = take(4 * nn)
  const groupStamp = take(4 * nn)
  const group = take(4 * nn)
  const stackNode = take(4 * (nn + 1))
  const stackMask = take(4 * (nn + 1))
  const log = take(4 * Math.max(logMax, nn))
  const regs = take(16)
  const nnStart = take(4 * (nn + 1))
  const nnOther = take(4 * t.nnOther.length)
  const effStart = take(4 * (nn + 1))
  const eff = take(8 * t.effIdx.length)
  const depStart = take(4 * (2 * nn + 1))
  const dep = take(4 * t.dep.length)
  return {
    value, ns, listA, listB, listStamp, groupStamp, group, stackNode, stackMask, log, regs,
    nnStart, nnOther, effStart, eff, depStart, dep, pages: Math.ceil(at / 65536)
  }
}

/**
 * The kernel's source. `settle(count, cur, next, gen, ggen, logging)`: settles from the first
 * `count` node ids at byte address `cur` in at most `maxPasses` passes, using `next` as the other
 * list; `gen`, `ggen` are the last list and group stamps used; with `logging` set, every change
 * appends 2 * node id + new level to the log. Returns the number of changes logged (more than
 * logMax: the log overflowed and holds the first logMax); leaves the stamps reached in
 * regs[0], regs[1].
 */
const source = (t: KernelTables, L: KernelLayout, maxPasses: number, logMax: number): string => {
  // rank of node $n's drive word $d and level: 5 ground, 4 power, 3 pull-down, 2 pull-up, else the level
  const rank = (n: string) => `
    (select (i32.const 5)
      (select (i32.const 4)
        (select (i32.const 3)
          (select (i32.const 2) (i32.load8_u offset=${L.value} (local.get ${n})) (i32.and (local.get $d) (i32.const 1)))
          (i32.and (local.get $d) (i32.const 2)))
        (i32.ge_u (local.get $d) (i32.const 0x100)))
      (i32.ge_u (local.get $d) (i32.const 0x10000)))`
  // node $n's effect list applied for its new level $nv (uses $e, $end, $x)
  const effects = `
    (local.set $e (i32.load offset=${L.effStart} (i32.shl (local.get $n) (i32.const 2))))
    (local.set $end (i32.load offset=${L.effStart + 4} (i32.shl (local.get $n) (i32.const 2))))
    (if (i32.lt_u (local.get $e) (local.get $end))
      (then
        (if (local.get $nv)
          (then
            (loop $rise
              (local.set $x (i32.load offset=${L.eff} (i32.shl (local.get $e) (i32.const 3))))
              (i32.store (local.get $x)
                (i32.add (i32.load (local.get $x)) (i32.load offset=${L.eff + 4} (i32.shl (local.get $e) (i32.const 3)))))
              (br_if $rise (i32.lt_u (local.tee $e (i32.add (local.get $e) (i32.const 1))) (local.get $end)))))
          (else
            (loop $fall
              (local.set $x (i32.load offset=${L.eff} (i32.shl (local.get $e) (i32.const 3))))
              (i32.store (local.get $x)
                (i32.sub (i32.load (local.get $x)) (i32.load offset=${L.eff + 4} (i32.shl (local.get $e) (i32.const 3)))))
              (br_if $fall (i32.lt_u (local.tee $e (i32.add (local.get $e) (i32.const 1))) (local.get $end))))))))`
  return `
(module
  (import "env" "memory" (memory ${L.pages}))
  ;; toggle(addr, count): flips each of the \`count\` node ids at byte address \`addr\`, in order,
  ;; and applies its effect list for its new level (a recorded replay's net flips)
  (func $toggle (export "toggle") (param $addr i32) (param $count i32)
    (local $n i32) (local $nv i32) (local $e i32) (local $end i32) (local $x i32)
    (block $done
      (loop $nodes
        (br_if $done (i32.eqz (local.get $count)))
        (local.set $n (i32.load (local.get $addr)))
        (local.set $nv (i32.xor (i32.load8_u offset=${L.value} (local.get $n)) (i32.const 1)))
        (i32.store8 offset=${L.value} (local.get $n) (local.get $nv))
        ${effects}
        (local.set $addr (i32.add (local.get $addr) (i32.const 4)))
        (local.set $count (i32.sub (local.get $count) (i32.const 1)))
        (br $nodes))))
  (func $settle (export "settle")
    (param $count i32) (param $cur i32) (param $next i32) (param $gen i32) (param $ggen i32) (param $logging i32)
    (result i32)
    (local $pass i32) (local $i i32) (local $nextCount i32) (local $start i32) (local $sm i32)
    (local $d i32) (local $nv i32) (local $gcount i32) (local $o i32) (local $x i32) (local $r i32)
    (local $rank i32) (local $sp i32) (local $m i32) (local $mk i32) (local $low i32) (local $found i32)
    (local $k i32) (local $n i32) (local $e i32) (local $end i32) (local $tmp i32) (local $logged i32)
    (local $vsum i32)
    (block $done
      (loop $passes
        (br_if $done (i32.eqz (local.get $count)))
        (br_if $done (i32.ge_u (local.get $pass) (i32.const ${maxPasses})))
        (local.set $gen (i32.add (local.get $gen) (i32.const 1)))
        (local.set $nextCount (i32.const 0))
        (local.set $i (i32.const 0))
        (loop $entries
          (block $nextEntry
            (local.set $start (i32.load (i32.add (local.get $cur) (i32.shl (local.get $i) (i32.const 2)))))
            (br_if $nextEntry (i32.eq (local.get $start) (i32.const ${t.vss})))
            (br_if $nextEntry (i32.eq (local.get $start) (i32.const ${t.vcc})))
            (local.set $sm (i32.load offset=${L.ns} (i32.shl (local.get $start) (i32.const 3))))
            (if (i32.eqz (local.get $sm))
              (then
                ;; alone in its group: rails by count, then pulls, then stored charge (unchanged)
                (local.set $d (i32.load offset=${L.ns + 4} (i32.shl (local.get $start) (i32.const 3))))
                (br_if $nextEntry (i32.eqz (local.get $d)))
                (local.set $nv
                  (select (i32.const 0)
                    (select (i32.const 1)
                      (i32.xor (i32.shr_u (i32.and (local.get $d) (i32.const 2)) (i32.const 1)) (i32.const 1))
                      (i32.ge_u (local.get $d) (i32.const 0x100)))
                    (i32.ge_u (local.get $d) (i32.const 0x10000))))
                (br_if $nextEntry (i32.eq (local.get $nv) (i32.load8_u offset=${L.value} (local.get $start))))
                (i32.store offset=${L.group} (i32.const 0) (local.get $start))
                (local.set $gcount (i32.const 1)))
              (else
                ;; one conducting channel to a node with no other: a pair, start first
                (local.set $o (i32.const -1))
                (if (i32.eqz (i32.and (local.get $sm) (i32.sub (local.get $sm) (i32.const 1))))
                  (then
                    (local.set $x (i32.load offset=${L.nnOther}
                      (i32.shl
                        (i32.add
                          (i32.load offset=${L.nnStart} (i32.shl (local.get $start) (i32.const 2)))
                          (i32.ctz (local.get $sm)))
                        (i32.const 2))))
                    (local.set $mk (i32.load offset=${L.ns} (i32.shl (local.get $x) (i32.const 3))))
                    (if (i32.eqz (i32.and (local.get $mk) (i32.sub (local.get $mk) (i32.const 1))))
                      (then (local.set $o (local.get $x))))))
                (if (i32.ge_s (local.get $o) (i32.const 0))
                  (then
                    (local.set $d (i32.load offset=${L.ns + 4} (i32.shl (local.get $start) (i32.const 3))))
                    (local.set $rank ${rank("$start")})
                    (local.set $d (i32.load offset=${L.ns + 4} (i32.shl (local.get $o) (i32.const 3))))
                    (local.set $r ${rank("$o")})
                    (if (i32.gt_u (local.get $r) (local.get $rank)) (then (local.set $rank (local.get $r))))
                    (i32.store offset=${L.group} (i32.const 0) (local.get $start))
                    (i32.store offset=${L.group + 4} (i32.const 0) (local.get $o))
                    (local.set $vsum (i32.add (i32.load8_u offset=${L.value} (local.get $start)) (i32.load8_u offset=${L.value} (local.get $o))))
                    (local.set $gcount (i32.const 2)))
                  (else
                   (block $grouped
                    (block $generic
                      ;; A star: a centre whose other channels all end at leaves (nodes with one
                      ;; conducting channel), the centre being start or start's one neighbour $x
                      ;; (mask $mk). The walk below visits it as start, [centre,] leaves in bit
                      ;; order, so that order is taken directly; anything else goes to the walk.
                      (local.set $d (i32.load offset=${L.ns + 4} (i32.shl (local.get $start) (i32.const 3))))
                      (local.set $rank ${rank("$start")})
                      (i32.store offset=${L.group} (i32.const 0) (local.get $start))
                      (local.set $vsum (i32.load8_u offset=${L.value} (local.get $start)))
                      (local.set $gcount (i32.const 1))
                      (local.set $m (local.get $start))
                      (local.set $low (local.get $sm))
                      (if (i32.eqz (i32.and (local.get $sm) (i32.sub (local.get $sm) (i32.const 1))))
                        (then
                          (local.set $m (local.get $x))
                          (local.set $low (local.get $mk))
                          (i32.store offset=${L.group + 4} (i32.const 0) (local.get $x))
                          (local.set $vsum (i32.add (local.get $vsum) (i32.load8_u offset=${L.value} (local.get $x))))
                          (local.set $gcount (i32.const 2))
                          (local.set $d (i32.load offset=${L.ns + 4} (i32.shl (local.get $x) (i32.const 3))))
                          (local.set $r ${rank("$x")})
                          (if (i32.gt_u (local.get $r) (local.get $rank)) (then (local.set $rank (local.get $r))))))
                      ;; $m: centre, $low: its channels not yet followed, $sp: its nnStart
                      (local.set $sp (i32.load offset=${L.nnStart} (i32.shl (local.get $m) (i32.const 2))))
                      (loop $leaves
                        (local.set $o (i32.load offset=${L.nnOther}
                          (i32.shl
                            (i32.add (local.get $sp) (i32.ctz (local.get $low)))
                            (i32.const 2))))
                        (local.set $low (i32.and (local.get $low) (i32.sub (local.get $low) (i32.const 1))))
                        (if (i32.ne (local.get $o) (local.get $start))
                          (then
                            (local.set $mk (i32.load offset=${L.ns} (i32.shl (local.get $o) (i32.const 3))))
                            (br_if $generic (i32.and (local.get $mk) (i32.sub (local.get $mk) (i32.const 1))))
                            (i32.store offset=${L.group} (i32.shl (local.get $gcount) (i32.const 2)) (local.get $o))
                            (local.set $vsum (i32.add (local.get $vsum) (i32.load8_u offset=${L.value} (local.get $o))))
                            (local.set $gcount (i32.add (local.get $gcount) (i32.const 1)))
                            (local.set $d (i32.load offset=${L.ns + 4} (i32.shl (local.get $o) (i32.const 3))))
                            (local.set $r ${rank("$o")})
                            (if (i32.gt_u (local.get $r) (local.get $rank)) (then (local.set $rank (local.get $r))))))
                        (br_if $leaves (local.get $low)))
                      (br $grouped))
                    ;; depth-first walk over conducting channels, lowest bit (transistor row) first
                    (local.set $ggen (i32.add (local.get $ggen) (i32.const 1)))
                    (local.set $rank (i32.const 0))
                    (local.set $sp (i32.const 0))
                    (local.set $m (local.get $start))
                    (i32.store offset=${L.groupStamp} (i32.shl (local.get $start) (i32.const 2)) (local.get $ggen))
                    (i32.store offset=${L.group} (i32.const 0) (local.get $start))
                    (local.set $vsum (i32.load8_u offset=${L.value} (local.get $start)))
                    (local.set $gcount (i32.const 1))
                    (i32.store offset=${L.stackNode} (i32.const 0)
                      (i32.load offset=${L.nnStart} (i32.shl (local.get $start) (i32.const 2))))
                    (i32.store offset=${L.stackMask} (i32.const 0) (local.get $sm))
                    (block $walked
                      (loop $walk
                        (if (i32.lt_u (local.get $rank) (i32.const 5))
                          (then
                            (local.set $d (i32.load offset=${L.ns + 4} (i32.shl (local.get $m) (i32.const 3))))
                            (local.set $r ${rank("$m")})
                            (if (i32.gt_u (local.get $r) (local.get $rank)) (then (local.set $rank (local.get $r))))))
                        (local.set $found (i32.const -1))
                        (block $got
                          (loop $search
                            (br_if $got (i32.lt_s (local.get $sp) (i32.const 0)))
                            (local.set $mk (i32.load offset=${L.stackMask} (i32.shl (local.get $sp) (i32.const 2))))
                            (if (i32.eqz (local.get $mk))
                              (then
                                (local.set $sp (i32.sub (local.get $sp) (i32.const 1)))
                                (br $search)))
                            (i32.store offset=${L.stackMask} (i32.shl (local.get $sp) (i32.const 2))
                              (i32.and (local.get $mk) (i32.sub (local.get $mk) (i32.const 1))))
                            (local.set $x (i32.load offset=${L.nnOther}
                              (i32.shl
                                (i32.add
                                  (i32.load offset=${L.stackNode} (i32.shl (local.get $sp) (i32.const 2)))
                                  (i32.ctz (local.get $mk)))
                                (i32.const 2))))
                            (br_if $search (i32.eq
                              (i32.load offset=${L.groupStamp} (i32.shl (local.get $x) (i32.const 2)))
                              (local.get $ggen)))
                            (local.set $found (local.get $x))))
                        (br_if $walked (i32.lt_s (local.get $found) (i32.const 0)))
                        (local.set $m (local.get $found))
                        (i32.store offset=${L.groupStamp} (i32.shl (local.get $m) (i32.const 2)) (local.get $ggen))
                        (i32.store offset=${L.group} (i32.shl (local.get $gcount) (i32.const 2)) (local.get $m))
                        (local.set $vsum (i32.add (local.get $vsum) (i32.load8_u offset=${L.value} (local.get $m))))
                        (local.set $gcount (i32.add (local.get $gcount) (i32.const 1)))
                        (local.set $sp (i32.add (local.get $sp) (i32.const 1)))
                        (i32.store offset=${L.stackNode} (i32.shl (local.get $sp) (i32.const 2))
                          (i32.load offset=${L.nnStart} (i32.shl (local.get $m) (i32.const 2))))
                        (i32.store offset=${L.stackMask} (i32.shl (local.get $sp) (i32.const 2))
                          (i32.load offset=${L.ns} (i32.shl (local.get $m) (i32.const 3))))
                        (br $walk))))))
                ;; high when the top rank is 1, 2 or 4
                (local.set $nv (i32.and (i32.shr_u (i32.const 22) (local.get $rank)) (i32.const 1)))
                ;; nothing to do when every member already has that level ($vsum: members high)
                (br_if $nextEntry (i32.eq (local.get $vsum) (i32.mul (local.get $nv) (local.get $gcount))))))
            ;; apply the level in walk order
            (local.set $k (i32.const 0))
            (loop $apply
              (block $nextMember
                (local.set $n (i32.load offset=${L.group} (i32.shl (local.get $k) (i32.const 2))))
                (br_if $nextMember (i32.eq (i32.load8_u offset=${L.value} (local.get $n)) (local.get $nv)))
                (i32.store8 offset=${L.value} (local.get $n) (local.get $nv))
                (if (local.get $logging)
                  (then
                    (if (i32.lt_u (local.get $logged) (i32.const ${logMax}))
                      (then (i32.store offset=${L.log} (i32.shl (local.get $logged) (i32.const 2))
                        (i32.or (i32.shl (local.get $n) (i32.const 1)) (local.get $nv)))))
                    (local.set $logged (i32.add (local.get $logged) (i32.const 1)))))
                ${effects}
                (local.set $x (i32.shl (i32.add (i32.shl (local.get $n) (i32.const 1)) (local.get $nv)) (i32.const 2)))
                (local.set $e (i32.load offset=${L.depStart} (local.get $x)))
                (local.set $end (i32.load offset=${L.depStart + 4} (local.get $x)))
                (if (i32.lt_u (local.get $e) (local.get $end))
                  (then
                    (loop $queue
                      (local.set $x (i32.load offset=${L.dep} (i32.shl (local.get $e) (i32.const 2))))
                      (if (i32.ne (i32.load offset=${L.listStamp} (i32.shl (local.get $x) (i32.const 2))) (local.get $gen))
                        (then
                          (i32.store offset=${L.listStamp} (i32.shl (local.get $x) (i32.const 2)) (local.get $gen))
                          (i32.store (i32.add (local.get $next) (i32.shl (local.get $nextCount) (i32.const 2))) (local.get $x))
                          (local.set $nextCount (i32.add (local.get $nextCount) (i32.const 1)))))
                      (br_if $queue (i32.lt_u (local.tee $e (i32.add (local.get $e) (i32.const 1))) (local.get $end)))))))
              (br_if $apply (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (local.get $gcount)))))
          (br_if $entries (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $count))))
        (local.set $tmp (local.get $cur))
        (local.set $cur (local.get $next))
        (local.set $next (local.get $tmp))
        (local.set $count (local.get $nextCount))
        (local.set $pass (i32.add (local.get $pass) (i32.const 1)))
        (br $passes)))
    (i32.store offset=${L.regs} (i32.const 0) (local.get $gen))
    (i32.store offset=${L.regs + 4} (i32.const 0) (local.get $ggen))
    (local.get $logged)))`
}

/** One chip's kernel: its memory (state, scratch, tables) and the settle function. */
export interface Kernel {
  readonly layout: KernelLayout
  /** Changes a logged settle records at most. */
  readonly logMax: number
  readonly memory: WasmMemory
  readonly settle: (count: number, cur: number, next: number, gen: number, ggen: number, logging: number) => number
  /** Flips `count` node ids stored from byte address `addr` and applies their effect lists. */
  readonly toggle: (addr: number, count: number) => void
}

const modules = new WeakMap<KernelTables, Map<string, { layout: KernelLayout; module: object }>>()

/**
 * A kernel for one chip over tables `t`: the module is assembled and compiled once per tables
 * and options (a few milliseconds), the memory is the chip's own, with the tables copied in.
 */
export const makeKernel = (t: KernelTables, options: KernelOptions): Kernel => {
  const logMax = options.logMax ?? LOG_MAX
  const key = `${options.maxPasses}/${logMax}`
  let perTables = modules.get(t)
  if (perTables === undefined) modules.set(t, (perTables = new Map()))
  let compiled = perTables.get(key)
  if (compiled === undefined) {
    const layout = layoutOf(t, logMax)
    compiled = { layout, module: new wasm.Module(assemble(source(t, layout, options.maxPasses, logMax))) }
    perTables.set(key, compiled)
  }
  const L = compiled.layout
  const memory = new wasm.Memory({ initial: L.pages, maximum: L.pages })
  const buf = memory.buffer
  new Int32Array(buf, L.nnStart, t.nnStart.length).set(t.nnStart)
  new Int32Array(buf, L.nnOther, t.nnOther.length).set(t.nnOther)
  new Int32Array(buf, L.effStart, t.effStart.length).set(t.effStart)
  const eff = new Int32Array(buf, L.eff, 2 * t.effIdx.length)
  for (let k = 0; k < t.effIdx.length; k++) {
    eff[2 * k] = L.ns + 4 * t.effIdx[k]!
    eff[2 * k + 1] = t.effAmt[k]!
  }
  new Int32Array(buf, L.depStart, t.depStart.length).set(t.depStart)
  new Int32Array(buf, L.dep, t.dep.length).set(t.dep)
  const instance = new wasm.Instance(compiled.module, { env: { memory } })
  return {
    layout: L,
    logMax,
    memory,
    settle: instance.exports.settle as Kernel["settle"],
    toggle: instance.exports.toggle as Kernel["toggle"]
  }
}
