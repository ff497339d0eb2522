// Folders: flat, owned by one account, names unique per account ignoring case. Their file and request counts
// are kept exact by the services that move things in and out (folders.repository.ts).
import type { Transaction, Transactor } from '../../platform/db/database.ts'
import { isUniqueViolation } from '../../platform/db/errors.ts'
import type { Page } from '../../platform/db/pagination.ts'
import { conflict, notFound } from '../../platform/errors.ts'
import { faultPoint } from '../../platform/fault-points.ts'
import { newId } from '../../platform/ids.ts'
import { nonBlankName } from '../../platform/names.ts'
import type { Folder, FoldersRepository } from './folders.repository.ts'

/** Folder names are stored trimmed. */
const cleanName = (name: string): string => nonBlankName(name, 'name').trim()

/** The conflict of a name the account already has, naming that folder as it is spelled ("scans" clashes with "Scans"). */
const duplicateName = (name: string, existing: string | undefined) =>
  conflict(
    existing === undefined || existing === name
      ? `A folder named "${name}" already exists.`
      : `A folder named "${existing}" already exists (folder names ignore case).`,
    'Choose another name.',
  )

/**
 * What a folder holds besides its name, which moves to root when the folder is deleted: its files and its file
 * requests (their repositories, handed over by wiring.ts).
 */
export interface FolderContents {
  moveAllToRoot(trx: Transaction, folderId: string): Promise<void>
}

/**
 * The end of a folder's link when the folder is deleted (the shares module's FolderSharesService): the link goes
 * with the folder, recorded in the audit log as deleted, and its views and downloads stay in the account's
 * totals and days. Declared here so that folders, which links point at, do not point back at shares.
 */
export interface FolderLinkEnd {
  endWithFolder(trx: Transaction, accountId: string, folderId: string): Promise<void>
}

export class FoldersService {
  readonly #transaction: Transactor
  readonly #folders: FoldersRepository
  readonly #contents: FolderContents[]
  readonly #folderLink: FolderLinkEnd

  constructor(deps: {
    transaction: Transactor
    folders: FoldersRepository
    contents: FolderContents[]
    folderLink: FolderLinkEnd
  }) {
    this.#transaction = deps.transaction
    this.#folders = deps.folders
    this.#contents = deps.contents
    this.#folderLink = deps.folderLink
  }

  list(accountId: string, page: { cursor?: string; limit: number }): Promise<Page<Folder>> {
    return this.#folders.list(accountId, page)
  }

  /** The account's first `limit` folders in alphabetical order, for a menu or a sidebar. */
  byName(accountId: string, limit: number): Promise<Folder[]> {
    return this.#folders.byName(accountId, limit)
  }

  async get(accountId: string, folderId: string): Promise<Folder> {
    const folder = await this.#folders.get(accountId, folderId)
    if (!folder) throw notFound(`Folder ${folderId}`)
    return folder
  }

  async create(accountId: string, rawName: string): Promise<Folder> {
    const name = cleanName(rawName)
    const now = Date.now()
    const folder = { id: newId('fld', now), accountId, name, createdAt: now }
    try {
      await this.#folders.insert(folder)
    } catch (error) {
      if (isUniqueViolation(error)) throw duplicateName(name, await this.#folders.spellingOf(accountId, name))
      throw error
    }
    return { id: folder.id, name, createdAt: now, fileCount: 0, requestCount: 0 }
  }

  async rename(accountId: string, folderId: string, rawName: string): Promise<Folder> {
    const name = cleanName(rawName)
    try {
      if (!(await this.#folders.rename(accountId, folderId, name))) throw notFound(`Folder ${folderId}`)
    } catch (error) {
      if (isUniqueViolation(error)) throw duplicateName(name, await this.#folders.spellingOf(accountId, name))
      throw error
    }
    return this.get(accountId, folderId)
  }

  /**
   * Deletes the folder only; its files and requests move to root in the same transaction, and its link goes with
   * it (what the link counted stays in the account's totals).
   */
  async delete(accountId: string, folderId: string): Promise<{ id: string; deleted: true }> {
    await this.#transaction(async (trx) => {
      await this.#folders.assertOwned(accountId, folderId, trx)
      for (const contents of this.#contents) await contents.moveAllToRoot(trx, folderId)
      await this.#folderLink.endWithFolder(trx, accountId, folderId)
      await this.#folders.delete(trx, folderId)
    })
    faultPoint('folder-deleted')
    return { id: folderId, deleted: true }
  }
}
