// Files' SQL. Every read joins the folder, the share and the preview in the same query, so a page of files is one round
// trip. A file by id comes through a per-process cache (read-path/cached-lookup.ts) and, on PostgreSQL, a
// lookup that reads the ids asked for in one turn together (read-path/id-lookup.ts); a search finds a page's
// ids first (name-search.ts) and then reads the files the same way.
import {
  type Expression,
  type ExpressionBuilder,
  type Kysely,
  type RawBuilder,
  type SelectQueryBuilder,
  type SqlBool,
  sql,
} from 'kysely'
import type { Db, Transaction } from '../../platform/db/database.ts'
import type { Engine } from '../../platform/db/engine.ts'
import { decodeCursor, encodeCursor, type Page, toPage } from '../../platform/db/pagination.ts'
import { type CachedLookup, cachedLookup } from '../../platform/db/read-path/cached-lookup.ts'
import { idLookup, idsLookup } from '../../platform/db/read-path/id-lookup.ts'
import { preparePages } from '../../platform/db/read-path/prepared.ts'
import type { Database } from '../../platform/db/schema.ts'
import { invalid } from '../../platform/errors.ts'
import { type Folder, JOINED_FOLDER_COLUMNS, joinedFolder } from '../folders/folders.repository.ts'
import { DEFAULT_FILE_ORDER, decodePosition, encodePosition, type FileOrder, ORDERS } from './file-order.ts'
import { type FilePreview, JOINED_PREVIEW_COLUMNS, joinedPreview } from './file-previews.repository.ts'
import { CHUNK_SIZE, folderGram, foldName, gramsOf } from './search/name-grams.ts'
import { NameIndex } from './search/name-index.repository.ts'
import { nameSearch } from './search/name-search.ts'
import { isActiveState, type ShareState, shareStateOfRow } from './share-state.ts'

export type { FilePreview }

export interface FileShareSummary {
  id: string
  publicId: string
  state: ShareState
  isActive: boolean
  expiresAt: number | null
  viewCount: number
  downloadCount: number
}

export interface StoredFile {
  id: string
  accountId: string
  name: string
  contentType: string
  size: number
  blobKey: string
  sha256: string | null
  createdAt: number
  folderId: string | null
  folder: Folder | null
  share: FileShareSummary | null
  /** The image preview processing made, if any. */
  preview: Omit<FilePreview, 'fileId'> | null
}

/** A file in the trash (files/trash.service.ts): the file as it was, with when it was deleted and when it goes for good. */
export interface TrashedFile extends StoredFile {
  trashedAt: number
  purgeAt: number
}

/** A file row to insert; its bytes are already stored under `blobKey`. */
export interface NewFileRow {
  id: string
  accountId: string
  folderId: string | null
  name: string
  contentType: string
  size: number
  blobKey: string
  sha256: string | null
  createdAt: number
}

export interface FileListOptions {
  /** Case-insensitive substring of the name. */
  query?: string
  /** Only files in this folder. */
  folderId?: string
  /** The order (file-order.ts); newest first by default, the only order of a search. */
  order?: FileOrder
  /** The page after this cursor (`nextCursor` of the page before). */
  cursor?: string
  /** The page before this cursor (`prevCursor` of the page after), instead of `cursor`. */
  before?: string
  limit: number
}

/** A page of a list, with the cursor of the page before it when there is one (the web app's Previous). */
export interface FilePage<T> extends Page<T> {
  prevCursor: string | null
}

/** What a zip (zip.service.ts) needs of a file: where its bytes are, their size and CRC-32, its name and date. */
export interface ZipFileRow {
  id: string
  name: string
  size: number
  blobKey: string
  /** Null for files made before upload processing stored it. */
  crc32: number | null
  createdAt: number
}

const ZIP_COLUMNS = [
  'files.id',
  'files.name',
  'files.size',
  'files.blob_key',
  'files.crc32',
  'files.created_at',
] as const

function toZipFileRow(row: {
  id: string
  name: string
  size: number
  blob_key: string
  crc32: number | null
  created_at: number
}): ZipFileRow {
  return {
    id: row.id,
    name: row.name,
    size: Number(row.size),
    blobKey: row.blob_key,
    crc32: row.crc32 === null ? null : Number(row.crc32),
    createdAt: Number(row.created_at),
  }
}

