// Folder links: at most one per folder, public under an unguessable id, whose page lists the folder's files as
// they are now. A folder link is a share link like a file's (the same row of `shares`, migration 0033): the same
// states, settings, passwords, counts and download limit, and the same rules for making, reactivating and changing
// it (shares.service.ts); only what it opens differs (public-shares.service.ts).
import type { AuditLog } from '../../platform/audit/audit-log.ts'
import type { Transaction, Transactor } from '../../platform/db/database.ts'
import { isForeignKeyViolation, isUniqueViolation } from '../../platform/db/errors.ts'
import type { Page } from '../../platform/db/pagination.ts'
import { notFound } from '../../platform/errors.ts'
import { newId, newPublicId } from '../../platform/ids.ts'
import type { FoldersRepository } from '../folders/folders.repository.ts'
import type { EventLog } from '../webhooks/events.ts'
import type { FolderShare, FolderSharesRepository } from './folder-shares.repository.ts'
import type { SharesRepository } from './shares.repository.ts'
import {
  assertFutureExpiry,
  changeLink,
  linkAuditDetails,
  type NewShareOptions,
  recordLinkCreated,
  type ShareChanges,
  toSettings,
} from './shares.service.ts'

/** The events folder links record, and what from: the link with its folder, as the change leaves it. */
export interface FolderShareEvents {
  'folder_share.created': FolderShare
  'folder_share.viewed': FolderShare
  'folder_share.downloaded': FolderShare
}

export class FolderSharesService {
  readonly #transaction: Transactor
  readonly #shares: SharesRepository
  readonly #folderShares: FolderSharesRepository
  readonly #folders: FoldersRepository
  readonly #events: EventLog<FolderShareEvents>
  readonly #audit: AuditLog

  constructor(deps: {
    transaction: Transactor
    shares: SharesRepository
    folderShares: FolderSharesRepository
    folders: FoldersRepository
    /** Records folder_share.created with the link made or reactivated, in the same transaction. */
    events: EventLog<FolderShareEvents>
    /** Records folder_share.created, .changed and .deleted, in the transactions that make them. */
    audit: AuditLog
  }) {
    this.#transaction = deps.transaction
    this.#shares = deps.shares
    this.#folderShares = deps.folderShares
    this.#folders = deps.folders
    this.#events = deps.events
    this.#audit = deps.audit
  }

  list(accountId: string, page: { cursor?: string; limit: number }): Promise<Page<FolderShare>> {
    return this.#folderShares.list(accountId, page)
  }

  async get(accountId: string, shareId: string): Promise<FolderShare> {
    const share = await this.#folderShares.get(accountId, shareId)
    if (!share) throw notFound(`Folder share ${shareId}`)
    return share
  }

  /** The link of the account's folder, if it has one (whatever its state). */
  byFolder(accountId: string, folderId: string): Promise<FolderShare | undefined> {
    return this.#folderShares.byFolder(accountId, folderId)
  }

  /**
   * Gives the folder a working link, as SharesService.create gives a file one: made when there is none,
   * reactivated (same public URL and counts, `expiresAt` none unless given) when it is disabled or expired, and
   * returned as it is when it is active.
   */
  async create(accountId: string, folderId: string, options: NewShareOptions = {}): Promise<FolderShare> {
    const now = Date.now()
    const expiresAt = options.expiresAt ?? null
    assertFutureExpiry(expiresAt, now)
    if (!(await this.#folders.get(accountId, folderId))) throw notFound(`Folder ${folderId}`)
    const settings = await toSettings({ ...options, expiresAt })
    try {
      return await this.#transaction(async (trx) => {
        if (await this.#folderShares.reactivate(accountId, folderId, { ...settings, expiresAt }, trx)) {
          return this.#created(trx, accountId, folderId)
        }
        const active = await this.#folderShares.byFolder(accountId, folderId, trx)
        if (active) return active
        await this.#shares.insert(
          {
            id: newId('shr', now),
            accountId,
            publicId: newPublicId(),
            expiresAt,
            passwordHash: settings.passwordHash ?? null,
            maxDownloads: settings.maxDownloads ?? null,
            createdAt: now,
            target: { folderId },
          },
          trx,
        )
        return this.#created(trx, accountId, folderId)
      })
    } catch (error) {
      // A concurrent request made the folder's link first: answer with that one, like any active link.
      if (isUniqueViolation(error)) {
        const raced = await this.#folderShares.byFolder(accountId, folderId)
        if (raced) return raced
      }
      if (isForeignKeyViolation(error)) throw notFound(`Folder ${folderId}`)
      throw error
    }
  }

  /** The folder's link as this transaction leaves it, and folder_share.created of it (outbox and audit log). */
  async #created(trx: Transaction, accountId: string, folderId: string): Promise<FolderShare> {
    const share = await this.#folderShares.byFolder(accountId, folderId, trx)
    if (!share) throw notFound(`Folder ${folderId}`)
    await recordLinkCreated(this.#audit, trx, 'folder', accountId, share, folderId, share.folder.name)
    const audience = await this.#events.audience(trx, accountId, 'folder_share.created')
    if (audience) await this.#events.record(trx, audience, [share])
    return share
  }

  /**
   * In the transaction that deletes the account's folder (FoldersService.delete): its link goes with it, recorded
   * as deleted unless its owner had disabled it already, and what it counted stays in the account's totals.
   */
  async endWithFolder(trx: Transaction, accountId: string, folderId: string): Promise<void> {
    const link = await this.#folderShares.byFolder(accountId, folderId, trx)
    if (!link) return
    await this.#shares.keepCountsOfFolder(trx, accountId, folderId)
    if (link.state === 'disabled') return
    await this.#audit.record(trx, {
      accountId,
      kind: 'folder_share.deleted',
      subjectId: link.id,
      details: { ...linkAuditDetails(link, 'folder', folderId, link.folder.name), reason: 'folder_deleted' },
    })
  }

  /** Changes the settings given of the account's folder link (changeLink's rules). */
  async update(accountId: string, shareId: string, changes: ShareChanges): Promise<FolderShare> {
    const deps = { transaction: this.#transaction, shares: this.#shares, audit: this.#audit }
    await changeLink(deps, 'folder', accountId, shareId, changes)
    return this.get(accountId, shareId)
  }
}
