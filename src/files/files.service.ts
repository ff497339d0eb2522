// Files: metadata in the database, bytes in the BlobStore under `blobKeyOf(...)`. Every read joins the
// folder and the share in the same query, so a page of files is one round trip (a search finds the page's
// ids first: see file-search.ts).
import type { Readable } from 'node:stream'
import type { CompiledQuery, Kysely, SelectQueryBuilder, Transaction } from 'kysely'
import { BlobNotFoundError, type BlobStore, type ByteRange } from '../blob/blob-store.ts'
import { batchedLookup } from '../db/batched-lookup.ts'
import type { Db } from '../db/database.ts'
import { EpochCache } from '../db/epoch-cache.ts'
import { isForeignKeyViolation } from '../db/errors.ts'
import { type Page, toPage } from '../db/pagination.ts'
import { prepare, preparePages } from '../db/prepared.ts'
import type { Database } from '../db/schema.ts'
import { AppError, invalid, notFound } from '../errors.ts'
import {
  adjustFolderCount,
  assertOwnedFolder,
  type Folder,
  JOINED_FOLDER_COLUMNS,
  joinedFolder,
} from '../folders/folders.service.ts'
import { newId } from '../ids.ts'
import type { ServiceDeps } from '../services.ts'
import { isShareActive } from '../shares/share-state.ts'
import { fileSearch } from './file-search.ts'

export interface FileShareSummary {
  id: string
  publicId: string
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
}

export interface NewFile {
  accountId: string
  folderId: string | null
  name: string
  contentType: string
  size: number
  blobKey: string
  sha256: string | null
  /** Defaults to a new `fil_` id; uploads choose it up front to name the blob. */
  id?: string
}

export interface FileListOptions {
  /** Case-insensitive substring of the name. */
  query?: string
  /** Only files in this folder, which must be the account's. */
  folderId?: string
  cursor?: string
  limit: number
}

export interface FileUpdate {
  name?: string
  /** null moves the file to root. */
  folderId?: string | null
}

/** The bytes of a file, opened only when the caller is about to send them. */
export interface FileContent {
  file: StoredFile
  /** Streams the whole blob or the inclusive byte range; a blob missing from the store is a 404. */
  open(range?: ByteRange): Promise<Readable>
}

/** Where services report faults a client cannot act on (Fastify's request logger fits). */
export interface FaultLog {
  error(details: object, message: string): void
}

export function blobKeyOf(accountId: string, fileId: string): string {
  return `files/${accountId}/${fileId}`
}

/**
 * Every blob the given files own: their contents and their generated previews. Deletion removes them all.
 * Read inside the deleting transaction, before the rows (previews cascade with their file) are gone.
 */
async function blobKeysOf(
  trx: Transaction<Database>,
  accountId: string,
  fileIds: string[],
): Promise<string[]> {
  const rows = await trx
    .selectFrom('files')
    .leftJoin('file_previews', 'file_previews.file_id', 'files.id')
    .select(['files.blob_key', 'file_previews.blob_key as preview_key'])
    .where('files.account_id', '=', accountId)
    .where('files.id', 'in', fileIds)
    .execute()
  return rows.flatMap((row) => (row.preview_key === null ? [row.blob_key] : [row.blob_key, row.preview_key]))
}

function cleanName(name: string): string {
  if (name.trim().length === 0) throw invalid('The request body "name" must not be blank.')
  return name
}

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
      ...JOINED_FOLDER_COLUMNS,
      'shares.id as share_id',
      'shares.public_id as share_public_id',
      'shares.is_active as share_is_active',
      'shares.expires_at as share_expires_at',
      'shares.view_count as share_view_count',
      'shares.download_count as share_download_count',
    ])
}

export type FileRow =
  ReturnType<typeof selectFiles> extends SelectQueryBuilder<Database, never, infer O> ? O : never

export function toStoredFile(row: FileRow, now = Date.now()): StoredFile {
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
        : {
            id: row.share_id,
            publicId: row.share_public_id,
            isActive: isShareActive(Boolean(row.share_is_active), row.share_expires_at, now),
            expiresAt: row.share_expires_at === null ? null : Number(row.share_expires_at),
            viewCount: Number(row.share_view_count),
            downloadCount: Number(row.share_download_count),
          },
  }
}

