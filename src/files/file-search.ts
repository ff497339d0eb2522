// Name search over an account's files, newest first, with every request's work bounded however many files
// match and wherever among the account's files they lie.
//
// Neither engine has an index that yields the files matching a substring in time order, so a page of matches
// comes from one of two places:
// - the order index, walked newest first while each name is tested: cheap when matches are dense, but a
//   pattern whose matches are rare, or all old, would walk every file of the account (a two-letter search
//   that matched nothing took half a second of SQLite, during which the embedded server served no one else);
// - the trigram index (SQLite FTS5, PostgreSQL pg_trgm), which finds every match at once, in no useful order:
//   cheap when matches are few, but a pattern that matches a hundred thousand old names (PostgreSQL chose to
//   walk the order index for it) took from a second to twenty.
// So a search walks a few pages' worth of rows first, which settles dense patterns; then asks the trigram index
// for at most INDEX_CAP matches, which settles rare ones exactly; and only when there are more matches than
// that, all of them outside the first rows, walks on for at most WALK_ROWS rows. That last walk may end before
// it has a full page: the page is then short, or even empty, and its cursor points after the last row walked,
// so the next call goes on from there. As the API promises, only a null `nextCursor` ends the listing.
import { type RawBuilder, type SqlBool, sql, type Transaction } from 'kysely'
import type { Db } from '../db/database.ts'
import {
  afterCursor,
  type Cursor,
  decodeCursor,
  encodeCursor,
  keysetAfter,
  type Page,
  toPage,
} from '../db/pagination.ts'
import type { Database } from '../db/schema.ts'

/** The most matches a search reads from the trigram index; with more, it walks the order index. */
export const INDEX_CAP = 5_000
/** The most rows a search walks in the order index in one request. */
export const WALK_ROWS = 10_000
/** The first walk covers this many pages' worth of rows: enough for any pattern a quarter of names match. */
const FIRST_WALK_PAGES = 4

export interface SearchOptions {
  accountId: string
  /** Case-insensitive substring of the name. */
  query: string
  folderId: string | undefined
  cursor: string | undefined
  limit: number
}

export interface SearchScope {
  accountId: string
  query: string
  folderId: string | undefined
  after: Cursor | undefined
}

/** One page of the ids of the account's files whose names contain the query, newest first. */
export async function searchFileIds(db: Db, options: SearchOptions): Promise<Page<string>> {
  const { accountId, query, folderId, limit } = options
  const scope: SearchScope = {
    accountId,
    query,
    folderId,
    after: options.cursor === undefined ? undefined : decodeCursor(options.cursor),
  }
  if (!hasIndexedTrigram(db, query)) return walk(db, scope, WALK_ROWS, limit)
  const first = await walk(db, scope, FIRST_WALK_PAGES * (limit + 1), limit)
  if (first.items.length === limit || first.nextCursor === null) return first
  return (await fromTrigramIndex(db, scope, limit)) ?? walk(db, scope, WALK_ROWS, limit)
}

// The trigram indexes (SQLite FTS5 `files_name_fts`, PostgreSQL pg_trgm `files_name_trgm`) can only answer a
// query that contains a whole trigram. FTS5's trigrams are any three characters; pg_trgm's are made of letters
// and digits only, so "a-b" or "%%%" gives it nothing to look up, and it would read its whole index.
function hasIndexedTrigram(db: Db, query: string): boolean {
  return db.engine === 'postgres' ? /[\p{L}\p{N}]{3}/u.test(query) : [...query].length >= 3
}

/**
 * Walks at most `rows` of the account's files (in the folder, if given) from the cursor, newest first, and
 * returns the first `limit` that match. With fewer, the cursor is that of the last row walked, or null when
 * the walk reached the account's oldest file. One statement, so the matches and the last row walked come from
 * one snapshot.
 */
async function walk(db: Db, scope: SearchScope, rows: number, limit: number): Promise<Page<string>> {
  const found = await db.read(walkQuery(db, scope, rows, limit).compile())
  const hits = found.filter((row) => Boolean(row.hit))
  if (hits.length > limit) return toPage(hits, limit, (hit) => hit.id)
  const last = found.find((row) => Number(row.position) === rows)
  return {
    items: hits.map((hit) => hit.id),
    nextCursor: last ? encodeCursor({ createdAt: Number(last.created_at), id: last.id }) : null,
  }
}

/** The matches among the next `rows` files, at most `limit` + 1 of them, and the last row walked. */
export function walkQuery(db: Db, scope: SearchScope, rows: number, limit: number) {
  let files = db.kysely
    .selectFrom('files')
    .select([
      'files.id',
      'files.created_at',
      // SQLite answers 0 or 1.
      nameMatches(db, scope.query).$castTo<boolean | number>().as('hit'),
      sql<number>`row_number() over (order by files.created_at desc, files.id desc)`.as('position'),
    ])
    .where('files.account_id', '=', scope.accountId)
  if (scope.folderId !== undefined) files = files.where('files.folder_id', '=', scope.folderId)
  // The test of the name is a column here, not a condition, so no engine can turn the walk into a trigram
  // index scan; both stop reading as soon as the outer query has its rows.
  const walked = keysetAfter(files, 'files', scope.after, rows).as('walked')
  return db.kysely
    .selectFrom(walked)
    .select(['walked.id', 'walked.created_at', 'walked.hit', 'walked.position'])
    .where((eb) => eb.or([eb('walked.hit', '=', sql.lit(true)), eb('walked.position', '=', sql.lit(rows))]))
    .limit(sql.lit(limit + 2))
}

/**
 * The page from the trigram index, or undefined when more than INDEX_CAP files match: then sorting them all
 * would cost more than walking.
 */
