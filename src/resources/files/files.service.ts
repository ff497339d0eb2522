// Files: metadata in the database (files.repository.ts), bytes in the BlobStore under `blobKeyOf(...)`. A
// file's folder must be the account's, and the folder's file count moves with every file that enters or
// leaves it, in the same transaction.
import type { BlobStore } from '../../platform/blob/blob-store.ts'
import type { Transaction, Transactor } from '../../platform/db/database.ts'
import { isForeignKeyViolation } from '../../platform/db/errors.ts'
import { notFound } from '../../platform/errors.ts'
import { newId } from '../../platform/ids.ts'
import { nonBlankName } from '../../platform/names.ts'
import type { FoldersRepository } from '../folders/folders.repository.ts'
import type { EventLog } from '../webhooks/events.ts'
import { type FaultLog, type FileContent, fileContent } from './file-content.ts'
import type { FileListOptions, FilePage, FilesRepository, StoredFile } from './files.repository.ts'
import { readTextHead, type TextHead } from './text-head.ts'
import type { TrashService } from './trash.service.ts'

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

export interface FileUpdate {
  name?: string
  /** null moves the file to root. */
  folderId?: string | null
}

/** The event files record, and what from: the file as the change leaves it (trash.service.ts records the rest). */
export interface FileEvents {
  'file.created': StoredFile
}

export class FilesService {
  readonly #transaction: Transactor
  readonly #files: FilesRepository
  readonly #folders: FoldersRepository
  readonly #blobs: BlobStore
  readonly #events: EventLog<FileEvents>
  readonly #trash: TrashService

  constructor(deps: {
    transaction: Transactor
    files: FilesRepository
    folders: FoldersRepository
    blobs: BlobStore
    /** Records file.created, in the transactions that make files. */
    events: EventLog<FileEvents>
    /** Where deleted files go. */
    trash: TrashService
  }) {
    this.#transaction = deps.transaction
    this.#files = deps.files
    this.#folders = deps.folders
    this.#blobs = deps.blobs
    this.#events = deps.events
    this.#trash = deps.trash
  }

  /**
   * The account's files, newest first, optionally in one folder and matching a name search (see
   * name-search.ts). An absent or foreign folder is "not found"; that takes a second query only when the page
   * comes back empty, since a file of the account in the folder proves the folder is the account's.
   */
  async list(accountId: string, options: FileListOptions): Promise<FilePage<StoredFile>> {
    const page = await this.#files.list(accountId, options)
    if (page.items.length === 0 && options.folderId !== undefined) {
      await this.#folders.assertOwned(accountId, options.folderId)
    }
    return page
  }

