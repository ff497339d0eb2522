// Rows looked up by key and kept in memory per process while no change to them can have happened: on
// PostgreSQL a read is a round trip that costs more than the rest of a small request, and the rows read on
// every request (API keys, files) change far less often than they are read. Each entry is stamped with
// `Db.changeEpoch` of the rows it came from, taken before the read, so a change committed by any process is
// never served from memory once its epoch has moved (see epoch-cache.ts for the bounds). Only rows that exist
// are kept; a miss is read again next time.
import type { Db, WatchedRows } from '../database.ts'
import { EpochCache } from './epoch-cache.ts'

export interface CachedLookupOptions<Row> {
  /** The rows the cached ones belong to; a change to any of them (in the entry's scope) drops the entry. */
  watched: WatchedRows
  /** Entries kept at most; 0 keeps none and reads every time. */
  maxEntries: number
  /** However quiet the epoch, an entry is read again after this long. */
  maxAgeMs: number
  /** Reads the row of `key` (within `scope`, for scoped rows); undefined when there is none. */
  read(key: string, scope: string | undefined): Promise<Row | undefined>
}

export interface CachedLookup<Row> {
  /** The row of `key` within `scope` (an account id, for rows watched per account). */
  get(key: string, scope?: string): Promise<Row | undefined>
  /** Drops this process's entries that pass `test`; other processes learn of the change through the epoch. */
  forget(test: (row: Row) => boolean): void
}

export function cachedLookup<Row>(db: Db, options: CachedLookupOptions<Row>): CachedLookup<Row> {
  const { watched, read } = options
  if (options.maxEntries === 0) return { get: read, forget: () => {} }
  const cache = new EpochCache<Row>({ maxEntries: options.maxEntries, maxAgeMs: options.maxAgeMs })
  return {
    async get(key, scope) {
      // Keyed by the scope too: asking for another scope's row can neither find nor disturb its entry.
      const entryKey = scope === undefined ? key : `${scope}/${key}`
      const epoch = db.changeEpoch(watched, scope)
      const now = Date.now()
      const cached = cache.get(entryKey, epoch, now)
      if (cached !== undefined) return cached
      const row = await read(key, scope)
      if (row !== undefined) cache.set(entryKey, row, epoch, now)
      return row
    },
    forget: (test) => cache.deleteWhere(test),
  }
}
