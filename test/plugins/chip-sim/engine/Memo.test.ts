import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { SettleMemo } from "../../../../plugins/chip-sim/engine/Memo.ts"

/** Records `flips` for the key (levels, pulls, event) under `hash`, as ChipMemo does around a settle. */
const record = (memo: SettleMemo, hash: number, levels: Uint32Array, pulls: number, event: number, flips: Array<number>, h1: number) => {
  const at = memo.begin(levels, pulls, event)
  const arena = memo.arena()
  let w = memo.flipsAt(at)
  for (const n of flips) arena[w++] = n
  memo.commit(hash, at, flips.length, h1)
}

const replay = (memo: SettleMemo, hash: number, levels: Uint32Array, pulls: number, event: number) => {
  const at = memo.find(hash, levels, pulls, event)
  if (at < 0) return undefined
  const a = memo.foundArena
  const from = memo.flipsAt(at)
  return { flips: Array.from(a.subarray(from, from + SettleMemo.flipCount(a, at))), h1: SettleMemo.h1(a, at) }
}

describe("SettleMemo", () => {
  it("replays only the record of the exact key: a fingerprint shared by other keys is a miss, never their flips", () => {
    // Keys of 2 level words; fingerprints folded to 3 values so most keys collide.
    const op = fc.record({ key: fc.tuple(fc.integer({ min: 0, max: 7 }), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 2 })), write: fc.boolean() })
    fc.assert(
      fc.property(fc.array(op, { maxLength: 400 }), fc.integer({ min: 1, max: 6 }), (ops, max) => {
        const memo = new SettleMemo(2, 40, max)
        const truth = new Map<string, { flips: Array<number>; h1: number }>()
        for (const { key: [lo, pulls, event], write } of ops) {
          const levels = Uint32Array.of(lo, lo * 3 + (lo > 4 ? 0x80000000 : 0))
          const name = `${lo}/${pulls}/${event}`
          const hash = (lo + pulls + event) % 3
          // A settle is a function of its key: the same key always records the same flips.
          const flips = Array.from({ length: (lo * 7 + pulls + event) % 40 }, (_, i) => (i * 13 + lo + event) % 40)
          const h1 = lo * 100 + pulls * 10 + event
          const got = replay(memo, hash, levels, pulls, event)
          if (got !== undefined) expect(got).toEqual(truth.get(name))
          else if (write) {
            record(memo, hash, levels, pulls, event, flips, h1)
            truth.set(name, { flips, h1 })
            // just committed: found at once
            expect(replay(memo, hash, levels, pulls, event)).toEqual({ flips, h1 })
          }
        }
      }),
      { numRuns: 300 }
    )
  })

  it("keeps two generations: a record survives one rotation (and moves back when found), not two", () => {
    const memo = new SettleMemo(1, 8, 2)
    const key = (k: number) => Uint32Array.of(k)
    record(memo, 1, key(1), 0, 0, [5], 11)
    record(memo, 2, key(2), 0, 0, [6], 12)
    // a third record rotates: 1 and 2 are now the previous generation
    record(memo, 3, key(3), 0, 0, [7], 13)
    expect(replay(memo, 1, key(1), 0, 0)).toEqual({ flips: [5], h1: 11 }) // moved back into the current one
    record(memo, 4, key(4), 0, 0, [], 14) // rotates again: 2 is dropped, 1 and 3 survive
    expect(replay(memo, 2, key(2), 0, 0)).toBeUndefined()
    expect(replay(memo, 1, key(1), 0, 0)).toEqual({ flips: [5], h1: 11 })
    expect(replay(memo, 3, key(3), 0, 0)).toEqual({ flips: [7], h1: 13 })
    expect(replay(memo, 4, key(4), 0, 0)).toEqual({ flips: [], h1: 14 })
    memo.clear()
    expect(replay(memo, 4, key(4), 0, 0)).toBeUndefined()
  })
})
