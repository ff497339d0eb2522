// Name search over an account's files (not those in the trash), newest first: a page holds the newest matches
// after the cursor, and is short only when it is the last, however many files match and wherever among the
// account's files they lie.
//
// A search reads the account's files from the newest back, in two parts (see name-index.repository.ts):
// 1. The files not in the name index yet (fewer than CHUNK_SIZE, and those the job has not written yet).
// 2. The blocks, newest first, a few at a time and more each time: for each block, the slots held by all of
//    the query's rarest grams (and by the folder's gram), which are the candidates; then the candidates'
//    rows, newest first. A gram no file holds settles the search at once.
// The database sends only the rows whose names may match (`NearMatch`), and the search tests each with one
// folding of case for both engines (`foldName`): a candidate that holds the grams apart, or that was renamed or
// deleted, is passed over. It stops as soon as it has one match more than the page: that match says another
// page follows, so no page but the last is short.
//
// The cost is bounded by what the answer needs: the first part reads fewer than CHUNK_SIZE rows; the second
// one row per block for each gram read (153 blocks for 10,000,000 files), and the rows of candidates until
// the page is full. A query that matches few files has few candidates, however old; one that matches many
// finds its page in the first candidates.
import { type RawBuilder, type SqlBool, sql } from 'kysely'
import type { Db } from '../../../platform/db/database.ts'
import type { Engine } from '../../../platform/db/engine.ts'
import { decodeCursor, encodeCursor, keysetAfter, type Page } from '../../../platform/db/pagination.ts'
import { EpochCache } from '../../../platform/db/read-path/epoch-cache.ts'
import { PreparedShapes } from '../../../platform/db/read-path/prepared.ts'
import { BLOCK_SIZE, CHUNK_SIZE, folderGram, foldName, queryGrams, slotsInAll } from './name-grams.ts'
import { COUNTS_BLOCK } from './name-index.repository.ts'

/** The most grams a search intersects: more narrow the candidates little, and cost a row per block each. */
const MAX_GRAMS = 4
/**
 * A gram in more than this share of the indexed files is left out unless it is the rarest: it narrows the
 * candidates little (the names are tested anyway), and costs a bitmap of 8 KiB a block.
 */
const COMMON_SHARE = 1 / 4
/**
 * Blocks read at a time, at first and at most: sixteen times as many each time while the page is not full. The
 * newest block alone fills the page of most queries that many names match; then a few statements read the rest
 * (153 blocks at 10,000,000 files), each at most MOST_BLOCKS rows of 8 KiB for each gram.
 */
const FIRST_BLOCKS = 1
const GROWTH = 16
const MOST_BLOCKS = 256
/**
 * Candidates whose rows are read at a time, at most. At first twice as many as the page still needs, then
 * twice as many each time while few of them match. Not more: after many candidates that did not match comes
 * a block where most do, and the database sends every row of the batch that matches. With 4,096, the first page
 * of "report-00" at 1,000,000 files (3,500 candidates holding "-00" apart from the 99,999 oldest names that
 * hold "report-00") had 2,977 rows sent for 51 wanted: 22 ms of its 51 on PostgreSQL; with 1,024, 129 rows.
 */
const MOST_CANDIDATES = 1024
/**
 * Rows of the name index kept in memory per process (each at most 8 KiB, so at most 64 MiB; most are lists far
 * shorter): a search of 10,000,000 files reads up to four grams' rows of 153 blocks, 612 rows and 0.5 MB that
 * cost 2 of its 5 ms on SQLite, and as much again in garbage collection.
 */
const CACHED_ROWS = 8192
/** However quiet the epoch, a row is read again after this long (see epoch-cache.ts). */
const CACHED_ROW_MAX_AGE_MS = 60_000
/**
 * Accounts whose newest files (those after the index) are kept in memory per process, each at most
 * KEPT_NEWEST_MOST files: every search reads them, 640 at 10,000,000 files, half a millisecond on SQLite.
 */
const KEPT_NEWEST_ACCOUNTS = 64
const KEPT_NEWEST_MOST = 2 * CHUNK_SIZE
/** A gram that has no row in a block: no slot holds it. */
const NO_SLOTS = new Uint8Array(0)