  /**
   * Records a file whose bytes are already stored under `blobKey`. `alongside` runs in the same transaction,
   * after the file's row: what must exist together with the file (a file request's Submission) or not at all.
   */
  async create(
    input: NewFile,
    alongside?: (trx: Transaction, file: { id: string; createdAt: number }) => Promise<void>,
  ): Promise<StoredFile> {
    const now = Date.now()
    const id = input.id ?? newId('fil', now)
    let seq: number
    try {
      seq = await this.#transaction(async (trx) => {
        if (input.folderId !== null) await this.#folders.assertOwned(input.accountId, input.folderId, trx)
        const inserted = await this.#files.insert(trx, { ...input, id, createdAt: now })
        await this.#folders.adjustCount(trx, input.folderId, 'file_count', 1)
        await alongside?.(trx, { id, createdAt: inserted.createdAt })
        const audience = await this.#events.audience(trx, input.accountId, 'file.created')
        if (audience)
          await this.#events.record(
            trx,
            audience,
            await this.#files.inTransaction(trx, input.accountId, [id]),
          )
        return inserted.seq
      })
    } catch (error) {
      if (isForeignKeyViolation(error)) throw notFound(`Folder ${input.folderId}`)
      throw error
    }
    // The file is made whatever this does: a chunk left unwritten is the name index job's to write.
    await this.#files.indexChunkFilled(input.accountId, seq).catch(() => {})
    return this.get(input.accountId, id)
  }

  /** The account's file; another account's file is "not found". */
  async get(accountId: string, fileId: string): Promise<StoredFile> {
    const file = await this.#files.byId(accountId, fileId)
    if (!file) throw notFound(`File ${fileId}`)
    return file
  }

  /**
   * Renames and/or moves a file. A move changes both folders' counts in the same transaction. The first
   * statement updates the file row, which locks it: a concurrent move of the same file waits, then reads
   * the folder this one left it in, so the counts stay exact.
   */
  async update(accountId: string, fileId: string, change: FileUpdate): Promise<StoredFile> {
    const name = change.name === undefined ? undefined : nonBlankName(change.name, 'name')
    try {
      await this.#transaction(async (trx) => {
        const current = await this.#files.touch(trx, accountId, fileId, name)
        if (!current) throw notFound(`File ${fileId}`)
        const target = change.folderId
        if (target === undefined || target === current.folderId) return
        if (target !== null) await this.#folders.assertOwned(accountId, target, trx)
        await this.#files.move(trx, accountId, fileId, target)
        // Counters in a fixed order: two files moving crosswise between the same folders would otherwise
        // each hold one folder row and wait for the other's.
        const changes: [string | null, number][] = [
          [current.folderId, -1],
          [target, 1],
        ]
        changes.sort(([x], [y]) => ((x ?? '') < (y ?? '') ? -1 : 1))
        for (const [folderId, delta] of changes) {
          await this.#folders.adjustCount(trx, folderId, 'file_count', delta)
        }
      })
    } catch (error) {
      if (isForeignKeyViolation(error)) throw notFound(`Folder ${change.folderId}`)
      throw error
    }
    return this.get(accountId, fileId)
  }

  /**
   * Moves those of `fileIds` that are the account's into the folder (null: root), in one transaction with
   * every folder's count, and returns their ids in request order; others are skipped, as `deleteMany` skips
   * them. A folder that is absent or another account's is "not found" and moves nothing.
   */
  async moveMany(accountId: string, fileIds: string[], folderId: string | null): Promise<string[]> {
    const ids = [...new Set(fileIds)]
    if (ids.length === 0) return []
    try {
      const found = await this.#transaction(async (trx) => {
        if (folderId !== null) await this.#folders.assertOwned(accountId, folderId, trx)
        const current = await this.#files.touchMany(trx, accountId, ids)
        const moving = current.filter((file) => file.folderId !== folderId)
        if (moving.length === 0) return current
        await this.#files.moveMany(
          trx,
          accountId,
          moving.map((file) => file.id),
          folderId,
        )
        const deltas = new Map<string | null, number>([[folderId, moving.length]])
        for (const file of moving) deltas.set(file.folderId, (deltas.get(file.folderId) ?? 0) - 1)
        // A fixed order, as in `update`, so that concurrent writers never lock the same folders crosswise.
        for (const target of [...deltas.keys()].sort((x, y) => ((x ?? '') < (y ?? '') ? -1 : 1))) {
          await this.#folders.adjustCount(trx, target, 'file_count', deltas.get(target) ?? 0)
        }
        return current
      })
      const moved = new Set(found.map((file) => file.id))
      return ids.filter((id) => moved.has(id))
    } catch (error) {
      if (isForeignKeyViolation(error)) throw notFound(`Folder ${folderId}`)
      throw error
    }
  }

  /** Those of `fileIds` that are the account's, in request order; others are left out. */
  async findMany(accountId: string, fileIds: string[]): Promise<StoredFile[]> {
    return this.#files.byIds(accountId, [...new Set(fileIds)])
  }

  /** Deletes one file of the account: to the trash, or for good without one (trash.service.ts). */
  async delete(accountId: string, fileId: string, log: FaultLog): Promise<{ id: string }> {
    const deleted = await this.#trash.discard(accountId, [fileId], log)
    if (deleted.length === 0) throw notFound(`File ${fileId}`)
    return { id: fileId }
  }

  /**
   * Deletes those of `fileIds` that are the account's and returns their ids, in request order; others are
   * skipped (trash.service.ts).
   */
  deleteMany(accountId: string, fileIds: string[], log: FaultLog): Promise<string[]> {
    return this.#trash.discard(accountId, fileIds, log)
  }

  /** The account's file and a way to stream its bytes (file-content.ts). */
  async content(accountId: string, fileId: string, log: FaultLog): Promise<FileContent> {
    return fileContent(this.#blobs, await this.get(accountId, fileId), log)
  }

  /** The first `maxBytes` of the account's file as text, for its page; undefined when they are not text. */
  async textHead(
    accountId: string,
    fileId: string,
    maxBytes: number,
    log: FaultLog,
  ): Promise<TextHead | undefined> {
    return readTextHead(await this.content(accountId, fileId, log), maxBytes)
  }

  /** The WebP preview of the account's image file; "not found" when it has none. */
  async previewContent(accountId: string, fileId: string, log: FaultLog): Promise<FileContent> {
    const file = await this.get(accountId, fileId)
    if (!file.preview) throw notFound(`A preview of file ${fileId}`)
    const { blobKey, contentType, size } = file.preview
    return fileContent(
      this.#blobs,
      {
        id: file.id,
        name: `${file.name}.webp`,
        contentType,
        size,
        // A file's preview never changes, so the file's checksum names it too.
        sha256: file.sha256 === null ? null : `preview-${file.sha256}`,
        createdAt: file.createdAt,
        blobKey,
      },
      log,
    )
  }
}