/** File rows remembered per process by default (FILE_CACHE_SIZE): about a kilobyte each. */
const DEFAULT_CACHE_SIZE = 10_000
/** However quiet the epoch, a cached file is read again after this long (see epoch-cache.ts). */
const FILE_CACHE_MAX_AGE_MS = 60_000

/** files ⟕ folders ⟕ shares, with every column a File needs. */
export function selectFiles(db: Kysely<Database>) {
  let base = baseSelects.get(db)
  if (!base) {
    base = buildSelectFiles(db)
    baseSelects.set(db, base)
  }
  return base
}

// Builders are immutable, so the base query (its joins and nineteen parsed column references) is built once
// per database and shared: every list request extends it instead of parsing it again.
const baseSelects = new WeakMap<Kysely<Database>, ReturnType<typeof buildSelectFiles>>()

function buildSelectFiles(db: Kysely<Database>) {
  return db
    .selectFrom('files')
    .leftJoin('folders', 'folders.id', 'files.folder_id')
    .leftJoin('shares', 'shares.file_id', 'files.id')
    .leftJoin('file_previews', 'file_previews.file_id', 'files.id')
    .select([
      'files.id',
      'files.account_id',
      'files.name',
      'files.content_type',
      'files.size',
      'files.blob_key',
      'files.sha256',
      'files.created_at',
      'files.folder_id',
      'files.trashed_at',
      'files.purge_at',
      ...JOINED_FOLDER_COLUMNS,
      'shares.id as share_id',
      'shares.public_id as share_public_id',
      'shares.is_active as share_is_active',
      'shares.expires_at as share_expires_at',
      'shares.view_count as share_view_count',
      'shares.download_count as share_download_count',
      'shares.max_downloads as share_max_downloads',
      ...JOINED_PREVIEW_COLUMNS,
    ])
}

type FileRow = ReturnType<typeof selectFiles> extends SelectQueryBuilder<Database, never, infer O> ? O : never

function toStoredFile(row: FileRow, now = Date.now()): StoredFile {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    contentType: row.content_type,
    size: Number(row.size),
    blobKey: row.blob_key,
    sha256: row.sha256,
    createdAt: Number(row.created_at),
    folderId: row.folder_id,
    folder: joinedFolder(row),
    share:
      row.share_id === null || row.share_public_id === null
        ? null
        : joinedShare({ ...row, share_id: row.share_id, share_public_id: row.share_public_id }, now),
    preview: joinedPreview(row),
  }
}

function toTrashedFile(row: FileRow, now: number): TrashedFile {
  return { ...toStoredFile(row, now), trashedAt: Number(row.trashed_at), purgeAt: Number(row.purge_at) }
}

function joinedShare(
  row: FileRow & { share_id: string; share_public_id: string },
  now: number,
): FileShareSummary {
  const state = shareStateOfRow(
    {
      is_active: Boolean(row.share_is_active),
      expires_at: row.share_expires_at,
      download_count: Number(row.share_download_count),
      max_downloads: row.share_max_downloads,
    },
    now,
  )
  return {
    id: row.share_id,
    publicId: row.share_public_id,
    state,
    isActive: isActiveState(state),
    expiresAt: row.share_expires_at === null ? null : Number(row.share_expires_at),
    viewCount: Number(row.share_view_count),
    downloadCount: Number(row.share_download_count),
  }
}

/** The file's key of an order as SQL: a column, or the name as the name indexes hold it (migration 0031). */
function orderKey(engine: Engine, order: FileOrder): RawBuilder<unknown> {
  const { key } = ORDERS[order]
  if (key !== 'name') return sql.ref(`files.${key}`)
  return engine === 'postgres' ? sql`lower(files.name collate "C")` : sql`lower(files.name)`
}

/**
 * The page of `query` (files of an account, maybe of a folder) in `order`: the `fetch` files after the one whose
 * key is `from` (its key value and id), or before it when `back`, read in the order that walks away from it. A
 * page read back comes nearest first: the caller turns it round.
 */
