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
  /**
   * Reads the rows of several keys at once (within `scope`), keyed by their key; a key without a row is
   * absent. Without it, `getMany` reads each key on its own.
   */
  readMany?(keys: string[], scope: string | undefined): Promise<Map<string, Row>>
}

export interface CachedLookup<Row> {
  /** The row of `key` within `scope` (an account id, for rows watched per account). */
  get(key: string, scope?: string): Promise<Row | undefined>
  /** The rows of `keys` within `scope`, in their order: those not in memory read together (`readMany`). */
  getMany(keys: string[], scope?: string): Promise<(Row | undefined)[]>
  /** Drops this process's entries that pass `test`; other processes learn of the change through the epoch. */
  forget(test: (row: Row) => boolean): void
  /** Drops this process's entry of `key` within `scope`, as `forget` does. */
  forgetKey(key: string, scope?: string): void
}

export function cachedLookup<Row>(db: Db, options: CachedLookupOptions<Row>): CachedLookup<Row> {
  const { watched, read } = options
  const readMany = async (keys: string[], scope: string | undefined) => {
    if (options.readMany) return options.readMany(keys, scope)
    const rows = await Promise.all(keys.map((key) => read(key, scope)))
    return new Map(keys.flatMap((key, i) => (rows[i] === undefined ? [] : [[key, rows[i] as Row]])))
  }
  if (options.maxEntries === 0) {
    return {
      get: read,
      getMany: async (keys, scope) => {
        const rows = await readMany(keys, scope)
        return keys.map((key) => rows.get(key))
      },
      forget: () => {},
      forgetKey: () => {},
    }
  }
  const cache = new EpochCache<Row>({ maxEntries: options.maxEntries, maxAgeMs: options.maxAgeMs })
  // Keyed by the scope too: asking for another scope's row can neither find nor disturb its entry.
  const entryKeyOf = (key: string, scope: string | undefined) =>
    scope === undefined ? key : `${scope}/${key}`
  return {
    async get(key, scope) {
      const entryKey = entryKeyOf(key, scope)
      const epoch = db.changeEpoch(watched, scope)
      const now = Date.now()
      const cached = cache.get(entryKey, epoch, now)
      if (cached !== undefined) return cached
      const row = await read(key, scope)
      if (row !== undefined) cache.set(entryKey, row, epoch, now)
      return row
    },
    async getMany(keys, scope) {
      const epoch = db.changeEpoch(watched, scope)
      const now = Date.now()
      const found = keys.map((key) => cache.get(entryKeyOf(key, scope), epoch, now))
      const missing = keys.filter((_, i) => found[i] === undefined)
      if (missing.length === 0) return found
      const rows = await readMany(missing, scope)
      return keys.map((key, i) => {
        if (found[i] !== undefined) return found[i]
        const row = rows.get(key)
        if (row !== undefined) cache.set(entryKeyOf(key, scope), row, epoch, now)
        return row
      })
    },
    forget: (test) => cache.deleteWhere(test),
    forgetKey: (key, scope) => cache.delete(entryKeyOf(key, scope)),
  }
}
