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
// So a search goes in three steps, each bounded:
// 1. It walks one page's worth of the account's newest files: a pattern most names match is settled here,
//    before the trigram index is asked for more matches than any page needs.
// 2. It asks the trigram index for at most INDEX_CAP matches, in all accounts (the index knows names, not
//    accounts), which settles rare patterns exactly. The index is asked for the query's uncommon part only,
//    and its candidates tested against the whole query (see name-sample.ts). PostgreSQL also gives this step a
//    time bound (see `Db.readThroughBitmaps`), since its index can offer far more candidates than there are
//    matches.
// 3. With more matches than that, it walks the account's files in the order index for at most WALK_ROWS rows.
//    That walk may end before it has a full page: the page is then short, or even empty, and its cursor
//    points after the last row walked, so the next call goes on from there. As the API promises, only a null
//    `nextCursor` ends the listing.
// A pattern that more than INDEX_CAP names match is remembered for a while (see CrowdedPatterns), and searches
// for it go from step 1 straight to step 3: the next pages of such a search, and other clients' searches for
// it, would only read INDEX_CAP matches again to find the same.
import {
  type Compilable,
  type Expression,
  type Kysely,
  type RawBuilder,
  type SelectQueryBuilder,
  type SqlBool,
  sql,
} from 'kysely'
import type { Db } from '../db/database.ts'
import type { Engine } from '../db/engine.ts'
import {
  type Cursor,
  decodeCursor,
  encodeCursor,
  fetchSizeFor,
  keysetAfter,
  type Page,
  toPage,
} from '../db/pagination.ts'
import { PreparedShapes } from '../db/read-path/prepared.ts'
import type { Database } from '../db/schema.ts'
import { NameSample, SAMPLE_NAMES, selectivePart } from './name-sample.ts'

/** The most matches a search reads from the trigram index; with more, it walks the order index. */
export const INDEX_CAP = 5_000
/** The most rows a search walks in the order index in one request. */
export const WALK_ROWS = 10_000
/** How long a pattern with more than INDEX_CAP matches skips the trigram step, and how many are kept. */
const CROWDED_FOR_MS = 60_000
const CROWDED_KEPT = 1_000

export interface SearchOptions {
  accountId: string
  /** Case-insensitive substring of the name. */
  query: string
  folderId: string | undefined
  cursor: string | undefined
  limit: number
}

/** Where a search looks; the patterns are the engine's forms of the query, as each statement needs them. */
export interface SearchScope {
  accountId: string
  /** What each name is tested against (`NameIndex.walkPattern`). */
  pattern: string
  /** The index step's only: what the trigram index is asked for (`NameIndex.indexPattern`). */
  lookup?: string
  folderId: string | undefined
  after: Cursor | undefined
}

/**
 * The search of GET /files?query=: one page of the ids of the account's files whose names contain the query,
 * newest first. Its statements are compiled once per shape (folder or not, cursor or not, page size).
 */
export function nameSearch(db: Db): (options: SearchOptions) => Promise<Page<string>> {
  const index = NAME_INDEXES[db.engine]
  const statements = new SearchStatements(db)
  const crowded = new CrowdedPatterns()
  const sample = new NameSample(() => index.readSample(db))
  return async ({ accountId, query, folderId, cursor, limit }) => {
    const after = cursor === undefined ? undefined : decodeCursor(cursor)
    const scope = (pattern: string): SearchScope => ({ accountId, pattern, folderId, after })
    const walkScope = scope(index.walkPattern(query))
    if (!index.canAnswer(query)) return walk(statements, walkScope, WALK_ROWS, limit)
    const first = await walk(statements, walkScope, fetchSizeFor(limit), limit)
    if (first.items.length === limit || first.nextCursor === null) return first
    if (!crowded.has(walkScope.pattern)) {
      const names = await sample.ready()
      const part = index.lookupPart(selectivePart(query, (trigram) => names.share(trigram)))
      const lookup = index.indexPattern(index.canAnswer(part) ? part : query)
      const answer = await fromTrigramIndex(statements, index, { ...walkScope, lookup }, limit)
      if (typeof answer === 'object') return answer
      // Not a timeout: it may say more of the moment (a busy server) than of the pattern, and a pattern that
      // the index settles in a millisecond would then walk, at ten times the cost, for a whole minute.
      if (answer === 'over cap') crowded.add(walkScope.pattern)
    }
    return walk(statements, walkScope, WALK_ROWS, limit)
  }
}

