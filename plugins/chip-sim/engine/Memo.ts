/**
 * The chip's memo: settles and spans of half-cycles recorded once and replayed when the chip is
 * again in the same state, stored under a fingerprint and confirmed against the full key.
 *
 * Why a replay is exact: while the memo is on, the chip's state is consistent (every transistor
 * conducts exactly when its gate is high) and every node but the driven pins keeps the pull-up
 * `segdefs.js` gives it and no pull-down (ChipMemo.memoUsable). The whole electrical state (levels,
 * pulls, conduction) is then a function of the node levels and the driven pins' pulls, which is
 * what a key holds, bit for bit, with the event that starts the settle (which node list it
 * settles from). Settling is deterministic in that state and event, so equal keys mean the same
 * computation and the same net node flips; a span additionally checks every byte it read from
 * memory. The fingerprint (Zobrist hash, Tables.ts) only picks the one candidate to compare:
 * a collision costs a miss, never a wrong result.
 */

/** Key layout: the packed node levels (Chip's `vbits`), then the driven pins' pulls, then the event. */
export const KEY_PULLS = 0
export const KEY_EVENT = 1

/** Event word of a span key (settle events are 0 for the data bus, node + 1 for a pin). */
export const SPAN_EVENT = 0xffffffff

/**
 * A recorded span of half-cycles (Chip.runHalfCycles): its full key at the start, the bus events
 * in order as triples (kind 0 read, 1 write, 2 opcode-fetch row; address; byte), the net node
 * flips, the driven pins' pulls at the end and the fingerprint after it.
 */
export interface SpanRecord {
  readonly key: Uint32Array
  readonly events: Int32Array
  readonly nodes: Uint16Array
  readonly pulls: number
  readonly h1: number
}

/** A copy of the current key: `levels` (packed, one bit per node), `pulls`, `event`. */
export const makeKey = (levels: Uint32Array, pulls: number, event: number): Uint32Array => {
  const n = levels.length
  const key = new Uint32Array(n + 2)
  key.set(levels)
  key[n + KEY_PULLS] = pulls
  key[n + KEY_EVENT] = event
  return key
}

/** Whether `key` is exactly (`levels`, `pulls`, `event`), every word compared. */
export const keyEquals = (key: Uint32Array, levels: Uint32Array, pulls: number, event: number): boolean => {
  const n = levels.length
  if (key[n + KEY_EVENT] !== event >>> 0 || key[n + KEY_PULLS] !== pulls >>> 0) return false
  for (let i = 0; i < n; i++) if (key[i] !== levels[i]) return false
  return true
}

/**
 * A bounded map from fingerprint to record, one record per fingerprint, in two generations:
 * when the current one holds `max` records it becomes the previous one (the one before is
 * dropped), and a record found in the previous generation moves back. Lookups confirm the key.
 */
export class MemoTable<R extends { readonly key: Uint32Array }> {
  private current = new Map<number, R>()
  private previous = new Map<number, R>()

  constructor(readonly max: number) {}

  /** The record under `hash` whose key is exactly (`levels`, `pulls`, `event`), if any. */
  find(hash: number, levels: Uint32Array, pulls: number, event: number): R | undefined {
    let r = this.current.get(hash)
    if (r === undefined) {
      r = this.previous.get(hash)
      if (r === undefined || !keyEquals(r.key, levels, pulls, event)) return undefined
      this.set(hash, r)
      return r
    }
    return keyEquals(r.key, levels, pulls, event) ? r : undefined
  }

  /** Whether any record (of any key) is stored under `hash`. */
  has(hash: number): boolean {
    return this.current.has(hash) || this.previous.has(hash)
  }

  /** Stores `r` under `hash`, replacing what was there. */
  set(hash: number, r: R): void {
    if (this.current.size >= this.max) {
      this.previous = this.current
      this.current = new Map()
    }
    this.current.set(hash, r)
  }

  clear(): void {
    this.current.clear()
    this.previous.clear()
  }
}

/** Words of a settle record ahead of its key: the fingerprint after it, its flip count. */
const REC_H1 = 0
const REC_FLIPS = 1
const REC_HEAD = 2

