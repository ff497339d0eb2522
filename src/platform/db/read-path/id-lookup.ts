// A row by its id, read by a statement compiled once. On PostgreSQL the ids asked for in one turn of the
// event loop are read together (batched-lookup.ts), by statements prepared for a few id counts,
// `id in ($1, ..., $n)`: PostgreSQL reuses a prepared statement's plan only when that plan costs no more than
// one made for the actual values, which `id = any($1)` with its array of unknown length never does, and
// planning it for every execution cost twice the query itself. SQLite reads in-process, with no round trip to
// save, one id at a time. Where the ids come as a list (a search's page of results), `idsLookup` reads them
// with one statement on either engine: a statement per row would make a page cost a statement per file.
import type { Compilable, CompiledQuery } from 'kysely'
import type { Db } from '../database.ts'
import { batchedLookup } from './batched-lookup.ts'
import { compileOnce } from './prepared.ts'

/** The id counts of the PostgreSQL statements; a batch is padded up to the next. */
const LOOKUP_SIZES = [1, 2, 4, 8, 16, 32]
const MAX_BATCH = LOOKUP_SIZES.at(-1) as number
/** The id counts of `idsLookup`'s statements: a page of 50 results is one. */
const LIST_SIZES = [...LOOKUP_SIZES, 64]
const MAX_LIST = LIST_SIZES.at(-1) as number

/** `count` ids padded up to `size` with the last: a repeated value in an IN list matches its row once. */
const padded = (ids: string[], size: number) =>
  Array.from({ length: size }, (_, i) => ids[Math.min(i, ids.length - 1)] as string)

/** The statement of each id count, compiled once. */
function statementsOf<Row>(select: (ids: string[]) => Compilable<Row>) {
  const statements = new Map<number, (...ids: string[]) => CompiledQuery<Row>>()
  return (size: number) => {
    let bind = statements.get(size)
    if (!bind) {
      bind = compileOnce(size, (...ids: string[]) => select(ids))
      statements.set(size, bind)
    }
    return bind
  }
}

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
  const statementFor = statementsOf(select)
  if (db.engine === 'sqlite') {
    const one = statementFor(1)
    return async (id) => (await db.read<Row>(one(id), `${name}_1`))[0]
  }
  return batchedLookup(
    async (ids) => {
      const size = LOOKUP_SIZES.find((n) => n >= ids.length) ?? MAX_BATCH
      return db.read<Row>(statementFor(size)(...padded(ids, size)), `${name}_${size}`)
    },
    MAX_BATCH,
    keyOf,
  )
}

/**
 * The rows of a list of ids, in no particular order, read by one statement per 64 ids on either engine, each
 * compiled once per id count (1, 2, 4 ... 64) under `idLookup`'s rules for `select`. An id without a row is
 * left out. `name` must differ from any `idLookup`'s: the statements are `${name}_${count}`.
 */
export function idsLookup<Row>(
  db: Db,
  name: string,
  select: (ids: string[]) => Compilable<Row>,
): (ids: string[]) => Promise<Row[]> {
  const statementFor = statementsOf(select)
  return async (ids) => {
    const unique = [...new Set(ids)]
    const reads: Promise<Row[]>[] = []
    for (let start = 0; start < unique.length; start += MAX_LIST) {
      const batch = unique.slice(start, start + MAX_LIST)
      const size = LIST_SIZES.find((n) => n >= batch.length) ?? MAX_LIST
      reads.push(db.read<Row>(statementFor(size)(...padded(batch, size)), `${name}_${size}`))
    }
    return (await Promise.all(reads)).flat()
  }
}