/** The list without a search, in the account or in one of its folders, prepared once per shape. */
function plainListQuery(db: Db) {
  const inAccount = (accountId: string) => selectFiles(db.kysely).where('files.account_id', '=', accountId)
  const all = preparePages(db, 'files_list', 'files', 1, inAccount)
  const inFolder = preparePages(db, 'files_list_folder', 'files', 2, (accountId: string, folderId: string) =>
    inAccount(accountId).where('files.folder_id', '=', folderId),
  )
  return (accountId: string, folderId: string | undefined, cursor: string | undefined, limit: number) =>
    folderId === undefined ? all([accountId], cursor, limit) : inFolder([accountId, folderId], cursor, limit)
}

/** File rows remembered per process by default (FILE_CACHE_SIZE): about a kilobyte each. */
const DEFAULT_CACHE_SIZE = 10_000
/** However quiet the epoch, a cached file is read again after this long (see EpochCache). */
const FILE_CACHE_MAX_AGE_MS = 60_000

/**
 * GET /files/{id}, every download and every search result start here. Rows are cached per process, stamped
 * with `Db.metadataEpoch` of the account: on PostgreSQL the read is a round trip that costs more than the
 * rest of the request, and a file, its folder and its share change far less often than they are read. A
 * change by this process is seen by its next request, one by another process as soon as its notification
 * arrives (as for API keys). Only the account's own files are cached; a miss is never remembered.
 */
function fileByIdQuery(
  db: Db,
  cacheSize: number,
): (fileId: string, accountId: string) => Promise<FileRow | undefined> {
  const read = fileByIdRead(db)
  if (cacheSize === 0) return read
  const cache = new EpochCache<FileRow>({ maxEntries: cacheSize, maxAgeMs: FILE_CACHE_MAX_AGE_MS })
  return async (fileId, accountId) => {
    // Keyed by account too, so that asking for another account's file can neither find nor disturb its entry.
    const key = `${accountId}/${fileId}`
    const epoch = db.metadataEpoch(accountId)
    const now = Date.now()
    const cached = cache.get(key, epoch, now)
    if (cached) return cached
    const row = await read(fileId, accountId)
    if (row) cache.set(key, row, epoch, now)
    return row
  }
}

/**
 * The uncached read of `fileByIdQuery`, compiled once. On PostgreSQL the files asked for in one turn are read
 * together (see batched-lookup.ts) and each caller keeps its own only if its account owns it; SQLite reads
 * in-process, with no round trip to save.
 */
function fileByIdRead(db: Db): (fileId: string, accountId: string) => Promise<FileRow | undefined> {
  if (db.engine === 'postgres') {
    const lookUp = batchedLookup(filesByIdsQuery(db), LOOKUP_SIZES.at(-1) as number)
    return async (fileId, accountId) => {
      const row = await lookUp(fileId)
      return row?.account_id === accountId ? row : undefined
    }
  }
  const query = prepare(db, 'file_by_id', 2, (fileId: string, accountId: string) =>
    selectFiles(db.kysely).where('files.id', '=', fileId).where('files.account_id', '=', accountId),
  )
  return async (fileId, accountId) => (await query(fileId, accountId))[0]
}

/** The id counts of the PostgreSQL lookup statements; a batch is padded up to the next. */
const LOOKUP_SIZES = [1, 2, 4, 8, 16, 32]

/**
 * PostgreSQL: the files with the given ids (at most 32), by a statement prepared for each of a few id
 * counts, `files.id in ($1, ..., $n)`. PostgreSQL reuses a prepared statement's plan only when that plan
 * costs no more than one made for the actual values; `id = any($1)` with its array of unknown length never
 * does, and planning it for every execution cost twice the query itself.
 */