/**
 * One generation of SettleMemo: records stored one after another in `arena`, found through an
 * open-addressed table of fingerprints (`slotHash`) and record offsets plus one (`slotAt`, 0:
 * empty).
 */
interface SettleGeneration {
  readonly slotHash: Int32Array
  readonly slotAt: Int32Array
  readonly arena: Int32Array
  used: number
  count: number
}

/**
 * The recorded settles of a chip: for each, its full key (packed node levels, driven pins'
 * pulls, event), the nodes whose level it flipped (net: each node flipped an odd number of
 * times, once) and the fingerprint after it. Transistor flips are not stored: in a consistent
 * state they follow the flipped nodes' gates, so a replay re-derives them.
 *
 * Stored flat in two generations of preallocated words (no object per record, so nothing for
 * the garbage collector to trace or promote; 660 bytes a record on average over the functional
 * test): when the current generation holds `max` records, or has no room for one more, it
 * becomes the previous one and the one before is emptied for reuse. A record found in the previous
 * generation is copied back into the current one while there is room. One record per
 * fingerprint and generation; a lookup compares the full key word for word, so a fingerprint
 * collision is a miss, never a wrong replay.
 *
 * Recording is two calls around the settle: `begin` copies the key of the state before it,
 * the caller writes the flips at `flipsAt(at)`, then `commit` files the record.
 */
export class SettleMemo {
  /** Words of a key: the packed levels, then KEY_PULLS and KEY_EVENT. */
  private readonly keyWords: number
  private readonly mask: number
  private readonly slots: number
  /** Words of a generation's arena. */
  private readonly words: number
  /** Both generations until the first record (see the constructor). */
  private static readonly empty: SettleGeneration = { slotHash: new Int32Array(0), slotAt: new Int32Array(0), arena: new Int32Array(0), used: 0, count: 0 }
  private current: SettleGeneration
  private previous: SettleGeneration
  /** The arena of the record the last successful find returned (current or previous generation). */
  foundArena: Int32Array

  /**
   * @param levelWords words of packed node levels (nodes / 32, rounded up)
   * @param nodeCount the most flips one record can hold
   * @param max records per generation
   */
  constructor(readonly levelWords: number, readonly nodeCount: number, readonly max: number) {
    this.keyWords = levelWords + 2
    let slots = 1
    while (slots < 2 * max) slots *= 2
    this.mask = slots - 1
    // Room for `max` records of the key and, on average, a tenth of the nodes flipped (the
    // functional test's records average 165 words: a 58-word key and head, 107 flips); a
    // generation that runs out of words rotates early, and begin always leaves room for one
    // record flipping every node. Allocated at the first record: a chip with the memo off
    // never pays for it (about 7.7 MB a generation on the 6502: 8,192 records of 231 words).
    this.words = max * (REC_HEAD + this.keyWords + Math.ceil(nodeCount / 10)) + REC_HEAD + this.keyWords + nodeCount
    this.slots = slots
    this.current = SettleMemo.empty
    this.previous = SettleMemo.empty
    this.foundArena = this.current.arena
  }

  private generation(): SettleGeneration {
    return { slotHash: new Int32Array(this.slots), slotAt: new Int32Array(this.slots), arena: new Int32Array(this.words), used: 0, count: 0 }
  }

  /** Fingerprint after the settle of the record at `at` of `arena`. */
  static h1(arena: Int32Array, at: number): number {
    return arena[at + REC_H1]!
  }

  /** Number of node flips of the record at `at` of `arena`. */
  static flipCount(arena: Int32Array, at: number): number {
    return arena[at + REC_FLIPS]!
  }

  /** Offset of the first node flip of the record at `at` (in the arena holding it). */
  flipsAt(at: number): number {
    return at + REC_HEAD + this.keyWords
  }

  /** The current generation's arena, where begin's record is written. */
  arena(): Int32Array {
    return this.current.arena
  }

