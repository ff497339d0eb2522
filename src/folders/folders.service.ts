// Folders: flat, owned by one account, names unique per account ignoring case. The file and request
// counts are columns kept exact by the services that move things in and out, in the same transaction.
import type { Kysely, Transaction } from 'kysely'
import type { Db } from '../db/database.ts'
import { isUniqueViolation } from '../db/errors.ts'
import { type Page, toPage } from '../db/pagination.ts'
import { preparePages } from '../db/prepared.ts'
import type { Database } from '../db/schema.ts'
import { conflict, invalid, notFound } from '../errors.ts'
import { newId } from '../ids.ts'

export interface Folder {
  id: string
  name: string
  createdAt: number
  fileCount: number
  requestCount: number
}

type Executor = Kysely<Database> | Transaction<Database>

export const FOLDER_COLUMNS = ['id', 'name', 'created_at', 'file_count', 'request_count'] as const

type FolderRow = Pick<Database['folders'], 'id' | 'name' | 'created_at'> & {
  file_count: number
  request_count: number
}

export function toFolder(row: FolderRow): Folder {
  return {
    id: row.id,
    name: row.name,
    createdAt: row.created_at,
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

function cleanName(name: string): string {
  const trimmed = name.trim()
  if (trimmed.length === 0) throw invalid('The folder name must not be blank.')
  return trimmed
}

const duplicateName = (name: string) =>
  conflict(`A folder named "${name}" already exists.`, 'Choose another name; folder names ignore case.')

/**
 * Checks, inside the caller's transaction, that `folderId` names a folder of `accountId`; another account's
 * folder is "not found", like an absent one. A folder deleted concurrently after this check makes the
 * caller's write fail its foreign key, which `isForeignKeyViolation` turns into the same 404.
 */
export async function assertOwnedFolder(db: Executor, accountId: string, folderId: string): Promise<void> {
  const row = await db
    .selectFrom('folders')
    .select('id')
    .where('id', '=', folderId)
    .where('account_id', '=', accountId)
    .executeTakeFirst()
  if (!row) throw notFound(`Folder ${folderId}`)
}

/** Adds `delta` to a folder's counter atomically in the database; never read-modify-write in JS. */
export async function adjustFolderCount(
  db: Executor,
  folderId: string | null,
  column: 'file_count' | 'request_count',
  delta: number,
): Promise<void> {
  if (folderId === null || delta === 0) return
  await db
    .updateTable('folders')
    .set((eb) => ({ [column]: eb(column, '+', delta) }))
    .where('id', '=', folderId)
    .execute()
}

export class FoldersService {
  readonly #db: Kysely<Database>
  readonly #listPage

  constructor(db: Db) {
    this.#db = db.kysely
    this.#listPage = preparePages(db, 'folders_list', 'folders', 1, (accountId: string) =>
      db.kysely.selectFrom('folders').select(FOLDER_COLUMNS).where('folders.account_id', '=', accountId),
    )
  }

  async list(accountId: string, page: { cursor?: string; limit: number }): Promise<Page<Folder>> {
    const rows = await this.#listPage([accountId], page.cursor, page.limit)
    return toPage(rows, page.limit, toFolder)
  }

  async get(accountId: string, folderId: string): Promise<Folder> {
    const row = await this.#db
      .selectFrom('folders')
      .select(FOLDER_COLUMNS)
      .where('id', '=', folderId)
      .where('account_id', '=', accountId)
      .executeTakeFirst()
    if (!row) throw notFound(`Folder ${folderId}`)
    return toFolder(row)
  }

  async create(accountId: string, rawName: string): Promise<Folder> {
    const name = cleanName(rawName)
    const now = Date.now()
    const row = {
      id: newId('fld', now),
      account_id: accountId,
      name,
      name_key: name.toLowerCase(),
      created_at: now,
    }
    try {
      await this.#db.insertInto('folders').values(row).execute()
    } catch (error) {
      if (isUniqueViolation(error)) throw duplicateName(name)
      throw error
    }
    return { id: row.id, name, createdAt: now, fileCount: 0, requestCount: 0 }
  }

  async rename(accountId: string, folderId: string, rawName: string): Promise<Folder> {
    const name = cleanName(rawName)
    try {
      const result = await this.#db
        .updateTable('folders')
        .set({ name, name_key: name.toLowerCase() })
        .where('id', '=', folderId)
        .where('account_id', '=', accountId)
        .executeTakeFirst()
      if (result.numUpdatedRows === 0n) throw notFound(`Folder ${folderId}`)
    } catch (error) {
      if (isUniqueViolation(error)) throw duplicateName(name)
      throw error
    }
    return this.get(accountId, folderId)
  }

  /** Deletes the folder only; its files and requests move to root in the same transaction. */
  async delete(accountId: string, folderId: string): Promise<{ id: string; deleted: true }> {
    await this.#db.transaction().execute(async (trx) => {
      await assertOwnedFolder(trx, accountId, folderId)
      await trx.updateTable('files').set({ folder_id: null }).where('folder_id', '=', folderId).execute()
      await trx
        .updateTable('file_requests')
        .set({ folder_id: null })
        .where('folder_id', '=', folderId)
        .execute()
      await trx.deleteFrom('folders').where('id', '=', folderId).execute()
    })
    return { id: folderId, deleted: true }
  }
}