function filesByIdsQuery(db: Db): (ids: string[]) => Promise<FileRow[]> {
  const compiled = new Map<number, CompiledQuery<FileRow>>()
  return (ids) => {
    const size = LOOKUP_SIZES.find((n) => n >= ids.length)
    if (size === undefined) throw new Error(`filesByIds: ${ids.length} ids, at most ${LOOKUP_SIZES.at(-1)}`)
    let query = compiled.get(size)
    if (!query) {
      query = selectFiles(db.kysely).where('files.id', 'in', Array<string>(size).fill('')).compile()
      compiled.set(size, query)
    }
    // Padded with the last id: a repeated value in an IN list matches its row once.
    const parameters = Array.from({ length: size }, (_, i) => ids[Math.min(i, ids.length - 1)])
    return db.read<FileRow>({ ...query, parameters }, `files_by_ids_${size}`)
  }
}

export class FilesService {
  readonly #db: Kysely<Database>
  readonly #blobs: BlobStore
  readonly #fileById: ReturnType<typeof fileByIdQuery>
  readonly #listPlain: ReturnType<typeof plainListQuery>
  readonly #search: ReturnType<typeof fileSearch>

  /** `cacheSize`: the files kept in memory (see fileByIdQuery); 0 reads every one from the database. */
  constructor(deps: Pick<ServiceDeps, 'db' | 'blobs'> & { cacheSize?: number }) {
    this.#db = deps.db.kysely
    this.#blobs = deps.blobs
    this.#fileById = fileByIdQuery(deps.db, deps.cacheSize ?? DEFAULT_CACHE_SIZE)
    this.#listPlain = plainListQuery(deps.db)
    this.#search = fileSearch(deps.db)
  }

  /**
   * The account's files, newest first, optionally in one folder and matching a name search (see
   * file-search.ts). An absent or foreign folder is "not found"; that takes a second query only when the page
   * comes back empty, since a file of the account in the folder proves the folder is the account's.
   */
  async list(accountId: string, options: FileListOptions): Promise<Page<StoredFile>> {
    const { query, folderId, cursor, limit } = options
    if (query !== undefined) {
      const page = await this.#search({ accountId, query, folderId, cursor, limit })
      if (page.items.length === 0 && folderId !== undefined)
        await assertOwnedFolder(this.#db, accountId, folderId)
      // Read through the lookup GET /files/{id} uses. A file deleted since the search is left out; the cursor
      // still comes from the search, so the walk goes on past it.
      const rows = await Promise.all(page.items.map((id) => this.#fileById(id, accountId)))
      const now = Date.now()
      return {
        items: rows.flatMap((row) => (row ? [toStoredFile(row, now)] : [])),
        nextCursor: page.nextCursor,
      }
    }
    const rows = await this.#listPlain(accountId, folderId, cursor, limit)
    if (rows.length === 0 && folderId !== undefined) await assertOwnedFolder(this.#db, accountId, folderId)
    const now = Date.now()
    return toPage(rows, limit, (row) => toStoredFile(row, now))
  }

  /**
   * Records a file whose bytes are already stored under `blobKey`. The folder must belong to the account;
   * its file count moves in the same transaction.
   */
  async create(input: NewFile): Promise<StoredFile> {
    const now = Date.now()
    const id = input.id ?? newId('fil', now)
    try {
      await this.#db.transaction().execute(async (trx) => {
        if (input.folderId !== null) await assertOwnedFolder(trx, input.accountId, input.folderId)
        await trx
          .insertInto('files')
          .values({
            id,
            account_id: input.accountId,
            folder_id: input.folderId,
            name: input.name,
            content_type: input.contentType,
            size: input.size,
            blob_key: input.blobKey,
            sha256: input.sha256,
            created_at: now,
            updated_at: now,
          })
          .execute()
        await adjustFolderCount(trx, input.folderId, 'file_count', 1)
      })
    } catch (error) {
      if (isForeignKeyViolation(error)) throw notFound(`Folder ${input.folderId}`)
      throw error
    }
    return this.get(input.accountId, id)
  }

  /** The account's file; another account's file is "not found". */
  async get(accountId: string, fileId: string): Promise<StoredFile> {
    const row = await this.#fileById(fileId, accountId)
    if (!row) throw notFound(`File ${fileId}`)
    return toStoredFile(row)
  }

  /**
   * Renames and/or moves a file. A move changes both folders' counts in the same transaction. The first
   * statement updates the file row, which locks it: a concurrent move of the same file waits, then reads
   * the folder this one left it in, so the counts stay exact.
   */
  async update(accountId: string, fileId: string, change: FileUpdate): Promise<StoredFile> {
    const name = change.name === undefined ? undefined : cleanName(change.name)
    try {
      await this.#db.transaction().execute(async (trx) => {
        const current = await trx
          .updateTable('files')
          .set({ updated_at: Date.now(), ...(name === undefined ? {} : { name }) })
          .where('id', '=', fileId)
          .where('account_id', '=', accountId)
          .returning('folder_id')
          .executeTakeFirst()
        if (!current) throw notFound(`File ${fileId}`)
        const target = change.folderId
        if (target === undefined || target === current.folder_id) return
        if (target !== null) await assertOwnedFolder(trx, accountId, target)
        await trx.updateTable('files').set({ folder_id: target }).where('id', '=', fileId).execute()
        // Counters in a fixed order: two files moving crosswise between the same folders would otherwise
        // each hold one folder row and wait for the other's.
        const changes: [string | null, number][] = [
          [current.folder_id, -1],
          [target, 1],
        ]
        changes.sort(([x], [y]) => ((x ?? '') < (y ?? '') ? -1 : 1))
        for (const [folderId, delta] of changes) await adjustFolderCount(trx, folderId, 'file_count', delta)
      })
    } catch (error) {
      if (isForeignKeyViolation(error)) throw notFound(`Folder ${change.folderId}`)
      throw error
    }
    return this.get(accountId, fileId)
  }