  /**
   * Offset of the record under `hash` whose key is exactly (`levels`, `pulls`, `event`), or -1;
   * its arena is then `foundArena`. A record of the previous generation is copied into the
   * current one when that has room without rotating (rotating would empty the generation the
   * record is in); otherwise it is replayed from where it is.
   */
  find(hash: number, levels: Uint32Array, pulls: number, event: number): number {
    const cur = this.current
    if (cur.count === 0 && this.previous.count === 0) return -1
    const at = this.lookup(cur, hash, levels, pulls, event)
    if (at >= 0) {
      this.foundArena = cur.arena
      return at
    }
    const prev = this.previous
    const old = this.lookup(prev, hash, levels, pulls, event)
    if (old < 0) return -1
    const words = REC_HEAD + this.keyWords + prev.arena[old + REC_FLIPS]!
    if (!this.hasRoom(cur, words)) {
      this.foundArena = prev.arena
      return old
    }
    const moved = cur.used
    cur.arena.set(prev.arena.subarray(old, old + words), moved)
    cur.used += words
    this.file(cur, hash, moved)
    this.foundArena = cur.arena
    return moved
  }

  /**
   * Starts a record of the present key (`levels`, `pulls`, `event`, the state before the settle)
   * in the current generation, rotating first when it is full; returns its offset. The record
   * is not found until committed.
   */
  begin(levels: Uint32Array, pulls: number, event: number): number {
    if (this.current === SettleMemo.empty) {
      this.current = this.generation()
      this.previous = this.generation()
    }
    let cur = this.current
    if (!this.hasRoom(cur, 0)) {
      const emptied = this.previous
      SettleMemo.vacate(emptied)
      this.previous = cur
      this.current = cur = emptied
    }
    const at = cur.used
    const a = cur.arena
    const k = at + REC_HEAD
    a.set(levels, k)
    a[k + this.levelWords + KEY_PULLS] = pulls
    a[k + this.levelWords + KEY_EVENT] = event
    return at
  }

  /** Files the record begun at `at` under `hash`: `flips` node ids written at flipsAt(at), and the fingerprint after. */
  commit(hash: number, at: number, flips: number, h1: number): void {
    const cur = this.current
    cur.arena[at + REC_H1] = h1
    cur.arena[at + REC_FLIPS] = flips
    cur.used = at + REC_HEAD + this.keyWords + flips
    this.file(cur, hash, at)
  }

  /** Empties both generations. */
  clear(): void {
    // (before the first record both are the shared empty generation, which stays as it is)
    if (this.current === SettleMemo.empty) return
    SettleMemo.vacate(this.current)
    SettleMemo.vacate(this.previous)
  }

  /**
   * Whether generation `g` takes `words` more words and still has room for one more record of
   * any size (begin's guarantee: a settle may flip every node) without rotating.
   */
  private hasRoom(g: SettleGeneration, words: number): boolean {
    return g.count < this.max && g.used + words + REC_HEAD + this.keyWords + this.nodeCount <= g.arena.length
  }

  /** Empties generation `g` for reuse (its arena is overwritten, not cleared). */
  private static vacate(g: SettleGeneration): void {
    g.slotAt.fill(0)
    g.used = 0
    g.count = 0
  }

  /** Puts record `at` under `hash` in generation `g`, replacing one under the same hash. */
  private file(g: SettleGeneration, hash: number, at: number): void {
    let i = hash & this.mask
    while (g.slotAt[i] !== 0 && g.slotHash[i] !== hash) i = (i + 1) & this.mask
    if (g.slotAt[i] === 0) g.count++
    g.slotHash[i] = hash
    g.slotAt[i] = at + 1
  }

  private lookup(g: SettleGeneration, hash: number, levels: Uint32Array, pulls: number, event: number): number {
    let i = hash & this.mask
    for (;;) {
      const slot = g.slotAt[i]!
      if (slot === 0) return -1
      if (g.slotHash[i] === hash) {
        const at = slot - 1
        const a = g.arena
        const k = at + REC_HEAD
        const n = this.levelWords
        // Int32 words against the Uint32 levels: compared as int32 (`| 0`)
        if (a[k + n + KEY_EVENT] !== (event | 0) || a[k + n + KEY_PULLS] !== (pulls | 0)) return -1
        for (let w = 0; w < n; w++) if (a[k + w] !== (levels[w]! | 0)) return -1
        return at
      }
      i = (i + 1) & this.mask
    }
  }
}