export interface SearchOptions {
  accountId: string
  /** Case-insensitive substring of the name. */
  query: string
  folderId: string | undefined
  cursor: string | undefined
  limit: number
}

/** A file as the search reads it. */
interface FileRow {
  seq: number | string
  id: string
  name: string
  folder_id: string | null
  created_at: number | string
}

/** One of the newest files kept in memory (`SearchReads.newestFiles`), its name folded once asked for. */
type KeptFile = FileRow & { folded?: string }

/**
 * The search of GET /files?query=: one page of the ids of the account's files whose names contain the query,
 * newest first. Its statements are compiled once per shape.
 */
export function nameSearch(
  db: Db,
  options: { cachedRows?: number } = {},
): (options: SearchOptions) => Promise<Page<string>> {
  const reads = new SearchReads(db, options.cachedRows ?? CACHED_ROWS)
  return async ({ accountId, query, folderId, cursor, limit }) => {
    const folded = foldName(query)
    const inFolder = folderId ?? null
    const wanted = limit + 1
    const matches: FileRow[] = []
    const take = (rows: FileRow[]) => {
      for (const row of rows) {
        if (matches.length === wanted) return
        if (inFolder !== null && row.folder_id !== inFolder) continue
        if (foldName(row.name).includes(folded)) matches.push(row)
      }
    }

    const grams = queryGrams(folded)
    if (folderId !== undefined) grams.push(folderGram(folderId))
    const account = await reads.account(accountId, cursor, grams)
    if (!account) return { items: [], nextCursor: null }
    const { newest, indexed, counts } = account
    const near = nearMatches(folded)
    const kept = newest >= indexed ? await reads.newestFiles(accountId, indexed, account.last) : []
    if (kept) {
      for (const row of kept) {
        if (matches.length === wanted) break
        if (Number(row.seq) > newest || (inFolder !== null && row.folder_id !== inFolder)) continue
        row.folded ??= foldName(row.name)
        if (row.folded.includes(folded)) matches.push(row)
      }
    } else {
      for (let high = newest; high >= indexed && matches.length < wanted; ) {
        const needed = wanted - matches.length
        const rows = await reads.files({ accountId, low: indexed, high, folderId, near, limit: needed })
        take(rows)
        if (rows.length < needed) break
        high = Number(rows.at(-1)?.seq) - 1
      }
    }

    if (matches.length < wanted && newest >= 0 && indexed > 0) {
      // A gram no file holds: no match in any block.
      if (grams.every((gram) => counts.has(gram))) {
        const countOf = (gram: string) => counts.get(gram) ?? 0
        const rarest = grams
          .sort((a, b) => countOf(a) - countOf(b))
          .filter((gram, i) => i === 0 || countOf(gram) <= indexed * COMMON_SHARE)
          .slice(0, MAX_GRAMS)
        const below = Math.min(newest, indexed - 1)
        let blocks = FIRST_BLOCKS
        let high = Math.floor(below / BLOCK_SIZE)
        let batch = 2 * wanted
        while (high >= 0 && matches.length < wanted) {
          const low = Math.max(0, high - blocks + 1)
          // Found block by block, newest first, as they are asked for: a page found early costs no more.
          const candidates = await reads.candidates(accountId, indexed, rarest, low, high, below)
          const pending: number[] = []
          for (const seq of candidates) {
            pending.push(seq)
            if (pending.length < batch) continue
            take(await reads.filesNumbered(accountId, pending.splice(0), near))
            if (matches.length === wanted) break
            batch = Math.min(MOST_CANDIDATES, Math.max(2 * (wanted - matches.length), 2 * batch))
          }
          if (pending.length > 0 && matches.length < wanted) {
            take(await reads.filesNumbered(accountId, pending, near))
          }
          high = low - 1
          blocks = Math.min(blocks * GROWTH, MOST_BLOCKS)
        }
      }
    }

    const more = matches.length > limit
    const last = matches[limit - 1]
    return {
      items: matches.slice(0, limit).map((row) => row.id),
      nextCursor: more && last ? encodeCursor({ createdAt: Number(last.created_at), id: last.id }) : null,
    }
  }
}

