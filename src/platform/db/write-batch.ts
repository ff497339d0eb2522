// Group commit for small writes that many requests make at once, such as counting a share link's views: the
// writes of requests that arrive together are committed by one call of `commit` (one transaction), and each
// request waits for that commit before it answers, so an acknowledged write is never lost to a crash and
// concurrent writes are never lost to each other. A commit costs about the same for one write as for a
// hundred (on SQLite with synchronous=FULL, its fsync is most of it), so batching is what lets such writes
// keep up with reads.
//
// Writes added during one turn of the event loop go together; while a commit is under way, the writes that
// arrive meanwhile wait and go together in the next, so under load the batches grow with the load instead of
// queueing one commit per request.

export interface WriteBatchOptions {
  /** Writes in one commit at most; more wait for the next. */
  maxItems: number
}

export class WriteBatch<Item, Outcome> {
  readonly #commit: (items: Item[]) => Promise<Outcome[]>
  readonly #maxItems: number
  #pending: { item: Item; resolve(outcome: Outcome): void; reject(error: unknown): void }[] = []
  #scheduled = false
  #committing = false

  /** `commit` writes all the items in one transaction and returns one outcome per item, in order. */
  constructor(commit: (items: Item[]) => Promise<Outcome[]>, options: WriteBatchOptions) {
    this.#commit = commit
    this.#maxItems = options.maxItems
  }

  /** Resolves with the item's outcome once the commit that holds it has succeeded; rejects if it failed. */
  add(item: Item): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ item, resolve, reject })
      this.#schedule()
    })
  }

  #schedule(): void {
    if (this.#scheduled || this.#committing) return
    this.#scheduled = true
    // At the end of this turn, once every request read from the sockets in it has added its write.
    setImmediate(() => {
      this.#scheduled = false
      void this.#commitNext()
    })
  }

  async #commitNext(): Promise<void> {
    const batch = this.#pending.splice(0, this.#maxItems)
    if (batch.length === 0) return
    this.#committing = true
    try {
      const outcomes = await this.#commit(batch.map((entry) => entry.item))
      for (const [i, entry] of batch.entries()) entry.resolve(outcomes[i] as Outcome)
    } catch (error) {
      for (const entry of batch) entry.reject(error)
    } finally {
      this.#committing = false
      if (this.#pending.length > 0) this.#schedule()
    }
  }
}