/**
 * The patterns more than INDEX_CAP names matched lately, whatever the account, folder or cursor: the trigram
 * step counts the matches of all accounts, by name alone. Kept in their walk's form. For a while, since names
 * come and go; and only so many, so a client's stream of distinct patterns cannot grow it.
 */
class CrowdedPatterns {
  /** Pattern → until when it is skipped, oldest first. */
  readonly #until = new Map<string, number>()

  has(pattern: string): boolean {
    const until = this.#until.get(pattern)
    if (until === undefined) return false
    if (until > Date.now()) return true
    this.#until.delete(pattern)
    return false
  }

  add(pattern: string): void {
    this.#until.delete(pattern)
    this.#until.set(pattern, Date.now() + CROWDED_FOR_MS)
    if (this.#until.size > CROWDED_KEPT) this.#until.delete(this.#until.keys().next().value as string)
  }
}

/**
 * Walks at most `rows` of the account's files (in the folder, if given) from the cursor, newest first, and
 * returns the first `limit` that match. With fewer, the cursor is that of the last row walked, or null when
 * the walk reached the account's oldest file. One statement, so the matches and the last row walked come from
 * one snapshot.
 */
async function walk(
  statements: SearchStatements,
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
  const last = found.find((row) => !row.hit)
  return {
    items: hits.map((hit) => hit.id),
    nextCursor: last ? encodeCursor({ createdAt: Number(last.created_at), id: last.id }) : null,
  }
}

/**
 * The page from the trigram index; or 'over cap' when more than INDEX_CAP names match, in all accounts; or
 * 'timed out' when PostgreSQL gave up on the index (see `Db.readThroughBitmaps`). The matches are found by
 * their names alone, the one condition the index answers, and the page taken from them.
 * On PostgreSQL the planner, left to itself, might read a pattern's matches by walking the order index or
 * the whole table instead, since it cannot know where they lie: the very walk this step is there to avoid.
 * So it plans the statement where it may read only through bitmaps (`Db.readThroughBitmaps`), and a
 * statement that reads `files` by name alone leaves it the trigram index as its one plan.
 */
async function fromTrigramIndex(
  statements: SearchStatements,
  index: NameIndex,
  scope: SearchScope,
  limit: number,
): Promise<Page<string> | 'over cap' | 'timed out'> {
  const fetch = fetchSizeFor(limit)
  const rows = await statements.readThroughBitmaps(`trigram_${fetch}`, scope, (db, s) =>
    index.indexStep(db, s, fetch),
  )
  if (!rows) return 'timed out'
  if (Number(rows[0]?.found) > INDEX_CAP) return 'over cap'
  const page = rows.filter((row): row is { found: number; id: string; created_at: number } => row.id !== null)
  return toPage(page, limit, (row) => row.id)
}

/**
 * The matches among the next `rows` files, at most `fetch` of them, marked by a true `hit`; then the last of
 * those rows, if there are that many, marked by a false one.
 */
export function walkQuery(db: Db, scope: SearchScope, rows: number, fetch: number) {
  const inScope = () => {
    const files = db.kysely.selectFrom('files').where('files.account_id', '=', scope.accountId)
    return scope.folderId === undefined ? files : files.where('files.folder_id', '=', scope.folderId)
  }
  // The test of the name is a column here, not a condition, so no engine can turn the walk into a trigram
  // index scan; both stop reading as soon as the outer query has its rows.
  const walked = keysetAfter(
    inScope().select([
      'files.id',
      'files.created_at',
      // SQLite answers 0 or 1.
      NAME_INDEXES[db.engine].nameMatches(scope.pattern).$castTo<boolean | number>().as('hit'),
    ]),
    'files',
    scope.after,
    rows,
  ).as('walked')
  const hits = db.kysely
    .selectFrom(walked)
    .select(['walked.id', 'walked.created_at', sql.lit(true).$castTo<boolean | number>().as('hit')])
    .where('walked.hit', '=', sql.lit(true))
    .limit(sql.lit(fetch))
  // Read from the order index alone, this costs a small part of numbering the rows as they are walked.
  const last = keysetAfter(
    inScope().select(['files.id', 'files.created_at', sql.lit(false).$castTo<boolean | number>().as('hit')]),
    'files',
    scope.after,
    1,
  ).offset(sql.lit(rows - 1))
  return db.kysely
    .selectFrom(hits.as('hits'))
    .selectAll()
    .unionAll(db.kysely.selectFrom(last.as('last')).selectAll())
}

// The index step's statements: a capped set of matches, and how many there are with the page among the
// account's (a row with a null id when the account has none, so the count is always there). The page is
// only read when the count is within the cap.

/** PostgreSQL: the index step, with pg_trgm's `files_name_trgm`. */
export function pgTrigramQuery(db: Db, scope: SearchScope, fetch: number) {
  const matches = db.kysely
    .selectFrom('files')
    .select(['files.id', 'files.account_id', 'files.folder_id', 'files.created_at'])
    .where(PG_TRIGRAMS.nameMatches(scope.lookup ?? scope.pattern))
    // Tested on each candidate, not looked up: `name || ''` is no indexed expression, so the index is asked
    // for the lookup's trigrams alone.
    .where(sql<SqlBool>`(${sql.ref('files.name')} || '') ilike ${scope.pattern} escape '\\'`)
    .limit(sql.lit(INDEX_CAP + 1))
  let page = withMatches(db)
    .selectFrom('matches')
    .select(['matches.id', 'matches.created_at'])
    .where('matches.account_id', '=', scope.accountId)
  if (scope.folderId !== undefined) page = page.where('matches.folder_id', '=', scope.folderId)
  return countedPage(db, matches, keysetAfter(page, 'matches', scope.after, fetch))
}

/**
 * SQLite: the index step, with the FTS5 trigram table `files_name_fts`; `scope.lookup` is an FTS5 phrase, and
 * `scope.pattern` the GLOB pattern each candidate's name is tested against.
 */
export function ftsQuery(db: Db, scope: SearchScope, fetch: number) {
  // The test reads the name from `files`: on the FTS5 table, FTS5 would look the GLOB up in its index too,
  // whole pattern and all.
  const matches = sql<{
    rowid: number
  }>`(select files_name_fts.rowid from files_name_fts cross join files on files.rowid = files_name_fts.rowid
    where files_name_fts match ${scope.lookup ?? scope.pattern} and files.name glob ${scope.pattern}
    limit ${sql.lit(INDEX_CAP + 1)})`
  // CROSS JOIN makes SQLite loop over the matches and look each file up by rowid, whatever it guesses of
  // their number; it might otherwise walk the account's files and test each against them.
  let page = withMatches(db)
    .selectFrom('matches')
    .crossJoin('files')
    .select(['files.id', 'files.created_at'])
    .where(sql<SqlBool>`${sql.ref('files.rowid')} = ${sql.ref('matches.rowid')}`)
    .where('files.account_id', '=', scope.accountId)
  if (scope.folderId !== undefined) page = page.where('files.folder_id', '=', scope.folderId)
  return countedPage(db, matches, keysetAfter(page, 'files', scope.after, fetch))
}

/** The tables the index step's statements read: `matches` is their CTE, with the columns each engine's has. */
interface WithMatches extends Database {
  matches: { id: string; account_id: string; folder_id: string | null; created_at: number; rowid: number }
}

/** Queries that read the `matches` of the statement they are part of. */
const withMatches = (db: Db) => db.kysely as unknown as Kysely<WithMatches>

/** The index step's statement: `matches` as its CTE, their count, and `page` when the count is within the cap. */
function countedPage(
  db: Db,
  matches: Expression<Record<string, unknown>>,
  // biome-ignore lint/suspicious/noExplicitAny: any tables of WithMatches
  page: SelectQueryBuilder<WithMatches, any, { id: string; created_at: number }>,
) {
  return db.kysely
    .with(
      (cte) => cte('matches').materialized(),
      () => matches,
    )
    .selectFrom(sql<{ found: number }>`(select count(*) as found from matches)`.as('total'))
    .leftJoin(
      // Constant within the statement: both engines test it once, before reading any row of the page.
      page.where(sql<SqlBool>`(select count(*) from matches) <= ${sql.lit(INDEX_CAP)}`).as('page'),
      (join) => join.onTrue(),
    )
    .select(['total.found', 'page.id', 'page.created_at'])
    .orderBy('page.created_at', 'desc')
    .orderBy('page.id', 'desc')
}

/** Builds a statement for a scope; called once per shape, with placeholders for the values. */
type Build<Row> = (db: Db, scope: SearchScope) => Compilable<Row>

/**
 * The search statements, each compiled once per shape (read-path/prepared.ts): building and compiling a
 * Kysely query costs more than SQLite takes to run it. `name` tells the statement and its constants apart;
 * the scope's shape is added to it.
 */
class SearchStatements {
  readonly #db: Db
  readonly #shapes: PreparedShapes

