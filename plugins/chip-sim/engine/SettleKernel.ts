/**
 * The settle loop of Chip (see ChipSettle.settle and the module comment of ChipSettle.ts) as a
 * WebAssembly function, for consistent states (transistors conduct as their gates say); for the
 * memo it also notes each change (fingerprint, recorders), and `toggle` applies the net flips of
 * a recorded settle or span.
 *
 * Same event order as ChipSettle.settleGeneral, the TypeScript statement of the scheme: the list
 * of a pass (never holding a rail, whose entries the scheme skips) is worked in order; a node with no conducting node-to-node channel is settled from its
 * drive word; otherwise its group is found, as a pair (start and one neighbour with no other
 * channel), a star (a centre, start or its one neighbour, whose other channels end at leaves:
 * the order a walk visits them in is start, [centre,] leaves in bit order), or by a depth-first
 * walk in transistor-row order; a group whose members all have its level already is passed
 * over; else the level is applied in walk order, each changed node adding (rising) or
 * subtracting (falling) its effect list to the node words and queuing its dependants, once per
 * pass. Typed-array code in V8 pays a bounds check and reloads per access; here the same loop
 * runs over one linear memory close to native speed (about 3x the TypeScript loop).
 *
 * Much of a settle's time goes to branches whose outcome the data decides (is the node alone,
 * does its level change, is it rising), so the loop is shaped to have fewer of them and to keep
 * each at its own site: a lone node's change and a pair's changes are applied where they are
 * decided (each site with its own copy of the change code) instead of through the group list
 * and the apply loop, and an effect list is one loop whose amount is negated branch-free for a
 * falling node. None of this reorders anything: the same nodes change in the same order and
 * add the same amounts in the same order, so every result is the scheme's. Measured and not
 * kept: per-node straight-line change code reached through call_indirect (16% slower: an
 * indirect call per change, around which the loop's live registers are saved), a branch-free
 * dependant queue (within the noise), one 32-byte record per node holding its list stamp,
 * channel base and list bounds (+1 to +6%, within the noise; more D1 misses in cachegrind's model).
 *
 * Memory layout (byte offsets, see KernelLayout): the chip's own state and scratch (node
 * levels as bytes, node words, lists, stamps, the walk stack, the recorders) followed by copies
 * of the static tables it reads (channel lists, effect lists with byte addresses of their target
 * words, dependant lists). Chip's typed arrays for these are views of the same memory, so its
 * TypeScript paths and the kernel share one state. The source is assembled by WABT when the
 * first chip of a netlist is built.
 */
import initWabt from "wabt"

/**
 * WebAssembly text to binary by WABT's own parser and encoder (the `wabt` package, the
 * WebAssembly Binary Toolkit built to WebAssembly), validated; throws WABT's message on an error.
 */
const wabt = await initWabt()
export const assemble = (src: string): Uint8Array => {
  const m = wabt.parseWat("settle.wat", src)
  try {
    m.validate()
    return m.toBinary({}).buffer
  } finally {
    m.destroy()
  }
}

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
  /** Zobrist keys (one word per node) of node levels, and the XOR of those of each node's gated transistors. */
  readonly zValue: Int32Array
  readonly zGate: Int32Array
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
  /** Scratch for the node lists handed to toggle (up to nodeCount). */
  readonly scratch: number
  /** Words the kernel reads and leaves behind: see the REG_ indices. */
  readonly regs: number
  /** Per node, one word: its level's Zobrist key XOR its gated transistors' (fingerprinting). */
  readonly zv: number
  /**
   * Node levels packed 32 to a word (bit n & 31 of word n >> 5): the memo's exact key. Kept by
   * settleNoted under NOTE_HASH and by toggle; rebuilt by Chip when the memo switches on.
   */
  readonly vbits: number
  /** The settle recorder: per-node stamps, the nodes changed in order, their levels before. */
  readonly recStamp: number
  readonly recNodes: number
  readonly recNodeWas: number
  /** The span recorder: per-node stamps and levels before, the nodes changed in order. */
  readonly macroStamp: number
  readonly macroOrig: number
  readonly macroNodes: number
  /** Channel lists as in ChipTables (nnStart indexes nnOther). */
  readonly nnStart: number
  readonly nnOther: number
  /** RANK_CODE, 33 bytes. */
  readonly rankCode: number
  /** Per node, the byte address of its first effect pair (and of the next node's). */
  readonly effStart: number
  /** Effect pairs: byte address of the target node word, amount. */
  readonly eff: number
  /** Per node and new level (2n + nv), the byte address of its first dependant (node ids). */
  readonly depStart: number
  readonly dep: number
  readonly pages: number
}

