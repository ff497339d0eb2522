// Keyset pagination over (created_at desc, id desc). The cursor names the last row of a page, so pages stay
// correct while rows are added or removed: nothing repeats and nothing is skipped.
import { type ExpressionBuilder, type SelectQueryBuilder, sql } from 'kysely'
import { invalid } from '../errors.ts'

export interface Page<T> {
  items: T[]
  nextCursor: string | null
}

export interface Cursor {
  createdAt: number
  id: string
}

const CURSOR = /^(\d{1,15})\.([A-Za-z0-9_]{1,100})$/

export function encodeCursor(cursor: Cursor): string {
  return Buffer.from(`${cursor.createdAt}.${cursor.id}`).toString('base64url')
}

export function decodeCursor(raw: string): Cursor {
  const match = CURSOR.exec(Buffer.from(raw, 'base64url').toString('utf8'))
  if (!match?.[1] || !match[2]) {
    throw invalid(
      'The query parameter "cursor" is malformed.',
      'Pass `pagination.nextCursor` from the previous page unchanged.',
    )
  }
  return { createdAt: Number(match[1]), id: match[2] }
}

/** The row counts a prepared page statement fetches; see `fetchSizeFor`. */
const FETCH_SIZES = [11, 26, 51, 101]

/**
 * The rows to fetch for a page of `limit` items when the statement is prepared once per fetch size: the
 * limit plus one, rounded up to one of a few sizes. PostgreSQL reuses a prepared statement's plan only when
 * its LIMIT is a constant (with `limit $n` it plans every execution afresh, which cost as much as running
 * the query), and the few sizes bound how many statements each connection keeps. `toPage` trims the extra rows.
 */
export function fetchSizeFor(limit: number): number {
  return FETCH_SIZES.find((size) => size > limit) ?? limit + 1
}

/**
 * Adds the keyset condition (rows after `after`, if given) and order for `table` (which must have created_at and
 * id), and fetches `fetch` rows: at least the page's limit plus one, to learn whether another page follows.
 */
export function keysetAfter<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  table: string,
  after: Cursor | undefined,
  fetch: number,
): SelectQueryBuilder<DB, TB, O> {
  const q = after === undefined ? query : query.where(afterCursor<DB, TB>(table, after))
  if (!Number.isSafeInteger(fetch) || fetch < 1) throw new Error(`keyset: bad row count ${fetch}`)
  // A constant, not a parameter: see fetchSizeFor.
  return q
    .orderBy(sql.ref(`${table}.created_at`), 'desc')
    .orderBy(sql.ref(`${table}.id`), 'desc')
    .limit(sql.lit(fetch))
}

/** The condition of `keysetAfter`: the rows of `table` that come after the cursor. */
function afterCursor<DB, TB extends keyof DB>(table: string, after: Cursor) {
  const createdAt = sql.ref(`${table}.created_at`)
  const id = sql.ref(`${table}.id`)
  // The first condition alone bounds the index range on both engines; the second only trims the rows that
  // share the cursor's millisecond. Written as one OR, neither engine could seek past the earlier pages.
  return (eb: ExpressionBuilder<DB, TB>) =>
    eb.and([
      eb(createdAt, '<=', after.createdAt),
      eb.or([eb(createdAt, '<', after.createdAt), eb(id, '<', after.id)]),
    ])
}

/** Trims the extra rows fetched by `keysetAfter` and builds the next cursor from the last row kept. */
export function toPage<R extends { created_at: number; id: string }, T>(
  rows: R[],
  limit: number,
  map: (row: R) => T,
): Page<T> {
  const more = rows.length > limit
  const kept = more ? rows.slice(0, limit) : rows
  const last = kept.at(-1)
  return {
    items: kept.map(map),
    nextCursor: more && last ? encodeCursor({ createdAt: last.created_at, id: last.id }) : null,
  }
}
