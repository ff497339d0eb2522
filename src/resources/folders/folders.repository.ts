// Folders' SQL: the rows, their file and request counters, and the columns a file or request row joins from
// its folder. The counters are moved atomically in SQL, in the transaction of the change they count.
import { type Kysely, sql } from 'kysely'
import type { Db, Transaction } from '../../platform/db/database.ts'
import { type Page, toPage } from '../../platform/db/pagination.ts'
import { type CachedLookup, cachedLookup } from '../../platform/db/read-path/cached-lookup.ts'
import { PreparedShapes, prepare, preparePages } from '../../platform/db/read-path/prepared.ts'
import type { Database } from '../../platform/db/schema.ts'
import { notFound } from '../../platform/errors.ts'

export interface Folder {
  id: string
  name: string
  createdAt: number
  fileCount: number
  requestCount: number
}

const FOLDER_COLUMNS = ['id', 'name', 'created_at', 'file_count', 'request_count'] as const

type FolderRow = Pick<Database['folders'], 'id' | 'name' | 'created_at'> & {
  file_count: number
  request_count: number
}

function toFolder(row: FolderRow): Folder {
  return {
    id: row.id,
    name: row.name,
    createdAt: Number(row.created_at),
    fileCount: Number(row.file_count),
    requestCount: Number(row.request_count),
  }
}

/** The columns of a folder joined to a file or request row (`leftJoin('folders', ...)`), under these names. */
export const JOINED_FOLDER_COLUMNS = [
  'folders.name as folder_name',
  'folders.created_at as folder_created_at',
  'folders.file_count as folder_file_count',
  'folders.request_count as folder_request_count',
] as const

interface JoinedFolderRow {
  folder_id: string | null
  folder_name: string | null
  folder_created_at: number | null
  folder_file_count: number | null
  folder_request_count: number | null
}

/** The Folder embedded in a file or request row that selected `JOINED_FOLDER_COLUMNS`, or null at root. */
export function joinedFolder(row: JoinedFolderRow): Folder | null {
  if (row.folder_id === null || row.folder_name === null) return null
  return {
    id: row.folder_id,
    name: row.folder_name,
    createdAt: Number(row.folder_created_at),
    fileCount: Number(row.folder_file_count),
    requestCount: Number(row.folder_request_count),
  }
}

export type FolderCounter = 'file_count' | 'request_count'

/** Menus of folders remembered per process: those of recently active accounts (up to 200 folders each). */
const MENU_CACHE_SIZE = 1_000
/** However quiet the epoch, a menu is read again after this long (see epoch-cache.ts). */
const MENU_CACHE_MAX_AGE_MS = 60_000

/** The key that makes folder names unique per account: the name ignoring case (the unique index's column). */
const nameKeyOf = (name: string) => name.toLowerCase()

export class FoldersRepository {
  readonly #db: Kysely<Database>
  readonly #listPage
  readonly #menus: CachedLookup<Folder[]>
  readonly #get