/**
 * Indices of the words at KernelLayout.regs: the list and group stamps a settle reached, the
 * fingerprint (one word, then two unused), the recorder's stamp and count, the span recorder's stamp and count.
 * The kernel reads the last seven before a settle and writes them back after.
 */
export const REG_GEN = 0
export const REG_GGEN = 1
export const REG_H = 2
export const REG_REC_GEN = 5
export const REG_REC_COUNT = 6
export const REG_MACRO_GEN = 7
export const REG_MACRO_COUNT = 8

/**
 * Bits of settle's `flags`: what each change is noted for (ChipSettle.memoActive, recording,
 * macroRec).
 */
export const NOTE_HASH = 1
export const NOTE_RECORD = 2
export const NOTE_MACRO = 4

/**
 * A node's rank code by the leading zeros of its drive word (see DRV_PULLUP etc. in Tables.ts):
 * twice the priority of what drives it, 10 ground (a ground count, from bit 16), 8 power (from
 * bit 8), 6 pull-down (bit 1), 4 pull-up (bit 0 alone), 0 nothing; or'd with the node's level
 * (stored charge), so that the largest code in a group decides its level, high for codes 1
 * (charge), 4, 5 (pull-up), 8, 9 (power): the set bits of RANK_HIGH.
 */
const RANK_CODE = Uint8Array.from({ length: 33 }, (_, z) => (z <= 15 ? 10 : z <= 23 ? 8 : z === 30 ? 6 : z === 31 ? 4 : 0))
const RANK_HIGH = (1 << 1) | (1 << 4) | (1 << 5) | (1 << 8) | (1 << 9)

const layoutOf = (t: KernelTables): KernelLayout => {
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
  const scratch = take(4 * nn)
  const regs = take(64)
  const zv = take(4 * nn)
  const vbits = take(4 * ((nn + 31) >> 5))
  const recStamp = take(4 * nn)
  const recNodes = take(4 * nn)
  const recNodeWas = take(nn)
  const macroStamp = take(4 * nn)
  const macroOrig = take(nn)
  const macroNodes = take(4 * nn)
  const nnStart = take(4 * (nn + 1))
  const nnOther = take(4 * t.nnOther.length)
  const rankCode = take(RANK_CODE.length)
  const effStart = take(4 * (nn + 1))
  const eff = take(8 * t.effIdx.length)
  const depStart = take(4 * (2 * nn + 1))
  const dep = take(4 * t.dep.length)
  return {
    value, ns, listA, listB, listStamp, groupStamp, group, stackNode, stackMask, scratch, regs,
    zv, vbits, recStamp, recNodes, recNodeWas, macroStamp, macroOrig, macroNodes,
    nnStart, nnOther, rankCode, effStart, eff, depStart, dep, pages: Math.ceil(at / 65536)
  }
}

/**
 * The kernel's source. `settle(count, cur, next, gen, ggen, flags)` and `settleNoted` (same
 * arguments) settle from the first `count` node ids at byte address `cur` in at most
 * `maxPasses` passes, using `next` as the other list; `gen`, `ggen` are the last list and group
 * stamps used, the stamps reached are left in regs. settleNoted notes each change as `flags`
 * asks: NOTE_HASH folds it into the fingerprint, NOTE_RECORD appends the node to the settle
 * recorder the first time it changes (with its level before), NOTE_MACRO likewise to the span
 * recorder; `settle` ignores `flags`.
 */