  constructor(db: Db) {
    this.#db = db
    this.#shapes = new PreparedShapes(db)
  }

  read<Row>(name: string, scope: SearchScope, build: Build<Row>): Promise<Row[]> {
    return this.#shapes.read(shapeOf(name, scope), valuesOf(scope), this.#builder(scope, build))
  }

  /** `read` through `Db.readThroughBitmaps`. */
  readThroughBitmaps<Row>(name: string, scope: SearchScope, build: Build<Row>): Promise<Row[] | undefined> {
    return this.#shapes.readThroughBitmaps(shapeOf(name, scope), valuesOf(scope), this.#builder(scope, build))
  }

  #builder<Row>(scope: SearchScope, build: Build<Row>) {
    return (...placeholders: unknown[]) => build(this.#db, withValues(scope, placeholders))
  }
}

const shapeOf = (name: string, scope: SearchScope) =>
  `search_${name}_${scope.folderId === undefined ? 'all' : 'folder'}${scope.after ? '_after' : ''}`

/** The scope's values in a fixed order: those of its shape only. */
function valuesOf(scope: SearchScope): unknown[] {
  return [
    scope.accountId,
    scope.pattern,
    ...(scope.lookup === undefined ? [] : [scope.lookup]),
    ...(scope.folderId === undefined ? [] : [scope.folderId]),
    ...(scope.after === undefined ? [] : [scope.after.createdAt, scope.after.id]),
  ]
}

/** A scope of the same shape with `valuesOf`'s values replaced, in order. */
function withValues(shape: SearchScope, values: unknown[]): SearchScope {
  const [accountId, pattern, ...rest] = values as string[]
  const lookup = shape.lookup === undefined ? undefined : rest.shift()
  const folderId = shape.folderId === undefined ? undefined : rest.shift()
  const after =
    shape.after === undefined ? undefined : { createdAt: rest[0] as unknown as number, id: rest[1] as string }
  return { accountId: accountId as string, pattern: pattern as string, lookup, folderId, after }
}

/**
 * What differs between the engines' name indexes (migration 0001: SQLite FTS5 `files_name_fts`, PostgreSQL
 * pg_trgm `files_name_trgm`), in one place per engine.
 *
 * Both fold the case of ASCII and of the simple one-to-one letter pairs of other scripts (é/É, ж/Ж, ...),
 * with no accent folding (e does not match é). Special casings may differ between the engines and, on SQLite,
 * between the walk and the index: the Greek final sigma, the Turkish dotted and dotless i, ß and SS, the
 * Kelvin sign. PostgreSQL folds non-ASCII letters only when the database has a UTF-8 ctype locale (C.UTF-8,
 * en_US.UTF-8, ...).
 */
interface NameIndex {
  /**
   * Whether the trigram index can answer the query at all: only one that contains a whole trigram. FTS5's
   * trigrams are any three characters; pg_trgm's are made of letters and digits only, so "a-b" or "%%%" gives
   * it nothing to look up, and it would read its whole index.
   */
  canAnswer(query: string): boolean
  /** The pattern the walk tests each name against, row by row. */
  walkPattern(query: string): string
  /** The test of a `walkPattern` pattern. */
  nameMatches(pattern: string): RawBuilder<SqlBool>
  /** The part of a query (`selectivePart`) as the index is best asked for it. */
  lookupPart(part: string): string
  /** The pattern the index step's statement takes. */
  indexPattern(query: string): string
  /** The index step's statement (see `countedPage`). */
  indexStep(db: Db, scope: SearchScope, fetch: number): Compilable<IndexStepRow>
  /** About SAMPLE_NAMES names of all accounts, at random (see name-sample.ts). */
  readSample(db: Db): Promise<string[]>
}

type IndexStepRow = { found: number; id: string | null; created_at: number | null }

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`)

/** PostgreSQL: ILIKE, which pg_trgm's index answers too. */
const PG_TRIGRAMS: NameIndex = {
  canAnswer: (query) => /[\p{L}\p{N}]{3}/u.test(query),
  walkPattern: (query) => `%${escapeLike(query)}%`,
  nameMatches: (pattern) => sql<SqlBool>`${sql.ref('files.name')} ilike ${pattern} escape '\\'`,
  // Without the characters other than letters and digits at its ends: pg_trgm would take them as a word's
  // bounds, and look up the trigrams of a word's start or end too, such as "  0", which every name that has a
  // word starting with 0 holds (`%-0500001%` took 19 ms where `%0500001%` took 1).
  lookupPart: (part) => part.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, ''),
  indexPattern: (query) => `%${escapeLike(query)}%`,
  indexStep: pgTrigramQuery,
  // Pages at random, as many as hold about SAMPLE_NAMES rows by the planner's count; a table with no more than
  // twice that (or never counted) whole.
  readSample: (db) =>
    readNames(
      db,
      sql`select name from files tablesample system ((
        select (case when reltuples <= ${sql.lit(2 * SAMPLE_NAMES)} then 100
          else 100.0 * ${sql.lit(SAMPLE_NAMES)} / reltuples end)::real
        from pg_class where oid = 'files'::regclass))`,
    ),
}

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

/** SQLite: GLOB for the walk; the FTS5 index is asked for the query as one phrase. */
const SQLITE_FTS: NameIndex = {
  canAnswer: (query) => [...query].length >= 3,
  walkPattern: caseInsensitiveGlob,
  nameMatches: (pattern) => sql<SqlBool>`${sql.ref('files.name')} glob ${pattern}`,
  lookupPart: (part) => part,
  // Its trigrams in sequence, so a match is the exact substring.
  indexPattern: (query) => `"${query.replaceAll('"', '""')}"`,
  indexStep: ftsQuery,
  // Rows at random by rowid, each found through the table's own b-tree.
  readSample: (db) =>
    readNames(
      db,
      sql`with recursive picks(n) as (select 1 union all select n + 1 from picks where n < ${sql.lit(SAMPLE_NAMES)})
        select name from files
        where rowid in (select abs(random()) % (select max(rowid) from files) + 1 from picks)`,
    ),
}

const NAME_INDEXES: Record<Engine, NameIndex> = { postgres: PG_TRIGRAMS, sqlite: SQLITE_FTS }

/** The names a sample's statement reads; one statement, the same every time. */
async function readNames(db: Db, statement: RawBuilder<{ name: string }>): Promise<string[]> {
  const rows = await db.read(statement.compile(db.kysely), 'search_name_sample')
  return rows.map((row) => row.name)
}
