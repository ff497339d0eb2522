// Lookups by key (an id, say) asked for during one turn of the event loop, answered together by one query at
// its end. On
// PostgreSQL every query is a round trip that wakes a database backend, most of a small request's cost; a busy
// server asks for several rows per turn, and one query by all their ids answers them for the price of one.
// An idle server waits for nothing: the turn ends right after the request that asked.

interface Waiter<Row> {
  resolve(row: Row | undefined): void
  reject(error: unknown): void
}

/**
 * `maxBatch` is the most keys one load is given; a turn that asks for more makes several loads. `keyOf` says
 * which key a loaded row answers (its `id` by default).
 */
export function batchedLookup<Row>(
  load: (ids: string[]) => Promise<Row[]>,
  maxBatch: number,
  keyOf: (row: Row) => string = (row) => (row as { id: string }).id,
): (id: string) => Promise<Row | undefined> {
  let pending: Map<string, Waiter<Row>[]> | undefined

  const answer = async (batch: Map<string, Waiter<Row>[]>, ids: string[]) => {
    try {
      const rows = new Map((await load(ids)).map((row) => [keyOf(row), row]))
      for (const id of ids) for (const waiter of batch.get(id) ?? []) waiter.resolve(rows.get(id))
    } catch (error) {
      for (const id of ids) for (const waiter of batch.get(id) ?? []) waiter.reject(error)
    }
  }

  const flush = (batch: Map<string, Waiter<Row>[]>) => {
    pending = undefined
    const ids = [...batch.keys()]
    for (let i = 0; i < ids.length; i += maxBatch) void answer(batch, ids.slice(i, i + maxBatch))
  }

  return (id) =>
    new Promise<Row | undefined>((resolve, reject) => {
      if (!pending) {
        const batch = new Map<string, Waiter<Row>[]>()
        pending = batch
        setImmediate(flush, batch)
      }
      const waiters = pending.get(id)
      if (waiters) waiters.push({ resolve, reject })
      else pending.set(id, [{ resolve, reject }])
    })
}