/** The search's statements, each compiled once per shape. */
class SearchReads {
  readonly #db: Db
  readonly #shapes: PreparedShapes
  readonly #inList: InList
  readonly #nearMatch: NearMatch
  readonly #gramCounts: GramCounts
  readonly #rows: EpochCache<Uint8Array> | undefined
  readonly #newest: EpochCache<KeptFile[]> | undefined

  constructor(db: Db, cachedRows: number) {
    this.#db = db
    const keep = <Value>(maxEntries: number) =>
      cachedRows > 0 ? new EpochCache<Value>({ maxEntries, maxAgeMs: CACHED_ROW_MAX_AGE_MS }) : undefined
    this.#rows = keep(cachedRows)
    this.#newest = keep(KEPT_NEWEST_ACCOUNTS)
    this.#shapes = new PreparedShapes(db)
    this.#inList = IN_LIST[db.engine]
    this.#nearMatch = NEAR_MATCH[db.engine]
    this.#gramCounts = GRAM_COUNTS[db.engine]
  }

  /**
   * How many of the account's files the name index holds; the number of the newest file the search may return:
   * the account's newest, or after a cursor the next older file's, by the lists' order (-1 when none is); and
   * each gram's count of files in the index (a gram no file holds is left out); and the number of the
   * account's newest file. One statement.
   */
  async account(accountId: string, cursor: string | undefined, grams: string[]) {
    const after = cursor === undefined ? undefined : decodeCursor(cursor)
    const list = this.#listValue(grams)
    const values = after ? [accountId, list, after.createdAt, after.id] : [accountId, list]
    const [row] = await this.#shapes.read(
      `search_account${after ? '_after' : ''}`,
      values,
      (id, grams, createdAt, fileId) => {
        const accounts = this.#db.kysely
          .selectFrom('accounts')
          .where('accounts.id', '=', id as string)
          .select([
            this.#gramCounts.select(id, grams).as('counts'),
            'name_indexed',
            sql<number>`file_seq - 1`.as('last'),
          ])
        if (!after) return accounts.select(sql<number>`file_seq - 1`.as('newest'))
        const next = keysetAfter(
          this.#db.kysely
            .selectFrom('files')
            .select('files.seq')
            .where('files.account_id', '=', id as string)
            // As the lists say it, which their (partial) order index answers without reading a row.
            .where('files.trashed_at', 'is', null),
          'files',
          { createdAt: createdAt as number, id: fileId as string },
          1,
        )
        return accounts.select((eb) => eb.fn.coalesce(next, sql<number>`-1`).as('newest'))
      },
    )
    if (!row) return undefined
    const counts = Object.entries(this.#gramCounts.parse(row.counts)).filter(([, files]) => files > 0)
    return {
      indexed: Number(row.name_indexed),
      newest: Number(row.newest),
      last: Number(row.last),
      counts: new Map(counts),
    }
  }

  /**
   * The account's files numbered `low` to `high` (in the folder, if given) that may match (`nearMatches`),
   * newest first, at most `limit`.
   */
  files(scope: {
    accountId: string
    low: number
    high: number
    folderId: string | undefined
    near: string | null
    limit: number
  }): Promise<FileRow[]> {
    const { accountId, low, high, folderId, near, limit } = scope
    const values = [accountId, low, high, near, limit, ...(folderId === undefined ? [] : [folderId])]
    return this.#shapes.read<FileRow>(
      `search_unindexed_${folderId === undefined ? 'all' : 'folder'}`,
      values,
      (id, from, to, ascii, most, folder) => {
        let files = this.#db.kysely
          .selectFrom('files')
          .select(['seq', 'id', 'name', 'folder_id', 'created_at'])
          .where('account_id', '=', id as string)
          .where('seq', '>=', from as number)
          .where('seq', '<=', to as number)
          .where('trashed_at', 'is', null)
          .where(this.#nearMatch(ascii))
        if (folder !== undefined) {
          // On SQLite, `+` keeps the folder's order index out of the plan: without statistics for it (Coffer
          // never runs ANALYZE; a database analyzed before migration 0020 has none for it), SQLite read the
          // whole folder's files through it and sorted them, 70 ms where the numbers' range takes 2.
          const column = this.#db.engine === 'sqlite' ? sql.raw('+folder_id') : sql.ref('folder_id')
          files = files.where(sql<SqlBool>`${column} = ${folder}`)
        }
        return files.orderBy('seq', 'desc').limit(most as number)
      },
    )
  }