function orderedPage<O>(
  query: SelectQueryBuilder<Database, 'files', O>,
  engine: Engine,
  order: FileOrder,
  from: { key: unknown; id: string } | undefined,
  back: boolean,
  fetch: number,
): SelectQueryBuilder<Database, 'files', O> {
  const { direction } = ORDERS[order]
  // Walking back reads the other way.
  const forwards = back ? (direction === 'asc' ? 'desc' : 'asc') : direction
  const key = orderKey(engine, order)
  const id = sql.ref('files.id')
  let q = query
  if (from !== undefined) {
    const [past, pastOrEqual] = forwards === 'desc' ? (['<', '<='] as const) : (['>', '>='] as const)
    // As pagination.ts's keyset: the first condition bounds the index range, the second trims the ties.
    q = q.where((eb: ExpressionBuilder<Database, 'files'>) =>
      eb.and([eb(key, pastOrEqual, from.key), eb.or([eb(key, past, from.key), eb(id, past, from.id)])]),
    )
  }
  return q.orderBy(key, forwards).orderBy(id, forwards).limit(sql.lit(fetch))
}

/** Where a file is: in use (every endpoint of the spec shows it) or in the trash (files/trash.service.ts). */
export type FilePlace = 'in use' | 'trashed'

/** `query` narrowed to the files in `place`. */
function inPlace<Q extends { where(condition: Expression<SqlBool>): Q }>(query: Q, place: FilePlace): Q {
  return query.where(
    place === 'in use' ? sql<SqlBool>`files.trashed_at is null` : sql<SqlBool>`files.trashed_at is not null`,
  )
}

/** Whether the row is a file of the account in use: another account's file, or one in the trash, is not found. */
function isAccountsInUse(row: FileRow, accountId: string | undefined): boolean {
  return row.account_id === accountId && row.trashed_at === null
}

/** A search's order is its own: newest first, forward only (search/name-search.ts). */
const searchesComeNewestFirst = () =>
  invalid(
    'A search comes newest first: "sort" and "before" apply to lists without "query".',
    'Leave out "sort", or "query".',
  )

/** The file a position in a list names was deleted since. */
const positionGone = () =>
  invalid(
    'The file this page was to start from has been deleted.',
    'Start again from the first page (leave out the cursor).',
  )

export class FilesRepository {
  readonly #db: Kysely<Database>
  readonly #engine: Engine
  readonly #byId: CachedLookup<FileRow>
  readonly #listPage
  readonly #listInFolderPage
  readonly #search: ReturnType<typeof nameSearch>
  readonly #names: NameIndex
  readonly #zipFolderPage

