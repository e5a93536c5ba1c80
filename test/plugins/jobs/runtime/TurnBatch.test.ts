import { describe, expect, it } from "vitest"
import { TurnBatch } from "../../../../plugins/jobs/runtime/TurnBatch.ts"

describe("TurnBatch", () => {
  it("sends the items of one turn together, at most `max` at a time, each answered by position", async () => {
    const sent: Array<ReadonlyArray<number>> = []
    const b = new TurnBatch<number, number>(3, async (items) => {
      sent.push(items)
      return items.map((x) => x * 10)
    })
    const answers = await Promise.all([1, 2, 3, 4, 5].map((x) => b.push(x)))
    expect(answers).toEqual([10, 20, 30, 40, 50])
    expect(sent).toEqual([[1, 2, 3], [4, 5]])
    // A later turn is a new batch; `flush` sends at once.
    const late = b.push(6)
    b.flush()
    expect(sent).toHaveLength(3)
    expect(await late).toBe(60)
  })

  it("a failed send rejects every item of its batch and no other", async () => {
    const b = new TurnBatch<string, string>(10, async (items) => {
      if (items.includes("bad")) throw new Error("refused")
      return items
    })
    const first = await Promise.allSettled([b.push("a"), b.push("bad")])
    expect(first.map((r) => r.status)).toEqual(["rejected", "rejected"])
    expect(await b.push("c")).toBe("c")
  })
})