  /**
   * The account's files numbered `indexed` to `last` (those after the index), newest first, from memory while
   * the account's files are as they were; undefined when there are more than KEPT_NEWEST_MOST of them (the
   * job is behind), or nothing is kept, for the search to read those that may match itself.
   */
  async newestFiles(accountId: string, indexed: number, last: number): Promise<KeptFile[] | undefined> {
    const cache = this.#newest
    if (!cache || last - indexed + 1 > KEPT_NEWEST_MOST) return undefined
    const key = `${accountId}\u0000${indexed}\u0000${last}`
    const epoch = this.#db.changeEpoch('files_folders_shares', accountId)
    const now = Date.now()
    const found = cache.get(key, epoch, now)
    if (found) return found
    const rows = await this.#shapes.read<KeptFile>(
      'search_newest',
      [accountId, indexed, last],
      (id, from, to) =>
        this.#db.kysely
          .selectFrom('files')
          .select(['seq', 'id', 'name', 'folder_id', 'created_at'])
          .where('account_id', '=', id as string)
          .where('seq', '>=', from as number)
          .where('seq', '<=', to as number)
          .where('trashed_at', 'is', null)
          .orderBy('seq', 'desc'),
    )
    cache.set(key, rows, epoch, now)
    return rows
  }

  /** The account's files of these numbers that may match (`nearMatches`), newest first. */
  async filesNumbered(accountId: string, seqs: number[], near: string | null): Promise<FileRow[]> {
    const rows = await this.#shapes.read<FileRow>(
      'search_candidates',
      [accountId, this.#listValue(seqs), near],
      (id, list, ascii) =>
        this.#db.kysely
          .selectFrom('files')
          .select(['seq', 'id', 'name', 'folder_id', 'created_at'])
          .where('account_id', '=', id as string)
          .where(this.#inList('seq', list))
          .where('trashed_at', 'is', null)
          .where(this.#nearMatch(ascii)),
    )
    return rows.sort((a, b) => Number(b.seq) - Number(a.seq))
  }

  /**
   * The candidates of blocks `low` to `high`: the numbers, up to `highest`, of the files whose slots all the
   * grams hold, newest first. Each block's candidates are found as they are asked for.
   */
  async candidates(
    accountId: string,
    indexed: number,
    grams: string[],
    low: number,
    high: number,
    highest: number,
  ): Promise<Iterable<number>> {
    const blocks = await this.#blockRows(accountId, indexed, grams, low, high)
    return (function* () {
      for (let block = high; block >= low; block--) {
        const sets = blocks.get(block) as Uint8Array[]
        // A block where a gram has no row has no candidate.
        if (sets.some((set) => set.byteLength === 0)) continue
        const first = block * BLOCK_SIZE
        for (const slot of slotsInAll(sets, Math.min(BLOCK_SIZE - 1, highest - first))) yield first + slot
      }
    })()
  }

  /**
   * The rows of the grams in blocks `low` to `high`, by block, in the order of `grams` (NO_SLOTS where a gram
   * has none): from memory when they are all there, else read in one statement and kept.
   *
   * A row kept is served while the account's files are as they were (the epoch of their rows, which changes
   * with every rename and move, whose new slots `refile` adds) and its index holds as many files (the key
   * has `indexed`: a chunk added extends the rows of its block, without a change to any file, when the job
   * writes it). Rows written again without the slots left behind (`rewriteStale`) hold fewer: the rows kept
   * from before hold more candidates, each checked against its file, so no answer changes.
   */
  async #blockRows(accountId: string, indexed: number, grams: string[], low: number, high: number) {
    const cache = this.#rows
    const epoch = cache ? this.#db.changeEpoch('files_folders_shares', accountId) : Number.NaN
    const now = Date.now()
    const keyOf = (gram: string, block: number) => `${accountId}\u0000${indexed}\u0000${block}\u0000${gram}`
    const byBlock = new Map<number, Uint8Array[]>()
    if (cache) {
      kept: for (let block = high; block >= low; block--) {
        const sets: Uint8Array[] = []
        for (const gram of grams) {
          const set = cache.get(keyOf(gram, block), epoch, now)
          if (set === undefined) break kept
          sets.push(set)
        }
        byBlock.set(block, sets)
      }
      if (byBlock.size === high - low + 1) return byBlock
    }
    const rows = await this.#shapes.read(
      'search_blocks',
      [accountId, this.#listValue(grams), low, high],
      (id, list, from, to) =>
        this.#db.kysely
          .selectFrom('name_grams')
          .select(['gram', 'block', 'slots'])
          .where('account_id', '=', id as string)
          .where(this.#inList('gram', list))
          .where('block', '>=', from as number)
          .where('block', '<=', to as number),
    )
    const read = new Map(
      rows.map((row) => [`${Number(row.block)}\u0000${row.gram}`, row.slots as Uint8Array]),
    )
    for (let block = high; block >= low; block--) {
      byBlock.set(
        block,
        grams.map((gram) => {
          const set = read.get(`${block}\u0000${gram}`) ?? NO_SLOTS
          cache?.set(keyOf(gram, block), set, epoch, now)
          return set
        }),
      )
    }
    return byBlock
  }

  /** A list as one statement parameter, as `#inList` reads it. */
  #listValue(values: (string | number)[]): unknown {
    return this.#db.engine === 'postgres' ? values : JSON.stringify(values)
  }
}

