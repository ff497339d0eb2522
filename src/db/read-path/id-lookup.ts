// A row by its id, read by a statement compiled once. On PostgreSQL the ids asked for in one turn of the
// event loop are read together (batched-lookup.ts), by statements prepared for a few id counts,
// `id in ($1, ..., $n)`: PostgreSQL reuses a prepared statement's plan only when that plan costs no more than
// one made for the actual values, which `id = any($1)` with its array of unknown length never does, and
// planning it for every execution cost twice the query itself. SQLite reads in-process, with no round trip to
// save, one id at a time.
import type { Compilable, CompiledQuery } from 'kysely'
import type { Db } from '../database.ts'
import { batchedLookup } from './batched-lookup.ts'
import { compileOnce } from './prepared.ts'

/** The id counts of the PostgreSQL statements; a batch is padded up to the next. */
const LOOKUP_SIZES = [1, 2, 4, 8, 16, 32]
const MAX_BATCH = LOOKUP_SIZES.at(-1) as number

/**
 * `select(ids)` must read the rows whose id is among `ids` (`where('x.id', 'in', ids)`), each id used as a
 * bound value. `name` names the statements: `${name}_${count}`. `keyOf` says which id a row has, when it is
 * not its `id` (a lookup by another unique column).
 */
export function idLookup<Row>(
  db: Db,
  name: string,
  select: (ids: string[]) => Compilable<Row>,
  keyOf: (row: Row) => string = (row) => (row as { id: string }).id,
): (id: string) => Promise<Row | undefined> {
  const statements = new Map<number, (...ids: string[]) => CompiledQuery<Row>>()
  const statementFor = (size: number) => {
    let bind = statements.get(size)
    if (!bind) {
      bind = compileOnce(size, (...ids: string[]) => select(ids))
      statements.set(size, bind)
    }
    return bind
  }
  if (db.engine === 'sqlite') {
    const one = statementFor(1)
    return async (id) => (await db.read<Row>(one(id), `${name}_1`))[0]
  }
  return batchedLookup(
    async (ids) => {
      const size = LOOKUP_SIZES.find((n) => n >= ids.length) ?? MAX_BATCH
      // Padded with the last id: a repeated value in an IN list matches its row once.
      const padded = Array.from({ length: size }, (_, i) => ids[Math.min(i, ids.length - 1)] as string)
      return db.read<Row>(statementFor(size)(...padded), `${name}_${size}`)
    },
    MAX_BATCH,
    keyOf,
  )
}