const source = (t: KernelTables, L: KernelLayout, maxPasses: number): string => {
  const reg = (i: number) => L.regs + 4 * i
  // appends node $n to the group list: its level joins $vsum (members high), its rank code
  // (RANK_CODE by the leading zeros of its drive word, or'd with its level) the maximum $rank
  const member = (n: string) => `
    (i32.store offset=${L.group} (i32.shl (local.get $gcount) (i32.const 2)) (local.get ${n}))
    (local.set $gcount (i32.add (local.get $gcount) (i32.const 1)))
    (local.set $v (i32.load8_u offset=${L.value} (local.get ${n})))
    (local.set $vsum (i32.add (local.get $vsum) (local.get $v)))
    (local.set $r (i32.or
      (i32.load8_u offset=${L.rankCode} (i32.clz (i32.load offset=${L.ns + 4} (i32.shl (local.get ${n}) (i32.const 3)))))
      (local.get $v)))
    (local.set $rank (select (local.get $r) (local.get $rank) (i32.gt_u (local.get $r) (local.get $rank))))`
  // node $n's effect list applied for its new level $nv (uses $e, $end, $x); effStart holds the
  // byte addresses of the effect pairs
  const effects = `
    (local.set $e (i32.load offset=${L.effStart} (i32.shl (local.get $n) (i32.const 2))))
    (local.set $end (i32.load offset=${L.effStart + 4} (i32.shl (local.get $n) (i32.const 2))))
    (if (i32.lt_u (local.get $e) (local.get $end))
      (then
        ;; $sgn: 0 rising, -1 falling; (amount ^ $sgn) - $sgn is the amount or its negation
        (local.set $sgn (i32.sub (local.get $nv) (i32.const 1)))
        (loop $eff
          (local.set $x (i32.load (local.get $e)))
          (i32.store (local.get $x) (i32.add (i32.load (local.get $x))
            (i32.sub (i32.xor (i32.load offset=4 (local.get $e)) (local.get $sgn)) (local.get $sgn))))
          (br_if $eff (i32.lt_u (local.tee $e (i32.add (local.get $e) (i32.const 8))) (local.get $end))))))`
  // settle (plain) and settleNoted (each change also noted for the memo, as `flags` asks)
  const notingLoads = `
    (local.set $h1 (i32.load offset=${reg(REG_H)} (i32.const 0)))
    (local.set $recGen (i32.load offset=${reg(REG_REC_GEN)} (i32.const 0)))
    (local.set $recCount (i32.load offset=${reg(REG_REC_COUNT)} (i32.const 0)))
    (local.set $macroGen (i32.load offset=${reg(REG_MACRO_GEN)} (i32.const 0)))
    (local.set $macroCount (i32.load offset=${reg(REG_MACRO_COUNT)} (i32.const 0)))`
  // flips node $n's bit in the packed levels (uses $x)
  const flipBit = `
    (local.set $x (i32.shl (i32.shr_u (local.get $n) (i32.const 5)) (i32.const 2)))
    (i32.store offset=${L.vbits} (local.get $x)
      (i32.xor (i32.load offset=${L.vbits} (local.get $x)) (i32.shl (i32.const 1) (local.get $n))))`
  const notes = `
                (if (local.get $flags)
                  (then
                    (if (i32.and (local.get $flags) (i32.const ${NOTE_HASH}))
                      (then
                        (local.set $h1 (i32.xor (local.get $h1)
                          (i32.load offset=${L.zv} (i32.shl (local.get $n) (i32.const 2)))))
                        ${flipBit}))
                    (if (i32.and (local.get $flags) (i32.const ${NOTE_RECORD}))
                      (then
                        (if (i32.ne (i32.load offset=${L.recStamp} (i32.shl (local.get $n) (i32.const 2))) (local.get $recGen))
                          (then
                            (i32.store offset=${L.recStamp} (i32.shl (local.get $n) (i32.const 2)) (local.get $recGen))
                            (i32.store offset=${L.recNodes} (i32.shl (local.get $recCount) (i32.const 2)) (local.get $n))
                            (i32.store8 offset=${L.recNodeWas} (local.get $recCount) (i32.xor (local.get $nv) (i32.const 1)))
                            (local.set $recCount (i32.add (local.get $recCount) (i32.const 1)))))))
                    (if (i32.and (local.get $flags) (i32.const ${NOTE_MACRO}))
                      (then
                        (if (i32.ne (i32.load offset=${L.macroStamp} (i32.shl (local.get $n) (i32.const 2))) (local.get $macroGen))
                          (then
                            (i32.store offset=${L.macroStamp} (i32.shl (local.get $n) (i32.const 2)) (local.get $macroGen))
                            (i32.store8 offset=${L.macroOrig} (local.get $n) (i32.xor (local.get $nv) (i32.const 1)))
                            (i32.store offset=${L.macroNodes} (i32.shl (local.get $macroCount) (i32.const 2)) (local.get $n))
                            (local.set $macroCount (i32.add (local.get $macroCount) (i32.const 1)))))))))`
  const notingStores = `
    (i32.store offset=${reg(REG_H)} (i32.const 0) (local.get $h1))
    (i32.store offset=${reg(REG_REC_COUNT)} (i32.const 0) (local.get $recCount))
    (i32.store offset=${reg(REG_MACRO_COUNT)} (i32.const 0) (local.get $macroCount))`
  // node $n takes level $nv: its level, the notes for the memo, its effect list, its dependants
  // queued (each once per pass, by listStamp)
  const changeOf = (noting: boolean) => `
                (i32.store8 offset=${L.value} (local.get $n) (local.get $nv))
${noting ? notes : ""}
                ${effects}
                (local.set $x (i32.shl (i32.add (i32.shl (local.get $n) (i32.const 1)) (local.get $nv)) (i32.const 2)))
                (local.set $e (i32.load offset=${L.depStart} (local.get $x)))
                (local.set $end (i32.load offset=${L.depStart + 4} (local.get $x)))
                (if (i32.lt_u (local.get $e) (local.get $end))
                  (then
                    ;; depStart holds byte addresses of the dependant lists; $np: the next list's end
                    (loop $queue
                      (local.set $x (i32.load (local.get $e)))
                      (if (i32.ne (i32.load offset=${L.listStamp} (i32.shl (local.get $x) (i32.const 2))) (local.get $gen))
                        (then
                          (i32.store offset=${L.listStamp} (i32.shl (local.get $x) (i32.const 2)) (local.get $gen))
                          (i32.store (local.get $np) (local.get $x))
                          (local.set $np (i32.add (local.get $np) (i32.const 4)))))
                      (br_if $queue (i32.lt_u (local.tee $e (i32.add (local.get $e) (i32.const 4))) (local.get $end))))))
`
  const settle = (name: string, noting: boolean) => `
  (func $${name} (export "${name}")
    (param $count i32) (param $cur i32) (param $next i32) (param $gen i32) (param $ggen i32) (param $flags i32)
    (local $pass i32) (local $i i32) (local $iend i32) (local $np i32) (local $start i32) (local $sm i32)
    (local $d i32) (local $nv i32) (local $gcount i32) (local $o i32) (local $x i32) (local $r i32)
    (local $rank i32) (local $sp i32) (local $m i32) (local $mk i32) (local $low i32) (local $found i32)
    (local $k i32) (local $n i32) (local $e i32) (local $end i32) (local $tmp i32)
    (local $h1 i32) (local $recGen i32) (local $recCount i32)
    (local $macroGen i32) (local $macroCount i32)
    (local $vsum i32) (local $v i32) (local $sgn i32)
${noting ? notingLoads : ""}
    (block $done
      (loop $passes
        (br_if $done (i32.eqz (local.get $count)))
        (br_if $done (i32.ge_u (local.get $pass) (i32.const ${maxPasses})))
        (local.set $gen (i32.add (local.get $gen) (i32.const 1)))
        ;; $i walks this pass's list by address up to $iend
        (local.set $np (local.get $next))
        (local.set $i (local.get $cur))
        (local.set $iend (i32.add (local.get $cur) (i32.shl (local.get $count) (i32.const 2))))
        (loop $entries
          (block $nextEntry
            (local.set $start (i32.load (local.get $i)))
            (local.set $sm (i32.load offset=${L.ns} (i32.shl (local.get $start) (i32.const 3))))
            (if (i32.eqz (local.get $sm))
              (then
                ;; alone in its group: rails by count, then pulls, then stored charge (unchanged)
                (local.set $d (i32.load offset=${L.ns + 4} (i32.shl (local.get $start) (i32.const 3))))
                (local.set $r (i32.load8_u offset=${L.value} (local.get $start)))
                (local.set $nv (i32.and
                  (i32.shr_u (i32.const ${RANK_HIGH})
                    (i32.or (i32.load8_u offset=${L.rankCode} (i32.clz (local.get $d))) (local.get $r)))
                  (i32.const 1)))
                (br_if $nextEntry (i32.eq (local.get $nv) (local.get $r)))
                ;; a lone node's change is applied here, not through the group list
                (local.set $n (local.get $start))
                ${changeOf(noting)}
                (br $nextEntry))
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
                    ;; a pair: its level from the two rank codes, applied to start, then $o
                    (local.set $v (i32.load8_u offset=${L.value} (local.get $start)))
                    (local.set $vsum (i32.load8_u offset=${L.value} (local.get $o)))
                    (local.set $r (i32.or
                      (i32.load8_u offset=${L.rankCode} (i32.clz (i32.load offset=${L.ns + 4} (i32.shl (local.get $start) (i32.const 3)))))
                      (local.get $v)))
                    (local.set $rank (i32.or
                      (i32.load8_u offset=${L.rankCode} (i32.clz (i32.load offset=${L.ns + 4} (i32.shl (local.get $o) (i32.const 3)))))
                      (local.get $vsum)))
                    (local.set $rank (select (local.get $r) (local.get $rank) (i32.gt_u (local.get $r) (local.get $rank))))
                    (local.set $nv (i32.and (i32.shr_u (i32.const ${RANK_HIGH}) (local.get $rank)) (i32.const 1)))
                    (if (i32.ne (local.get $v) (local.get $nv))
                      (then
                        (local.set $n (local.get $start))
                        ${changeOf(noting)}))
                    (if (i32.ne (local.get $vsum) (local.get $nv))
                      (then
                        (local.set $n (local.get $o))
                        ${changeOf(noting)}))
                    (br $nextEntry)))
                (local.set $rank (i32.const 0))
                (local.set $vsum (i32.const 0))
                (local.set $gcount (i32.const 0))
                ${member("$start")}
                   (block $grouped
                    (block $generic
                      ;; A star: a centre whose other channels all end at leaves (nodes with one
                      ;; conducting channel), the centre being start or start's one neighbour $x
                      ;; (mask $mk). The walk below visits it as start, [centre,] leaves in bit
                      ;; order, so that order is taken directly; anything else goes to the walk.
                      (local.set $m (local.get $start))
                      (local.set $low (local.get $sm))
                      (if (i32.eqz (i32.and (local.get $sm) (i32.sub (local.get $sm) (i32.const 1))))
                        (then
                          (local.set $m (local.get $x))
                          (local.set $low (local.get $mk))
                          ${member("$x")}))
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
                            ${member("$o")}))
                        (br_if $leaves (local.get $low)))
                      (br $grouped))
                    ;; depth-first walk over conducting channels, lowest bit (transistor row) first
                    (local.set $ggen (i32.add (local.get $ggen) (i32.const 1)))
                    (local.set $rank (i32.const 0))
                    (local.set $vsum (i32.const 0))
                    (local.set $gcount (i32.const 0))
                    ${member("$start")}
                    (local.set $sp (i32.const 0))
                    (i32.store offset=${L.groupStamp} (i32.shl (local.get $start) (i32.const 2)) (local.get $ggen))
                    (i32.store offset=${L.stackNode} (i32.const 0)
                      (i32.load offset=${L.nnStart} (i32.shl (local.get $start) (i32.const 2))))
                    (i32.store offset=${L.stackMask} (i32.const 0) (local.get $sm))
                    (block $walked
                      (loop $walk
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
                        ${member("$m")}
                        (local.set $sp (i32.add (local.get $sp) (i32.const 1)))
                        (i32.store offset=${L.stackNode} (i32.shl (local.get $sp) (i32.const 2))
                          (i32.load offset=${L.nnStart} (i32.shl (local.get $m) (i32.const 2))))
                        (i32.store offset=${L.stackMask} (i32.shl (local.get $sp) (i32.const 2))
                          (i32.load offset=${L.ns} (i32.shl (local.get $m) (i32.const 3))))
                        (br $walk))))
                ;; high when the top code is stored charge, pull-up or power
                (local.set $nv (i32.and (i32.shr_u (i32.const ${RANK_HIGH}) (local.get $rank)) (i32.const 1)))
                ;; nothing to do when every member already has that level ($vsum: members high)
                (br_if $nextEntry (i32.eq (local.get $vsum) (i32.mul (local.get $nv) (local.get $gcount))))))
            ;; apply the level in walk order
            (local.set $k (i32.const 0))
            (loop $apply
              (block $nextMember
                (local.set $n (i32.load offset=${L.group} (i32.shl (local.get $k) (i32.const 2))))
                (br_if $nextMember (i32.eq (i32.load8_u offset=${L.value} (local.get $n)) (local.get $nv)))
${changeOf(noting)})
              (br_if $apply (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (local.get $gcount)))))
          (br_if $entries (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 4))) (local.get $iend))))
        (local.set $count (i32.shr_u (i32.sub (local.get $np) (local.get $next)) (i32.const 2)))
        (local.set $tmp (local.get $cur))
        (local.set $cur (local.get $next))
        (local.set $next (local.get $tmp))
        (local.set $pass (i32.add (local.get $pass) (i32.const 1)))
        (br $passes)))
    (i32.store offset=${reg(REG_GEN)} (i32.const 0) (local.get $gen))
    (i32.store offset=${reg(REG_GGEN)} (i32.const 0) (local.get $ggen))${noting ? notingStores : ""})`
  return `
(module
  (import "env" "memory" (memory ${L.pages}))
  ;; toggle(addr, count): flips each of the \`count\` node ids at byte address \`addr\`, in order,
  ;; and applies its effect list for its new level (a recorded replay's net flips)
  (func $toggle (export "toggle") (param $addr i32) (param $count i32)
    (local $n i32) (local $nv i32) (local $e i32) (local $end i32) (local $x i32) (local $sgn i32)
    (block $done
      (loop $nodes
        (br_if $done (i32.eqz (local.get $count)))
        (local.set $n (i32.load (local.get $addr)))
        (local.set $nv (i32.xor (i32.load8_u offset=${L.value} (local.get $n)) (i32.const 1)))
        (i32.store8 offset=${L.value} (local.get $n) (local.get $nv))
        ${flipBit}
        ${effects}
        (local.set $addr (i32.add (local.get $addr) (i32.const 4)))
        (local.set $count (i32.sub (local.get $count) (i32.const 1)))
        (br $nodes))))
  ${settle("settle", false)}
  ${settle("settleNoted", true)})`
}