/** `column in (list)` with the list as one parameter: the same statement for any length. */
type InList = (column: string, placeholder: unknown) => RawBuilder<SqlBool>

const IN_LIST: Record<Engine, InList> = {
  // An array, whose type PostgreSQL takes from the column's.
  postgres: (column, placeholder) => sql<SqlBool>`${sql.ref(column)} = any(${placeholder})`,
  // A JSON array.
  sqlite: (column, placeholder) =>
    sql<SqlBool>`${sql.ref(column)} in (select value from json_each(${placeholder}))`,
}

/** Each gram's count of files (COUNTS_BLOCK), as one value: a JSON object of the grams that have one. */
interface GramCounts {
  select(accountId: unknown, grams: unknown): RawBuilder<unknown>
  parse(value: unknown): Record<string, number>
}

const GRAM_COUNTS: Record<Engine, GramCounts> = {
  postgres: {
    select: (accountId, grams) => sql`(select coalesce(json_object_agg(gram, files), '{}') from name_grams
      where account_id = ${accountId} and block = ${sql.lit(COUNTS_BLOCK)} and ${IN_LIST.postgres('gram', grams)})`,
    // node-postgres parses JSON.
    parse: (value) => value as Record<string, number>,
  },
  sqlite: {
    select: (accountId, grams) => sql`(select json_group_object(gram, files) from name_grams
      where account_id = ${accountId} and block = ${sql.lit(COUNTS_BLOCK)} and ${IN_LIST.sqlite('gram', grams)})`,
    parse: (value) => JSON.parse(value as string),
  },
}

/**
 * What the database tests of a name before the search tests it (`foldName`), so that it sends only the rows
 * that may match: names with a character other than ASCII, which only the search folds, and the names whose
 * ASCII letters lower-cased contain the query, when it is all ASCII (`nearMatches`; else null, and no name of
 * ASCII alone matches). Exact for ASCII names, whose folding is just that.
 */
type NearMatch = (query: unknown) => RawBuilder<SqlBool>

/** The query as `NearMatch` takes it: folded, and null unless all ASCII. */
const nearMatches = (folded: string) => (/[^\p{ASCII}]/u.test(folded) ? null : folded)

const NEAR_MATCH: Record<Engine, NearMatch> = {
  // Lower-cased in the C collation, which lower-cases ASCII alone whatever the database's locale (translate()
  // would too, at ten times the cost).
  postgres: (query) =>
    sql<SqlBool>`(octet_length(name) <> length(name) or strpos(lower(name collate "C"), ${query}) > 0)`,
  // SQLite's lower() is ASCII's alone.
  sqlite: (query) =>
    sql<SqlBool>`(length(cast(name as blob)) <> length(name) or instr(lower(name), ${query}) > 0)`,
}
