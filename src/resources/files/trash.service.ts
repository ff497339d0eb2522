// The trash: where a deleted file waits `TRASH_RETENTION_DAYS` before it goes for good. A file in the trash is gone
// from every endpoint of the spec (its row is marked, and every read of files in use leaves it out: lists, search,
// by id, its link's page), yet keeps its folder, its link with the link's counts and settings, and its bytes, so
// that a restore puts it back as it was. Its bytes count toward the account's until the purge removes them. With
// a retention of 0 there is no trash: a delete is final at once, as it was before the trash.
import { type Actor, type AuditLog, SYSTEM } from '../../platform/audit/audit-log.ts'
import type { Transaction, Transactor } from '../../platform/db/database.ts'
import type { Page } from '../../platform/db/pagination.ts'
import { notFound } from '../../platform/errors.ts'
import { faultPoint } from '../../platform/fault-points.ts'
import type { FoldersRepository } from '../folders/folders.repository.ts'
import type { BlobDeletionsService } from '../maintenance/blob-deletions.job.ts'
import type { EventLog } from '../webhooks/events.ts'
import type { FaultLog } from './file-content.ts'
import type { FilePlace, FilesRepository, StoredFile, TrashedFile } from './files.repository.ts'

const DAY_MS = 86_400_000
/** Files deleted for good in one transaction when the trash is emptied or purged. */
const BATCH = 100

/** The events of files leaving use and coming back, and what from (files.service.ts records file.created). */
export interface TrashEvents {
  /** A file was moved to the trash: as it was, with when it was deleted and when it goes for good. */
  'file.trashed': TrashedFile
  /** A file came back from the trash: as it is now. */
  'file.restored': StoredFile
  /** A file was deleted for good, with its link and bytes: as it was. */
  'file.deleted': StoredFile
}

/**
 * What the links of files counted, kept when the files go for good (the shares module's repository): declared
 * here so that files, which links point at, do not point back at shares.
 */
export interface LinkHistory {
  keepCountsOfFiles(trx: Transaction, accountId: string, fileIds: string[]): Promise<void>
}

export class TrashService {
  readonly #transaction: Transactor
  readonly #files: FilesRepository
  readonly #folders: FoldersRepository
  readonly #deletions: BlobDeletionsService
  readonly #events: EventLog<TrashEvents>
  readonly #linkHistory: LinkHistory
  readonly #audit: AuditLog
  readonly #retentionMs: number

  constructor(deps: {
    transaction: Transactor
    files: FilesRepository
    folders: FoldersRepository
    deletions: BlobDeletionsService
    /** Records file.trashed, file.restored and file.deleted, in the transactions that make those changes. */
    events: EventLog<TrashEvents>
    /** Keeps what the links of files deleted for good counted in their account's history. */
    linkHistory: LinkHistory
    /**
     * Records file.trashed, file.restored and file.deleted, one entry a file, a batch of files in one
     * statement, in the transactions that make those changes.
     */
    audit: AuditLog
    /** How long a deleted file stays in the trash; 0: no trash, deletes are final. */
    retentionDays: number
  }) {
    this.#transaction = deps.transaction
    this.#files = deps.files
    this.#folders = deps.folders
    this.#deletions = deps.deletions
    this.#events = deps.events
    this.#linkHistory = deps.linkHistory
    this.#audit = deps.audit
    this.#retentionMs = deps.retentionDays * DAY_MS
  }

  /** How many days a deleted file can be restored for; 0 when deletes are final. */
  get retentionDays(): number {
    return this.#retentionMs / DAY_MS
  }

  /**
   * Deletes those of `fileIds` that are the account's files in use, and returns their ids in request order;
   * others are skipped. With a trash they move to it, in one transaction with their folders' counts; without,
   * they go for good (`#deleteForGood`).
   */
  async discard(accountId: string, fileIds: string[], log: FaultLog): Promise<string[]> {
    const ids = [...new Set(fileIds)]
    if (ids.length === 0) return []
    const gone =
      this.#retentionMs === 0
        ? await this.#deleteForGood(accountId, ids, 'in use', { log })
        : await this.#moveToTrash(accountId, ids, Date.now())
    const goneIds = new Set(gone)
    return ids.filter((id) => goneIds.has(id))
  }

