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
// So a search asks the trigram index for at most INDEX_CAP matches, which settles rare patterns exactly, and
// when there are more, walks the order index for at most WALK_ROWS rows, which settles dense ones. That walk may
// end before it has a full page: the page is then short, or even empty, and its cursor points after the last
// row walked, so the next call goes on from there. As the API promises, only a null `nextCursor` ends the
// listing. On PostgreSQL, where the trigram index costs most for the patterns most names match (tens of
// milliseconds for one in every name), one page's worth of the newest files is walked first.
import {
  type Compilable,
  type CompiledQuery,
  type RawBuilder,
  type SqlBool,
  sql,
  type Transaction,
} from 'kysely'
import type { Db } from '../db/database.ts'
import {
  afterCursor,
  type Cursor,
  decodeCursor,
  encodeCursor,
  fetchSizeFor,
  keysetAfter,
  type Page,
  toPage,
} from '../db/pagination.ts'
import { compileOnce } from '../db/prepared.ts'
import type { Database } from '../db/schema.ts'

/** The most matches a search reads from the trigram index; with more, it walks the order index. */
export const INDEX_CAP = 5_000
/** The most rows a search walks in the order index in one request. */
export const WALK_ROWS = 10_000

export interface SearchOptions {
  accountId: string
  /** Case-insensitive substring of the name. */
  query: string
  folderId: string | undefined
  cursor: string | undefined
  limit: number
}

/** Where a search looks; `pattern` is the engine's form of the query, as each statement needs it. */
export interface SearchScope {
  accountId: string
  pattern: string
  folderId: string | undefined
  after: Cursor | undefined
}

/**
 * The search of GET /files?query=: one page of the ids of the account's files whose names contain the query,
 * newest first. Its statements are compiled once per shape (folder or not, cursor or not, page size).
 */