  constructor(db: Db) {
    this.#db = db.kysely
    // The menu of folders and a folder's own row are read on every view of the files app: compiled once, read
    // outside any transaction (Db.read), the menu's size a constant of its statement (PostgreSQL keeps a plan
    // only for a constant LIMIT). The menu is kept in memory while none of the account's files, folders and
    // shares has changed (its counts change with them): on PostgreSQL it saves a page view a round trip.
    const byName = new PreparedShapes(db)
    this.#menus = cachedLookup(db, {
      watched: 'files_folders_shares',
      maxEntries: MENU_CACHE_SIZE,
      maxAgeMs: MENU_CACHE_MAX_AGE_MS,
      read: async (limit, accountId) => {
        const rows = await byName.read<FolderRow>(`folders_by_name_${limit}`, [accountId], (account) =>
          db.kysely
            .selectFrom('folders')
            .select(FOLDER_COLUMNS)
            .where('account_id', '=', account as string)
            .orderBy('name_key')
            .limit(sql.lit(Number(limit))),
        )
        return rows.map(toFolder)
      },
    })
    this.#get = prepare(db, 'folder_by_id', 2, (accountId: string, folderId: string) =>
      db.kysely
        .selectFrom('folders')
        .select(FOLDER_COLUMNS)
        .where('id', '=', folderId)
        .where('account_id', '=', accountId),
    )
    this.#listPage = preparePages(db, 'folders_list', 'folders', 1, (accountId: string) =>
      db.kysely.selectFrom('folders').select(FOLDER_COLUMNS).where('folders.account_id', '=', accountId),
    )
  }

  async list(accountId: string, page: { cursor?: string; limit: number }): Promise<Page<Folder>> {
    const rows = await this.#listPage([accountId], page.cursor, page.limit)
    return toPage(rows, page.limit, toFolder)
  }

  /**
   * The account's first `limit` folders by name, ignoring case (the unique index on the name serves it).
   * `limit` is a constant of the caller's: each is a statement of its own.
   */
  async byName(accountId: string, limit: number): Promise<Folder[]> {
    // A copy: the cached menu is shared by every caller.
    return [...((await this.#menus.get(String(limit), accountId)) ?? [])]
  }

  async get(accountId: string, folderId: string): Promise<Folder | undefined> {
    const [row] = await this.#get(accountId, folderId)
    return row && toFolder(row)
  }

  /** Inserts an empty folder; a name the account already has, in any case, is a unique violation. */
  async insert(folder: { id: string; accountId: string; name: string; createdAt: number }): Promise<void> {
    await this.#db
      .insertInto('folders')
      .values({
        id: folder.id,
        account_id: folder.accountId,
        name: folder.name,
        name_key: nameKeyOf(folder.name),
        created_at: folder.createdAt,
      })
      .execute()
  }

  /** The account's folder whose name is `name` ignoring case, as it is spelled; undefined when there is none. */
  async spellingOf(accountId: string, name: string): Promise<string | undefined> {
    const row = await this.#db
      .selectFrom('folders')
      .select('name')
      .where('account_id', '=', accountId)
      .where('name_key', '=', nameKeyOf(name))
      .executeTakeFirst()
    return row?.name
  }

  /** False when the account has no such folder; a name it already has is a unique violation. */
  async rename(accountId: string, folderId: string, name: string): Promise<boolean> {
    const result = await this.#db
      .updateTable('folders')
      .set({ name, name_key: nameKeyOf(name) })
      .where('id', '=', folderId)
      .where('account_id', '=', accountId)
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  /**
   * Checks, inside the caller's transaction if given, that `folderId` names a folder of `accountId`; another
   * account's folder is "not found", like an absent one. A folder deleted concurrently after this check makes
   * the caller's write fail its foreign key, which the caller turns into the same 404 (db/errors.ts).
   */
  async assertOwned(accountId: string, folderId: string, trx?: Transaction): Promise<void> {
    const row = await (trx ?? this.#db)
      .selectFrom('folders')
      .select('id')
      .where('id', '=', folderId)
      .where('account_id', '=', accountId)
      .executeTakeFirst()
    if (!row) throw notFound(`Folder ${folderId}`)
  }

  /** Adds `delta` to a folder's counter atomically in the database; never read-modify-write in JS. */
  async adjustCount(trx: Transaction, folderId: string | null, counter: FolderCounter, delta: number) {
    if (folderId === null || delta === 0) return
    await trx
      .updateTable('folders')
      .set((eb) => ({ [counter]: eb(counter, '+', delta) }))
      .where('id', '=', folderId)
      .execute()
  }

  /** Deletes the folder row; what it held must have been moved out in the same transaction. */
  async delete(trx: Transaction, folderId: string): Promise<void> {
    await trx.deleteFrom('folders').where('id', '=', folderId).execute()
  }
}