  /** `cacheSize`: the files kept in memory; 0 reads every one from the database. */
  constructor(db: Db, options: { cacheSize?: number } = {}) {
    this.#db = db.kysely
    this.#engine = db.engine
    // Only the account's own files are found: the lookup is by id alone (so PostgreSQL can batch it), and
    // a caller keeps its row only if its account owns it.
    const byIds = (ids: string[]) => selectFiles(db.kysely).where('files.id', 'in', ids)
    const lookUp = idLookup(db, 'files_by_ids', byIds)
    const lookUpList = idsLookup(db, 'files_by_id_list', byIds)
    this.#byId = cachedLookup(db, {
      watched: 'files_folders_shares',
      maxEntries: options.cacheSize ?? DEFAULT_CACHE_SIZE,
      maxAgeMs: FILE_CACHE_MAX_AGE_MS,
      read: async (fileId, accountId) => {
        const row = await lookUp(fileId)
        return row && isAccountsInUse(row, accountId) ? row : undefined
      },
      readMany: async (fileIds, accountId) => {
        const rows = await lookUpList(fileIds)
        return new Map(rows.filter((row) => isAccountsInUse(row, accountId)).map((row) => [row.id, row]))
      },
    })
    // A list's page is its files' order keys, which the order indexes hold (the database reads no row); the
    // files then come from memory, or are read together. Reading the page's rows with their folder, share and
    // preview cost PostgreSQL a millisecond a page (101 rows, three joins), however often they were shown.
    const inAccount = (accountId: string) =>
      db.kysely
        .selectFrom('files')
        .select(['files.id', 'files.created_at'])
        .where('files.account_id', '=', accountId)
        .where('files.trashed_at', 'is', null)
    this.#listPage = preparePages(db, 'files_list', 'files', 1, inAccount)
    this.#listInFolderPage = preparePages(
      db,
      'files_list_folder',
      'files',
      2,
      (accountId: string, folderId: string) => inAccount(accountId).where('files.folder_id', '=', folderId),
    )
    // FILE_CACHE_SIZE=0 turns off the name index's rows kept in memory too: every search reads them.
    this.#search = nameSearch(db, options.cacheSize === 0 ? { cachedRows: 0 } : {})
    this.#names = new NameIndex(db)
    // The folder's order index (folder_id, account_id, created_at, id), as the folder's list walks it.
    this.#zipFolderPage = preparePages(
      db,
      'files_zip_folder',
      'files',
      2,
      (accountId: string, folderId: string) =>
        db.kysely
          .selectFrom('files')
          .select(ZIP_COLUMNS)
          .where('files.account_id', '=', accountId)
          .where('files.folder_id', '=', folderId)
          .where('files.trashed_at', 'is', null),
    )
  }

  /** The account's file; undefined when there is none or it is another account's. */
  async byId(accountId: string, fileId: string): Promise<StoredFile | undefined> {
    const row = await this.#byId.get(fileId, accountId)
    return row && toStoredFile(row)
  }

  /** Those of `fileIds` that are the account's, in their order; others are left out. Read together. */
  async byIds(accountId: string, fileIds: string[]): Promise<StoredFile[]> {
    const rows = await this.#byId.getMany(fileIds, accountId)
    const now = Date.now()
    return rows.flatMap((row) => (row ? [toStoredFile(row, now)] : []))
  }

  /** The account's files, newest first, optionally in one folder and matching a name search. */
  async list(accountId: string, options: FileListOptions): Promise<FilePage<StoredFile>> {
    const { query, folderId, cursor, limit } = options
    const order = options.order ?? DEFAULT_FILE_ORDER
    if (query !== undefined) {
      if (order !== DEFAULT_FILE_ORDER || options.before !== undefined) throw searchesComeNewestFirst()
      const page = await this.#search({ accountId, query, folderId, cursor, limit })
      // A file deleted since the search is left out; the cursor still comes from the search, so the walk goes
      // on past it. Those not in memory are read together: one statement for the page, whatever its size.
      return { items: await this.byIds(accountId, page.items), nextCursor: page.nextCursor, prevCursor: null }
    }
    if (order !== DEFAULT_FILE_ORDER || options.before !== undefined) {
      return this.#ordered(accountId, folderId, order, options, limit)
    }
    const keys = await (folderId === undefined
      ? this.#listPage([accountId], cursor, limit)
      : this.#listInFolderPage([accountId, folderId], cursor, limit))
    const page = toPage(keys, limit, (key) => key.id)
    const first = page.items[0]
    // As a search's: a file deleted in between is left out, and the cursor goes on past it.
    return {
      items: await this.byIds(accountId, page.items),
      nextCursor: page.nextCursor,
      prevCursor: cursor !== undefined && first ? encodePosition({ order, fileId: first }) : null,
    }
  }

  /**
   * A page in another order than newest first, or a page before a cursor (file-order.ts): along the order's
   * index, from the file the cursor names, whose key is read by its id.
   */
  async #ordered(
    accountId: string,
    folderId: string | undefined,
    order: FileOrder,
    options: Pick<FileListOptions, 'cursor' | 'before'>,
    limit: number,
  ): Promise<FilePage<StoredFile>> {
    const back = options.before !== undefined
    const raw = options.before ?? options.cursor
    const key = orderKey(this.#engine, order)
    let from: { key: unknown; id: string } | undefined
    if (raw !== undefined) {
      const position = decodePosition(raw, order)
      const row = await this.#db
        .selectFrom('files')
        .select([key.as('key'), 'files.id'])
        .where('files.id', '=', position.fileId)
        .where('files.account_id', '=', accountId)
        .where('files.trashed_at', 'is', null)
        .executeTakeFirst()
      if (!row) throw positionGone()
      from = { key: row.key, id: row.id }
    }
    let base = this.#db
      .selectFrom('files')
      .select(['files.id', 'files.created_at'])
      .where('files.account_id', '=', accountId)
      .where('files.trashed_at', 'is', null)
    if (folderId !== undefined) base = base.where('files.folder_id', '=', folderId)
    const rows = await orderedPage(base, this.#engine, order, from, back, limit + 1).execute()
    const more = rows.length > limit
    const kept = rows.slice(0, limit)
    if (back) kept.reverse()
    const first = kept[0]
    const last = kept.at(-1)
    // Newest first, the next page's cursor is the quick walk's own (pagination.ts).
    const after = (row: { id: string; created_at: number }) =>
      order === DEFAULT_FILE_ORDER
        ? encodeCursor({ createdAt: Number(row.created_at), id: row.id })
        : encodePosition({ order, fileId: row.id })
    return {
      items: await this.byIds(
        accountId,
        kept.map((row) => row.id),
      ),
      // Back from a page, that page follows; forward, one follows if more rows were found.
      nextCursor: last && (back || more) ? after(last) : null,
      prevCursor:
        first && (back ? more : raw !== undefined) ? encodePosition({ order, fileId: first.id }) : null,
    }
  }

  /**
   * Those of `fileIds` that are the account's, in use or in the trash as `place` says, as the caller's
   * transaction sees them (an event's snapshot).
   */
  async inTransaction(
    trx: Transaction,
    accountId: string,
    fileIds: string[],
    place: FilePlace = 'in use',
  ): Promise<StoredFile[]> {
    if (fileIds.length === 0) return []
    const rows = await inPlace(buildSelectFiles(trx), place)
      .where('files.account_id', '=', accountId)
      .where('files.id', 'in', fileIds)
      .execute()
    const now = Date.now()
    return rows.map((row) => toStoredFile(row, now))
  }

  /** Whether a file with this id exists, in any account. */
  async exists(fileId: string): Promise<boolean> {
    const row = await this.#db.selectFrom('files').select('id').where('id', '=', fileId).executeTakeFirst()
    return row !== undefined
  }

  /** The summary of the account's file, read in the caller's transaction. */
  async summary(trx: Transaction, accountId: string, fileId: string) {
    const row = await trx
      .selectFrom('files')
      .select(['id', 'name', 'content_type', 'size'])
      .where('id', '=', fileId)
      .where('account_id', '=', accountId)
      .where('trashed_at', 'is', null)
      .executeTakeFirst()
    return row && { id: row.id, name: row.name, contentType: row.content_type, size: Number(row.size) }
  }

  /**
   * Inserts the file, numbered in its account for the name index, and returns when it was made: `createdAt`,
   * or just after the account's last file when that is later (`NameIndex.allocate`). A folder that does not
   * exist (any more) is a foreign-key violation.
   */
  async insert(trx: Transaction, file: NewFileRow): Promise<{ createdAt: number; seq: number }> {
    const { seq, createdAt } = await this.#names.allocate(trx, file.accountId, file.createdAt)
    await trx
      .insertInto('files')
      .values({
        id: file.id,
        account_id: file.accountId,
        folder_id: file.folderId,
        name: file.name,
        content_type: file.contentType,
        size: file.size,
        blob_key: file.blobKey,
        sha256: file.sha256,
        created_at: createdAt,
        updated_at: createdAt,
        seq,
      })
      .execute()
    return { createdAt, seq }
  }

  /** After a file was inserted and committed: adds to the name index the chunk it filled, if it filled one. */
  async indexChunkFilled(accountId: string, seq: number): Promise<void> {
    if ((seq + 1) % CHUNK_SIZE === 0) await this.#names.foldFull(accountId)
  }

  /** Records the generated preview of a file, once: a second record of it is ignored. */
  async insertPreview(trx: Transaction, preview: FilePreview): Promise<void> {
    await trx
      .insertInto('file_previews')
      .values({
        file_id: preview.fileId,
        blob_key: preview.blobKey,
        content_type: preview.contentType,
        width: preview.width,
        height: preview.height,
        size: preview.size,
        created_at: Date.now(),
      })
      .onConflict((oc) => oc.column('file_id').doNothing())
      .execute()
  }

  /**
   * Marks the account's file as changed now, renaming it if `name` is given, and returns the folder it is
   * in; undefined when the account has no such file. Written first in a transaction, this takes the row's
   * lock, so a concurrent change of the same file waits for the transaction to end.
   */
  async touch(
    trx: Transaction,
    accountId: string,
    fileId: string,
    name?: string,
  ): Promise<{ folderId: string | null } | undefined> {
    const row = await trx
      .updateTable('files')
      .set({ updated_at: Date.now(), ...(name === undefined ? {} : { name }) })
      .where('id', '=', fileId)
      .where('account_id', '=', accountId)
      .where('trashed_at', 'is', null)
      .returning(['folder_id', 'seq'])
      .executeTakeFirst()
    if (row && name !== undefined) {
      await this.#names.refile(trx, accountId, [{ seq: row.seq, grams: gramsOf(foldName(name)) }])
    }
    return row && { folderId: row.folder_id }
  }

  async move(trx: Transaction, accountId: string, fileId: string, folderId: string | null): Promise<void> {
    await this.moveMany(trx, accountId, [fileId], folderId)
  }

  /**
   * `touch` for several of the account's files at once: locks their rows (PostgreSQL) and answers the folder
   * each is in; ids that are not the account's are left out.
   */
  async touchMany(
    trx: Transaction,
    accountId: string,
    fileIds: string[],
  ): Promise<{ id: string; folderId: string | null }[]> {
    const rows = await trx
      .updateTable('files')
      .set({ updated_at: Date.now() })
      .where('account_id', '=', accountId)
      .where('id', 'in', fileIds)
      .where('trashed_at', 'is', null)
      .returning(['id', 'folder_id'])
      .execute()
    return rows.map((row) => ({ id: row.id, folderId: row.folder_id }))
  }

  async moveMany(
    trx: Transaction,
    accountId: string,
    fileIds: string[],
    folderId: string | null,
  ): Promise<void> {
    const moved = await trx
      .updateTable('files')
      .set({ folder_id: folderId })
      .where('id', 'in', fileIds)
      .returning('seq')
      .execute()
    // To root: no new gram, but the old folder's slots stay behind all the same.
    const grams = new Set(folderId === null ? [] : [folderGram(folderId)])
    await this.#names.refile(
      trx,
      accountId,
      moved.map((row) => ({ seq: row.seq, grams })),
    )
  }

  /** Moves every file of the folder to root (the folder is being deleted). */
  async moveAllToRoot(trx: Transaction, folderId: string): Promise<void> {
    await trx.updateTable('files').set({ folder_id: null }).where('folder_id', '=', folderId).execute()
  }

  /**
   * Takes the row locks of those of the account's files that are in `place` (PostgreSQL; SQLite has one writer
   * at a time) and answers their ids, so that the rest of a deleting transaction works on rows that stay as they
   * are until it ends: a restore at the same moment waits, then finds the file gone.
   */
  async claim(trx: Transaction, accountId: string, fileIds: string[], place: FilePlace): Promise<string[]> {
    const rows = await inPlace(trx.updateTable('files').set({ updated_at: Date.now() }), place)
      .where('account_id', '=', accountId)
      .where('id', 'in', fileIds)
      .returning('id')
      .execute()
    return rows.map((row) => row.id)
  }

  /**
   * Every blob the account's given files own: their contents and their generated previews. Read inside the
   * deleting transaction, before the rows (previews cascade with their file) are gone.
   */
  async blobKeys(
    trx: Transaction,
    accountId: string,
    fileIds: string[],
    place: FilePlace,
  ): Promise<string[]> {
    const rows = await inPlace(
      trx
        .selectFrom('files')
        .leftJoin('file_previews', 'file_previews.file_id', 'files.id')
        .select(['files.blob_key', 'file_previews.blob_key as preview_key']),
      place,
    )
      .where('files.account_id', '=', accountId)
      .where('files.id', 'in', fileIds)
      .execute()
    return rows.flatMap((row) =>
      row.preview_key === null ? [row.blob_key] : [row.blob_key, row.preview_key],
    )
  }

  /**
   * Deletes for good those of the files that are the account's and in `place` (shares and previews follow by
   * foreign key).
   */
  async deleteMany(trx: Transaction, accountId: string, fileIds: string[], place: FilePlace) {
    const rows = await inPlace(trx.deleteFrom('files'), place)
      .where('account_id', '=', accountId)
      .where('id', 'in', fileIds)
      .returning(['id', 'folder_id', 'seq', 'name'])
      .execute()
    await this.#names.markStale(
      trx,
      accountId,
      rows.map((row) => row.seq),
    )
    return rows.map((row) => ({ id: row.id, folderId: row.folder_id, name: row.name }))
  }

  /**
   * Moves those of the account's files in use to the trash, until `purgeAt`; answers the files moved and the
   * folder each was in (whose count the caller lowers). The rows keep their folder, link and previews.
   */
  async trash(
    trx: Transaction,
    accountId: string,
    fileIds: string[],
    at: { trashedAt: number; purgeAt: number },
  ): Promise<{ id: string; folderId: string | null; name: string }[]> {
    const rows = await trx
      .updateTable('files')
      .set({ trashed_at: at.trashedAt, purge_at: at.purgeAt, updated_at: at.trashedAt })
      .where('account_id', '=', accountId)
      .where('id', 'in', fileIds)
      .where('trashed_at', 'is', null)
      .returning(['id', 'folder_id', 'name'])
      .execute()
    return rows.map((row) => ({ id: row.id, folderId: row.folder_id, name: row.name }))
  }

  /**
   * Takes those of the account's files that are in the trash out of it; answers each with the folder it goes
   * back to (null, root, when its folder was deleted meanwhile: the foreign key set it).
   */
  async restore(
    trx: Transaction,
    accountId: string,
    fileIds: string[],
  ): Promise<{ id: string; folderId: string | null; name: string }[]> {
    const rows = await trx
      .updateTable('files')
      .set({ trashed_at: null, purge_at: null, updated_at: Date.now() })
      .where('account_id', '=', accountId)
      .where('id', 'in', fileIds)
      .where('trashed_at', 'is not', null)
      .returning(['id', 'folder_id', 'name'])
      .execute()
    return rows.map((row) => ({ id: row.id, folderId: row.folder_id, name: row.name }))
  }

  /**
   * A page of the account's trash, the files deleted last first, along the trash's index (account_id,
   * trashed_at, id); the cursor is of the time a file was deleted, as other lists' are of the time it was made.
   */
  async trashPage(accountId: string, page: { cursor?: string; limit: number }): Promise<Page<TrashedFile>> {
    const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor)
    let query = selectFiles(this.#db)
      .where('files.account_id', '=', accountId)
      .where('files.trashed_at', 'is not', null)
    if (after) {
      query = query.where((eb) =>
        eb.and([
          eb('files.trashed_at', '<=', after.createdAt),
          eb.or([eb('files.trashed_at', '<', after.createdAt), eb('files.id', '<', after.id)]),
        ]),
      )
    }
    const rows = await query
      .orderBy('files.trashed_at', 'desc')
      .orderBy('files.id', 'desc')
      .limit(page.limit + 1)
      .execute()
    const now = Date.now()
    const items = rows.slice(0, page.limit).map((row) => toTrashedFile(row, now))
    const last = items.at(-1)
    return {
      items,
      nextCursor:
        rows.length > page.limit && last ? encodeCursor({ createdAt: last.trashedAt, id: last.id }) : null,
    }
  }

  /** The account's file in the trash; undefined when the trash holds no such file. */
  async trashedById(accountId: string, fileId: string): Promise<TrashedFile | undefined> {
    const row = await selectFiles(this.#db)
      .where('files.id', '=', fileId)
      .where('files.account_id', '=', accountId)
      .where('files.trashed_at', 'is not', null)
      .executeTakeFirst()
    return row && toTrashedFile(row, Date.now())
  }

  /** How many files the account's trash holds, and their bytes. */
  async trashSize(accountId: string): Promise<{ files: number; bytes: number }> {
    const row = await this.#db
      .selectFrom('files')
      .select((eb) => [eb.fn.countAll<number>().as('files'), eb.fn.sum<number>('size').as('bytes')])
      .where('account_id', '=', accountId)
      .where('trashed_at', 'is not', null)
      .executeTakeFirstOrThrow()
    return { files: Number(row.files), bytes: Number(row.bytes ?? 0) }
  }

  /** Up to `limit` of the account's files in the trash, to delete for good. */
  async trashedIds(accountId: string, limit: number): Promise<string[]> {
    const rows = await this.#db
      .selectFrom('files')
      .select('id')
      .where('account_id', '=', accountId)
      .where('trashed_at', 'is not', null)
      .limit(limit)
      .execute()
    return rows.map((row) => row.id)
  }

  /**
   * Every file of the accounts an admin deleted, due for the purge at `now` (those in the trash too): their blobs
   * go as any purged file's do. The accounts are read first (a few rows, most often none), then each one's files
   * by the account's index, so that a purge with no account to delete touches no file.
   */
  async dueFilesOfDeletedAccounts(now: number): Promise<void> {
    const deleting = await this.#db
      .selectFrom('accounts')
      .select('id')
      .where('deleting_at', 'is not', null)
      .execute()
    for (const { id } of deleting) {
      await this.#db
        .updateTable('files')
        .set((eb) => ({ trashed_at: eb.fn.coalesce('trashed_at', eb.val(now)), purge_at: now }))
        .where('account_id', '=', id)
        .where((eb) => eb.or([eb('purge_at', 'is', null), eb('purge_at', '>', now)]))
        .execute()
    }
  }

  /** Up to `limit` files of any account whose time in the trash ended by `now`, along the purge's index. */
  async dueForPurge(now: number, limit: number): Promise<{ id: string; accountId: string }[]> {
    const rows = await this.#db
      .selectFrom('files')
      .select(['id', 'account_id'])
      .where('purge_at', '<=', now)
      .orderBy('purge_at')
      .limit(limit)
      .execute()
    return rows.map((row) => ({ id: row.id, accountId: row.account_id }))
  }

  /** Those of `fileIds` that are the account's, for a zip, in the order asked (others left out); by primary key. */
  async zipRows(accountId: string, fileIds: string[]): Promise<ZipFileRow[]> {
    if (fileIds.length === 0) return []
    const rows = await this.#db
      .selectFrom('files')
      .select(ZIP_COLUMNS)
      .where('files.account_id', '=', accountId)
      .where('files.id', 'in', fileIds)
      .where('files.trashed_at', 'is', null)
      .execute()
    const byId = new Map(rows.map((row) => [row.id, toZipFileRow(row)]))
    return fileIds.flatMap((id) => byId.get(id) ?? [])
  }

  /** A page of the folder's files for a zip, newest first, as the folder's list orders them. */
  async zipRowsInFolder(
    accountId: string,
    folderId: string,
    cursor: string | undefined,
    limit: number,
  ): Promise<Page<ZipFileRow>> {
    return toPage(await this.#zipFolderPage([accountId, folderId], cursor, limit), limit, toZipFileRow)
  }

  /** Records the CRC-32 of a file's bytes (upload processing computes it once). */
  async setCrc32(trx: Transaction, fileId: string, crc32: number): Promise<void> {
    await trx.updateTable('files').set({ crc32 }).where('id', '=', fileId).execute()
  }

  /** Records that a file's SHA-256 and CRC-32 are still to be computed (files/file-digests.job.ts). */
  async recordPendingDigests(trx: Transaction, fileId: string): Promise<void> {
    await trx
      .insertInto('file_digests_pending')
      .values({ file_id: fileId, recorded_at: Date.now() })
      .onConflict((oc) => oc.column('file_id').doNothing())
      .execute()
  }

  /** Files whose digests are still to be computed, oldest first, with their blobs. */
  async pendingDigests(limit: number): Promise<{ id: string; blobKey: string; size: number }[]> {
    const rows = await this.#db
      .selectFrom('file_digests_pending')
      .innerJoin('files', 'files.id', 'file_digests_pending.file_id')
      .select(['files.id', 'files.blob_key', 'files.size'])
      .orderBy('file_digests_pending.recorded_at')
      .limit(limit)
      .execute()
    return rows.map((row) => ({ id: row.id, blobKey: row.blob_key, size: Number(row.size) }))
  }

  /** Records a file's digests, or, without them, only that there is nothing more to compute. */
  async settleDigests(fileId: string, digests?: { sha256: string; crc32: number }): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      if (digests) await trx.updateTable('files').set(digests).where('id', '=', fileId).execute()
      await trx.deleteFrom('file_digests_pending').where('file_id', '=', fileId).execute()
    })
  }
}
