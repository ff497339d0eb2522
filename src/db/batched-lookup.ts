// Lookups by id asked for during one turn of the event loop, answered together by one query at its end. On
// PostgreSQL every query is a round trip that wakes a database backend, most of a small request's cost; a busy
// server asks for several rows per turn, and one `id = any($1)` query answers them all for the price of one.
// An idle server waits for nothing: the turn ends right after the request that asked.

/** The most ids one query carries; a turn that asks for more makes several queries. */
const MAX_BATCH = 500

interface Waiter<Row> {
  resolve(row: Row | undefined): void
  reject(error: unknown): void
}

export function batchedLookup<Row extends { id: string }>(
  load: (ids: string[]) => Promise<Row[]>,
): (id: string) => Promise<Row | undefined> {
  let pending: Map<string, Waiter<Row>[]> | undefined

  const answer = async (batch: Map<string, Waiter<Row>[]>, ids: string[]) => {
    try {
      const rows = new Map((await load(ids)).map((row) => [row.id, row]))
      for (const id of ids) for (const waiter of batch.get(id) ?? []) waiter.resolve(rows.get(id))
    } catch (error) {
      for (const id of ids) for (const waiter of batch.get(id) ?? []) waiter.reject(error)
    }
  }

  const flush = (batch: Map<string, Waiter<Row>[]>) => {
    pending = undefined
    const ids = [...batch.keys()]
    for (let i = 0; i < ids.length; i += MAX_BATCH) void answer(batch, ids.slice(i, i + MAX_BATCH))
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