  /** The account's trash, the files deleted last first. */
  list(accountId: string, page: { cursor?: string; limit: number }): Promise<Page<TrashedFile>> {
    return this.#files.trashPage(accountId, page)
  }

  /** The account's file in the trash; one the trash does not hold is "not found". */
  async get(accountId: string, fileId: string): Promise<TrashedFile> {
    const file = await this.#files.trashedById(accountId, fileId)
    if (!file) throw notFound(`File ${fileId} in the trash`)
    return file
  }

  /** How many files the account's trash holds, and their bytes. */
  size(accountId: string): Promise<{ files: number; bytes: number }> {
    return this.#files.trashSize(accountId)
  }

  /**
   * Puts the account's file back where it was, with its link as it was; into the root when its folder was
   * deleted meanwhile. A file the trash does not hold (never deleted, gone for good, another account's) is
   * "not found".
   */
  async restore(accountId: string, fileId: string): Promise<StoredFile> {
    const [restored] = await this.restoreMany(accountId, [fileId])
    if (!restored) throw notFound(`File ${fileId} in the trash`)
    const file = await this.#files.byId(accountId, restored)
    if (!file) throw notFound(`File ${fileId}`)
    return file
  }

  /**
   * Restores those of `fileIds` that the account's trash holds, in one transaction with their folders' counts,
   * and returns their ids in request order; others (restored already, gone for good, another account's) are
   * skipped, as `discard` skips what it cannot delete. A delete's Undo restores its files this way.
   */
  async restoreMany(accountId: string, fileIds: string[]): Promise<string[]> {
    const ids = [...new Set(fileIds)]
    if (ids.length === 0) return []
    const restored = await this.#transaction(async (trx) => {
      const back = await this.#files.restore(trx, accountId, ids)
      await this.#recordEach(trx, accountId, 'file.restored', back)
      await this.#adjustFolderCounts(
        trx,
        back.map((file) => file.folderId),
        1,
      )
      const audience = await this.#events.audience(trx, accountId, 'file.restored')
      if (audience && back.length > 0) {
        const files = await this.#files.inTransaction(
          trx,
          accountId,
          back.map((file) => file.id),
        )
        await this.#events.record(trx, audience, files)
      }
      return new Set(back.map((file) => file.id))
    })
    return ids.filter((id) => restored.has(id))
  }

  /** Deletes the account's file in the trash for good; one the trash does not hold is "not found". */
  async deleteForever(accountId: string, fileId: string, log: FaultLog): Promise<{ id: string }> {
    const deleted = await this.#deleteForGood(accountId, [fileId], 'trashed', { log })
    if (deleted.length === 0) throw notFound(`File ${fileId} in the trash`)
    return { id: fileId }
  }

  /** Deletes every file of the account's trash for good, a batch to a transaction; returns how many. */
  async empty(accountId: string, log: FaultLog): Promise<number> {
    let count = 0
    for (;;) {
      const ids = await this.#files.trashedIds(accountId, BATCH)
      if (ids.length === 0) return count
      count += (await this.#deleteForGood(accountId, ids, 'trashed', { log })).length
    }
  }

  /**
   * Deletes for good the files whose time in the trash ended by `now`, a batch to a transaction; returns how
   * many. Each batch commits with its blobs recorded for removal, so a crash at any point loses nothing and
   * leaves the rest for the next run (the expired records' purge, one process at a time).
   */
  async purge(log: FaultLog, now = Date.now()): Promise<number> {
    await this.#files.dueFilesOfDeletedAccounts(now)
    let count = 0
    for (;;) {
      const due = await this.#files.dueForPurge(now, BATCH)
      if (due.length === 0) return count
      const byAccount = Map.groupBy(due, (file) => file.accountId)
      for (const [accountId, files] of byAccount) {
        const ids = files.map((file) => file.id)
        // The service's own doing, said outright: a pass run within a request would not be that request's.
        count += (await this.#deleteForGood(accountId, ids, 'trashed', { log, actor: SYSTEM })).length
      }
    }
  }

  async #moveToTrash(accountId: string, ids: string[], now: number): Promise<string[]> {
    const at = { trashedAt: now, purgeAt: now + this.#retentionMs }
    return this.#transaction(async (trx) => {
      const moved = await this.#files.trash(trx, accountId, ids, at)
      await this.#recordEach(trx, accountId, 'file.trashed', moved)
      await this.#adjustFolderCounts(
        trx,
        moved.map((file) => file.folderId),
        -1,
      )
      const audience = await this.#events.audience(trx, accountId, 'file.trashed')
      if (audience && moved.length > 0) {
        const files = await this.#files.inTransaction(
          trx,
          accountId,
          moved.map((file) => file.id),
          'trashed',
        )
        await this.#events.record(
          trx,
          audience,
          files.map((file) => ({ ...file, ...at })),
        )
      }
      return moved.map((file) => file.id)
    })
  }

  /**
   * Deletes for good those of `ids` that are the account's files in `place`, and returns their ids. The rows go
   * in one transaction (links follow by foreign key, what they counted stays in the account's history, folder
   * counts drop with files in use), which also records their blobs for removal; the blobs are removed after the
   * commit, so a rolled-back delete never loses bytes, and a crash before they are removed leaves them recorded
   * for the sweep (storage/blob-deletions.job.ts). The audit log records each file deleted, by `actor` when
   * given (the purge's system), else by the request in flight.
   */
  async #deleteForGood(
    accountId: string,
    fileIds: string[],
    place: FilePlace,
    { log, actor }: { log: FaultLog; actor?: Actor },
  ): Promise<string[]> {
    const { deleted, keys } = await this.#transaction(async (trx) => {
      // Locked first: what is read below stays true until the rows go (a restore at the same time waits).
      const ids = await this.#files.claim(trx, accountId, fileIds, place)
      if (ids.length === 0) return { deleted: [], keys: [] }
      const keys = await this.#files.blobKeys(trx, accountId, ids, place)
      // Read before the rows go: the event carries each file as it was, if this transaction deleted it.
      const audience = await this.#events.audience(trx, accountId, 'file.deleted')
      const before = audience ? await this.#files.inTransaction(trx, accountId, ids, place) : []
      await this.#linkHistory.keepCountsOfFiles(trx, accountId, ids)
      const deleted = await this.#files.deleteMany(trx, accountId, ids, place)
      await this.#recordEach(trx, accountId, 'file.deleted', deleted, actor)
      if (audience) {
        const gone = new Set(deleted.map((file) => file.id))
        await this.#events.record(
          trx,
          audience,
          before.filter((file) => gone.has(file.id)),
        )
      }
      // A file in the trash left its folder's count when it went there.
      if (place === 'in use') {
        await this.#adjustFolderCounts(
          trx,
          deleted.map((file) => file.folderId),
          -1,
        )
      }
      await this.#deletions.record(trx, keys)
      return { deleted, keys }
    })
    faultPoint('files-deleted')
    await this.#deletions.complete(keys, log)
    return deleted.map((file) => file.id)
  }

  /** One audit entry of `kind` for each of the files, all in one statement, however many the batch holds. */
  #recordEach(
    trx: Transaction,
    accountId: string,
    kind: 'file.trashed' | 'file.restored' | 'file.deleted',
    files: { id: string; name: string }[],
    actor?: Actor,
  ): Promise<void> {
    return this.#audit.recordEach(
      trx,
      files.map((file) => ({
        accountId,
        kind,
        subjectId: file.id,
        details: { name: file.name },
        ...(actor ? { actor } : {}),
      })),
    )
  }

  /**
   * Moves the count of each folder by `sign` for each of its files among `folderIds` (null: root, which has no
   * count).
   */
  async #adjustFolderCounts(trx: Transaction, folderIds: (string | null)[], sign: 1 | -1): Promise<void> {
    const perFolder = new Map<string, number>()
    for (const folderId of folderIds) {
      if (folderId !== null) perFolder.set(folderId, (perFolder.get(folderId) ?? 0) + 1)
    }
    // A fixed order, as in FilesService.update, so that concurrent writers never lock the same folders crosswise.
    for (const folderId of [...perFolder.keys()].sort()) {
      await this.#folders.adjustCount(trx, folderId, 'file_count', sign * (perFolder.get(folderId) ?? 0))
    }
  }
}