export function fileSearch(db: Db): (options: SearchOptions) => Promise<Page<string>> {
  const statements = new StatementCache(db)
  return async ({ accountId, query, folderId, cursor, limit }) => {
    const after = cursor === undefined ? undefined : decodeCursor(cursor)
    const scope = (pattern: string): SearchScope => ({ accountId, pattern, folderId, after })
    const walkScope = scope(namePattern(db, query))
    if (!hasIndexedTrigram(db, query)) return walk(statements, walkScope, WALK_ROWS, limit)
    if (db.engine === 'postgres') {
      const first = await walk(statements, walkScope, fetchSizeFor(limit), limit)
      if (first.items.length === limit || first.nextCursor === null) return first
      return (
        (await fromPgTrigramIndex(db, statements, walkScope, limit)) ??
        walk(statements, walkScope, WALK_ROWS, limit)
      )
    }
    return (
      (await fromFts(statements, scope(ftsPhrase(query)), limit)) ??
      walk(statements, walkScope, WALK_ROWS, limit)
    )
  }
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
async function walk(
  statements: StatementCache,
  scope: SearchScope,
  rows: number,
  limit: number,
): Promise<Page<string>> {
  // A full page and one match more, or fewer matches and the last row walked.
  const fetch = fetchSizeFor(limit) + 1
  const found = await statements.read(`walk_${rows}_${fetch}`, scope, (db, s) =>
    walkQuery(db, s, rows, fetch),
  )
  const hits = found.filter((row) => Boolean(row.hit))
  if (hits.length > limit) return toPage(hits, limit, (hit) => hit.id)
  const last = found.find((row) => Number(row.position) === rows)
  return {
    items: hits.map((hit) => hit.id),
    nextCursor: last ? encodeCursor({ createdAt: Number(last.created_at), id: last.id }) : null,
  }
}

/**
 * PostgreSQL: the page from the trigram index, or undefined when more than INDEX_CAP files match (sorting them
 * all would cost more than walking). Left to itself the planner may read a pattern's matches by walking the
 * order index or the whole table, since it cannot know where they lie: the very walk this step is there to
 * avoid. So the statement runs in a transaction that leaves it the indexes alone.
 */
async function fromPgTrigramIndex(
  db: Db,
  statements: StatementCache,
  scope: SearchScope,
  limit: number,
): Promise<Page<string> | undefined> {
  const fetch = fetchSizeFor(limit)
  const { query } = statements.compile(`pg_trigram_${fetch}`, scope, (db, s) => pgTrigramQuery(db, s, fetch))
  const rows = await db.kysely.transaction().execute(async (trx) => {
    await onlyIndexesForBitmaps(trx)
    return (await trx.executeQuery(query)).rows
  })
  if (Number(rows[0]?.found ?? 0) > INDEX_CAP) return undefined
  return toPage(rows, limit, (row) => row.id)
}

/**
 * SQLite: FTS5 counts the matching names of all accounts cheaply, and capped; only when there are at most
 * INDEX_CAP are the account's found and sorted. Both statements run in this turn's snapshot (see `Db.read`).
 */
async function fromFts(
  statements: StatementCache,
  scope: SearchScope,
  limit: number,
): Promise<Page<string> | undefined> {
  const [count] = await statements.ftsCount(scope.pattern)
  if (Number(count?.found) > INDEX_CAP) return undefined
  const fetch = fetchSizeFor(limit)
  const rows = await statements.read(`fts_${fetch}`, scope, (db, s) => ftsQuery(db, s, fetch))
  return toPage(rows, limit, (row) => row.id)
}

/** For the rest of the transaction, PostgreSQL can only build bitmaps from indexes to read files. */
export async function onlyIndexesForBitmaps(trx: Transaction<Database>): Promise<void> {
  await sql`set local enable_seqscan = off; set local enable_indexscan = off; set local enable_indexonlyscan = off`.execute(
    trx,
  )
}

/** The matches among the next `rows` files, at most `fetch` of them, and the last row walked. */
export function walkQuery(db: Db, scope: SearchScope, rows: number, fetch: number) {
  let files = db.kysely
    .selectFrom('files')
    .select([
      'files.id',
      'files.created_at',
      // SQLite answers 0 or 1.
      nameMatches(db, scope.pattern).$castTo<boolean | number>().as('hit'),
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
    .limit(sql.lit(fetch))
}

/** PostgreSQL: at most INDEX_CAP + 1 of the account's matches, how many that was, and the page among them. */
export function pgTrigramQuery(db: Db, scope: SearchScope, fetch: number) {
  let matches = db.kysely
    .selectFrom('files')
    .select(['files.id', 'files.created_at'])
    .where('files.account_id', '=', scope.accountId)
    .where(nameMatches(db, scope.pattern))
  if (scope.folderId !== undefined) matches = matches.where('files.folder_id', '=', scope.folderId)
  if (scope.after !== undefined) matches = matches.where(afterCursor<Database, 'files'>('files', scope.after))
  const capped = matches.limit(sql.lit(INDEX_CAP + 1)).as('capped')
  return keysetAfter(
    db.kysely
      .selectFrom(capped)
      .select(['capped.id', 'capped.created_at', sql<number>`count(*) over ()`.as('found')]),
    'capped',
    undefined,
    fetch,
  )
}

/** SQLite: how many names of all accounts match the FTS5 phrase, counting no further than INDEX_CAP + 1. */
export function ftsCountQuery(db: Db, phrase: string) {
  const capped = sql<{
    rowid: number
  }>`(select rowid from files_name_fts where files_name_fts match ${phrase} limit ${sql.lit(INDEX_CAP + 1)})`
  return db.kysely.selectFrom(capped.as('capped')).select((eb) => eb.fn.countAll<number>().as('found'))
}

/** SQLite: the page among the account's files whose names match the FTS5 phrase. */
export function ftsQuery(db: Db, scope: SearchScope, fetch: number) {
  let matches = db.kysely
    .selectFrom('files')
    .select(['files.id', 'files.created_at'])
    .where('files.account_id', '=', scope.accountId)
    .where(
      sql<SqlBool>`${sql.ref('files.rowid')} in (select rowid from files_name_fts where files_name_fts match ${scope.pattern})`,
    )
  if (scope.folderId !== undefined) matches = matches.where('files.folder_id', '=', scope.folderId)
  return keysetAfter(matches, 'files', scope.after, fetch)
}

/** Builds a statement for a scope; the cache calls it once per shape, with placeholders for the values. */
type Build<Row> = (db: Db, scope: SearchScope) => Compilable<Row>

/**
 * The search statements, each compiled once per shape: building and compiling a Kysely query costs more than
 * SQLite takes to run it. The scope's values are bound anew for every search; on PostgreSQL the statements
 * read through `Db.read` are also prepared once per connection.
 */
class StatementCache {
  readonly #db: Db
  readonly #compiled = new Map<string, (...args: unknown[]) => CompiledQuery<unknown>>()

  readonly #ftsCount: (phrase: string) => CompiledQuery<{ found: number }>

  constructor(db: Db) {
    this.#db = db
    this.#ftsCount = compileOnce(1, (phrase: string) => ftsCountQuery(db, phrase))
  }

  ftsCount(phrase: string): Promise<{ found: number }[]> {
    return this.#db.read(this.#ftsCount(phrase))
  }

  /** `name` tells the statement and its constants apart; the scope's shape is added to it. */
  compile<Row>(name: string, scope: SearchScope, build: Build<Row>) {
    const shape = `search_${name}_${scope.folderId === undefined ? 'all' : 'folder'}${scope.after ? '_after' : ''}`
    let bind = this.#compiled.get(shape)
    if (!bind) {
      const arity = valuesOf(scope).length
      bind = compileOnce(arity, (...placeholders: unknown[]) =>
        build(this.#db, withValues(scope, placeholders)),
      ) as (...args: unknown[]) => CompiledQuery<unknown>
      this.#compiled.set(shape, bind)
    }
    return { query: bind(...valuesOf(scope)) as CompiledQuery<Row>, shape }
  }

  /** Runs the statement through `Db.read`: on PostgreSQL, prepared once per connection under its shape's name. */
  read<Row>(name: string, scope: SearchScope, build: Build<Row>): Promise<Row[]> {
    const { shape, query } = this.compile(name, scope, build)
    return this.#db.read<Row>(query, shape)
  }
}

/** The scope's values in a fixed order: those of its shape only. */
function valuesOf(scope: SearchScope): unknown[] {
  return [
    scope.accountId,
    scope.pattern,
    ...(scope.folderId === undefined ? [] : [scope.folderId]),
    ...(scope.after === undefined ? [] : [scope.after.createdAt, scope.after.id]),
  ]
}

/** A scope of the same shape with `valuesOf`'s values replaced, in order. */
function withValues(shape: SearchScope, values: unknown[]): SearchScope {
  const [accountId, pattern, ...rest] = values as string[]
  const folderId = shape.folderId === undefined ? undefined : rest.shift()
  const after =
    shape.after === undefined ? undefined : { createdAt: rest[0] as unknown as number, id: rest[1] as string }
  return { accountId: accountId as string, pattern: pattern as string, folderId, after }
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
function namePattern(db: Db, query: string): string {
  return db.engine === 'postgres' ? `%${escapeLike(query)}%` : caseInsensitiveGlob(query)
}

/** The test of `namePattern`'s pattern. */
function nameMatches(db: Db, pattern: string): RawBuilder<SqlBool> {
  const name = sql.ref('files.name')
  if (db.engine === 'postgres') return sql<SqlBool>`${name} ilike ${pattern} escape '\\'`
  return sql<SqlBool>`${name} glob ${pattern}`
}
