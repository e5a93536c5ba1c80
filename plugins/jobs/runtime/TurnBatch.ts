/**
 * Coalescing of the calls made during one turn of the event loop: items pushed in the same turn
 * are sent together when the turn ends (`setImmediate`), as soon as `max` are waiting, or on
 * `flush`. The redis backend uses it for record writes (one script call for a turn's writes) and
 * for enqueues (one BullMQ job for a turn's submissions): a burst of requests handled in one turn
 * then costs one Redis command instead of one each.
 *
 * Not Effect's `RequestResolver`: it batches the requests of one fiber's `Effect.all`/`forEach`
 * with batching, while submissions arrive as independent HTTP handlers. `npm run bench -- jobs`
 * counts it: 1000 independent submissions in one turn make 1000 sends through a batched
 * resolver (as `runPromise` calls or as forked fibers) and 1 through this.
 */

/** A batch of items waiting for the end of the turn, with the settlers of their `push` promises. */
interface Pending<I, O> {
  readonly items: Array<I>
  readonly settle: Array<{ resolve: (o: O) => void; reject: (e: unknown) => void }>
}

/** See the module comment. */
export class TurnBatch<I, O> {
  private pending: Pending<I, O> | undefined

  /**
   * `send` receives the items in push order and resolves one answer per item (by position); a
   * rejection rejects every item of the batch.
   */
  constructor(private readonly max: number, private readonly send: (items: ReadonlyArray<I>) => Promise<ReadonlyArray<O>>) {}

  /** Adds `item` to this turn's batch; resolves with its answer once the batch was sent. */
  push(item: I): Promise<O> {
    let b = this.pending
    if (!b) {
      const fresh: Pending<I, O> = { items: [], settle: [] }
      b = this.pending = fresh
      setImmediate(() => {
        if (this.pending === fresh) this.flush()
      })
    }
    b.items.push(item)
    const answer = new Promise<O>((resolve, reject) => b.settle.push({ resolve, reject }))
    if (b.items.length >= this.max) this.flush()
    return answer
  }

  /** Sends the waiting items now (nothing when none wait). */
  flush(): void {
    const b = this.pending
    if (!b) return
    this.pending = undefined
    this.send(b.items).then(
      (answers) => b.settle.forEach((s, i) => s.resolve(answers[i] as O)),
      (e) => b.settle.forEach((s) => s.reject(e))
    )
  }
}
