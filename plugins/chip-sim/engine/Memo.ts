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
 * A recorded settle: its full key, the nodes whose level it flipped (net: each node flipped an
 * odd number of times, once), and the fingerprint after it. Transistor flips are not stored:
 * in a consistent state they follow the flipped nodes' gates, so a replay re-derives them.
 */
export interface SettleRecord {
  readonly key: Uint32Array
  readonly nodes: Uint16Array
  readonly h1: number
}

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