async function fromTrigramIndex(
  db: Db,
  scope: SearchScope,
  limit: number,
): Promise<Page<string> | undefined> {
  if (db.engine === 'postgres') {
    const rows = await db.kysely.transaction().execute(async (trx) => {
      await onlyIndexesForBitmaps(trx)
      return (await trx.executeQuery(pgTrigramQuery(db, scope, limit).compile())).rows
    })
    if (Number(rows[0]?.found ?? 0) > INDEX_CAP) return undefined
    return toPage(rows, limit, (row) => row.id)
  }
  // SQLite: FTS5 counts the matching names of all accounts cheaply, and capped; only when there are at most
  // INDEX_CAP are the account's found and sorted. Both statements run in this turn's snapshot (see `Db.read`).
  const [count] = await db.read(ftsCountQuery(db, scope.query).compile())
  if (Number(count?.found) > INDEX_CAP) return undefined
  const rows = await db.read(ftsQuery(db, scope, limit).compile())
  return toPage(rows, limit, (row) => row.id)
}

/**
 * PostgreSQL reads a pattern's matches with the trigram index only: left to itself the planner may read them
 * by walking the order index or the whole table (it cannot know where a pattern's matches lie), the very walk
 * the index step is there to avoid. For the rest of the transaction, it can only build bitmaps from indexes.
 */
export async function onlyIndexesForBitmaps(trx: Transaction<Database>): Promise<void> {
  await sql`set local enable_seqscan = off; set local enable_indexscan = off; set local enable_indexonlyscan = off`.execute(
    trx,
  )
}

/** PostgreSQL: at most INDEX_CAP + 1 of the account's matches, how many that was, and the page among them. */
export function pgTrigramQuery(db: Db, scope: SearchScope, limit: number) {
  let matches = db.kysely
    .selectFrom('files')
    .select(['files.id', 'files.created_at'])
    .where('files.account_id', '=', scope.accountId)
    .where(nameMatches(db, scope.query))
  if (scope.folderId !== undefined) matches = matches.where('files.folder_id', '=', scope.folderId)
  if (scope.after !== undefined) matches = matches.where(afterCursor<Database, 'files'>('files', scope.after))
  const capped = matches.limit(sql.lit(INDEX_CAP + 1)).as('capped')
  return keysetAfter(
    db.kysely
      .selectFrom(capped)
      .select(['capped.id', 'capped.created_at', sql<number>`count(*) over ()`.as('found')]),
    'capped',
    undefined,
    limit + 1,
  )
}

/** SQLite: how many names of all accounts match, counting no further than INDEX_CAP + 1. */
export function ftsCountQuery(db: Db, query: string) {
  const capped = sql<{
    rowid: number
  }>`(select rowid from files_name_fts where files_name_fts match ${ftsPhrase(query)} limit ${sql.lit(INDEX_CAP + 1)})`
  return db.kysely.selectFrom(capped.as('capped')).select((eb) => eb.fn.countAll<number>().as('found'))
}

/** SQLite: the page among the account's matches. */
export function ftsQuery(db: Db, scope: SearchScope, limit: number) {
  let matches = db.kysely
    .selectFrom('files')
    .select(['files.id', 'files.created_at'])
    .where('files.account_id', '=', scope.accountId)
    .where(
      sql<SqlBool>`${sql.ref('files.rowid')} in (select rowid from files_name_fts where files_name_fts match ${ftsPhrase(scope.query)})`,
    )
  if (scope.folderId !== undefined) matches = matches.where('files.folder_id', '=', scope.folderId)
  return keysetAfter(matches, 'files', scope.after, limit + 1)
}

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`)

/** The query as one FTS5 phrase: its trigrams in sequence, so a match is the exact substring. */
const ftsPhrase = (query: string) => `"${query.replaceAll('"', '""')}"`

/**
 * A GLOB pattern matching names that contain `query`, each letter in either case. GLOB is SQLite's
 * case-sensitive matcher; spelling out the case variants (`[éÉ]`) folds non-ASCII letters too, as the FTS5
 * trigram tokenizer and PostgreSQL's ILIKE do, which SQLite's LIKE (ASCII only) would not.
 */
function caseInsensitiveGlob(query: string): string {
  let pattern = ''
  for (const char of query) {
    const variants = new Set(
      [char, char.toLowerCase(), char.toUpperCase()].filter((v) => v.length === char.length),
    )
    if (variants.size > 1) pattern += `[${[...variants].join('')}]`
    else pattern += char === '*' || char === '?' || char === '[' ? `[${char}]` : char
  }
  return `*${pattern}*`
}

/**
 * Whether a file's name contains `query`, ignoring case, tested row by row. PostgreSQL's trigram index
 * answers the same ILIKE; SQLite's FTS5 index folds case by its own rules.
 *
 * Both engines fold the case of ASCII and of the simple one-to-one letter pairs of other scripts (é/É,
 * ж/Ж, ...), with no accent folding (e does not match é). Special casings may differ between the engines
 * and, on SQLite, between the walk and the index: the Greek final sigma, the Turkish dotted and dotless i,
 * ß and SS, the Kelvin sign. PostgreSQL folds non-ASCII letters only when the database has a UTF-8 ctype
 * locale (C.UTF-8, en_US.UTF-8, ...).
 */
function nameMatches(db: Db, query: string): RawBuilder<SqlBool> {
  const name = sql.ref('files.name')
  if (db.engine === 'postgres') return sql<SqlBool>`${name} ilike ${`%${escapeLike(query)}%`} escape '\\'`
  return sql<SqlBool>`${name} glob ${caseInsensitiveGlob(query)}`
}