/** One chip's kernel: its memory (state, scratch, tables) and the settle function. */
export interface Kernel {
  readonly layout: KernelLayout
  readonly memory: WasmMemory
  /** Settles (see source); `settle` ignores `flags`, `settleNoted` notes each change as they ask. */
  readonly settle: (count: number, cur: number, next: number, gen: number, ggen: number, flags: number) => void
  readonly settleNoted: (count: number, cur: number, next: number, gen: number, ggen: number, flags: number) => void
  /** Flips `count` node ids stored from byte address `addr` and applies their effect lists. */
  readonly toggle: (addr: number, count: number) => void
}

const modules = new WeakMap<KernelTables, { layout: KernelLayout; maxPasses: number; module: object }>()

/**
 * A kernel for one chip over tables `t`, settling in at most `maxPasses` passes: the module is
 * assembled and compiled once per tables (a few milliseconds), the memory is the chip's own,
 * with the tables copied in.
 */
export const makeKernel = (t: KernelTables, maxPasses: number): Kernel => {
  let compiled = modules.get(t)
  if (compiled === undefined || compiled.maxPasses !== maxPasses) {
    const layout = layoutOf(t)
    compiled = { layout, maxPasses, module: new wasm.Module(assemble(source(t, layout, maxPasses))) }
    modules.set(t, compiled)
  }
  const L = compiled.layout
  const memory = new wasm.Memory({ initial: L.pages, maximum: L.pages })
  const buf = memory.buffer
  new Int32Array(buf, L.nnStart, t.nnStart.length).set(t.nnStart)
  new Int32Array(buf, L.nnOther, t.nnOther.length).set(t.nnOther)
  new Uint8Array(buf, L.rankCode, RANK_CODE.length).set(RANK_CODE)
  new Int32Array(buf, L.effStart, t.effStart.length).set(t.effStart.map((k) => L.eff + 8 * k))
  const eff = new Int32Array(buf, L.eff, 2 * t.effIdx.length)
  for (let k = 0; k < t.effIdx.length; k++) {
    eff[2 * k] = L.ns + 4 * t.effIdx[k]!
    eff[2 * k + 1] = t.effAmt[k]!
  }
  new Int32Array(buf, L.depStart, t.depStart.length).set(t.depStart.map((k) => L.dep + 4 * k))
  new Int32Array(buf, L.dep, t.dep.length).set(t.dep)
  const instance = new wasm.Instance(compiled.module, { env: { memory } })
  const zv = new Int32Array(buf, L.zv, t.nodeCount)
  for (let k = 0; k < zv.length; k++) zv[k] = t.zValue[k]! ^ t.zGate[k]!
  return {
    layout: L,
    memory,
    settle: instance.exports.settle as Kernel["settle"],
    settleNoted: instance.exports.settleNoted as Kernel["settleNoted"],
    toggle: instance.exports.toggle as Kernel["toggle"]
  }
}