  /** Deletes one file with its share and blobs; see `deleteMany`. */
  async delete(accountId: string, fileId: string, log: FaultLog): Promise<{ id: string }> {
    const deleted = await this.deleteMany(accountId, [fileId], log)
    if (deleted.length === 0) throw notFound(`File ${fileId}`)
    return { id: fileId }
  }

  /**
   * Deletes those of `fileIds` that are the account's and returns their ids, in request order; others are
   * skipped. The rows go in one transaction (shares follow by foreign key, folder counts drop with them);
   * the blobs are removed only after the commit, so a rolled-back delete never loses bytes. A blob that
   * cannot be removed is logged and left behind: the file is gone either way.
   */
  async deleteMany(accountId: string, fileIds: string[], log: FaultLog): Promise<string[]> {
    const ids = [...new Set(fileIds)]
    if (ids.length === 0) return []
    const { rows, keys } = await this.#db.transaction().execute(async (trx) => {
      const keys = await blobKeysOf(trx, accountId, ids)
      const deleted = await trx
        .deleteFrom('files')
        .where('account_id', '=', accountId)
        .where('id', 'in', ids)
        .returning(['id', 'folder_id', 'blob_key'])
        .execute()
      const perFolder = new Map<string, number>()
      for (const row of deleted) {
        if (row.folder_id !== null) perFolder.set(row.folder_id, (perFolder.get(row.folder_id) ?? 0) + 1)
      }
      // A fixed order, as in `update`, so that concurrent writers never lock the same folders crosswise.
      for (const folderId of [...perFolder.keys()].sort()) {
        await adjustFolderCount(trx, folderId, 'file_count', -(perFolder.get(folderId) ?? 0))
      }
      return { rows: deleted, keys }
    })
    await Promise.all(
      keys.map((blobKey) =>
        this.#blobs.delete(blobKey).catch((err: unknown) => {
          log.error({ err, blobKey }, 'could not delete the blob of a deleted file; it is orphaned')
        }),
      ),
    )
    const deletedIds = new Set(rows.map((row) => row.id))
    return ids.filter((id) => deletedIds.has(id))
  }

  /**
   * The file and a way to stream its bytes. A row whose blob is missing is a fault of the store: it is
   * logged, and the client is told the contents are not found.
   */
  async content(accountId: string, fileId: string, log: FaultLog): Promise<FileContent> {
    const file = await this.get(accountId, fileId)
    return {
      file,
      open: async (range) => {
        try {
          return await this.#blobs.get(file.blobKey, range)
        } catch (error) {
          if (!(error instanceof BlobNotFoundError)) throw error
          log.error({ fileId, blobKey: file.blobKey }, 'the blob of a file is missing from the store')
          throw new AppError('not_found', `The contents of file ${fileId} are not available.`)
        }
      },
    }
  }
}
