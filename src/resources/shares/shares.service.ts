// Share links: at most one per file, public under an unguessable id. The stored flag and the expiry give
// the effective state together (isShareActive); every answer carries the effective one. A link may also ask
// for a password (kept only as a scrypt hash) and allow a number of downloads in all.
import { hashPassword } from '../../platform/auth/secrets.ts'
import type { Transaction, Transactor } from '../../platform/db/database.ts'
import { isForeignKeyViolation, isUniqueViolation } from '../../platform/db/errors.ts'
import type { Page } from '../../platform/db/pagination.ts'
import { conflict, invalid, notFound } from '../../platform/errors.ts'
import { newId, newPublicId } from '../../platform/ids.ts'
import type { FilesRepository } from '../files/files.repository.ts'
import type { EventLog } from '../webhooks/events.ts'
import type {
  Link,
  LinkTarget,
  Share,
  ShareSettings,
  SharesRepository,
  ShareWithFile,
} from './shares.repository.ts'

/** What a client may set of a link; a property left out stays as it is. */
export interface ShareChanges {
  isActive?: boolean
  /** Epoch ms, or null to clear. */
  expiresAt?: number | null
  /** A new password, or null to remove it. */
  password?: string | null
  /** Downloads allowed in all, or null for no limit. */
  maxDownloads?: number | null
}

/** The settings of a new or reactivated link: `expiresAt` none unless given, the others as they are. */
export type NewShareOptions = Omit<ShareChanges, 'isActive'>

/** The settings to store: the password as its hash. */
export async function toSettings(changes: ShareChanges): Promise<ShareSettings> {
  const { password, ...rest } = changes
  if (password === undefined) return rest
  return { ...rest, passwordHash: password === null ? null : await hashPassword(password) }
}

/** A new expiry must lie in the future: a link created or set to expire in the past would be born dead. */
export function assertFutureExpiry(expiresAt: number | null, now: number): void {
  if (expiresAt !== null && expiresAt <= now) {
    throw invalid(
      'The request body "expiresAt" must be in the future.',
      'Send a later date-time, or null for a link that never expires.',
      'expiresAt',
    )
  }
}

/** The events share links record, and what from: the link with its file, as the change leaves it. */
export interface ShareEvents {
  'share.created': ShareWithFile
  'share.viewed': ShareWithFile
  'share.downloaded': ShareWithFile
}

export class SharesService {
  readonly #transaction: Transactor
  readonly #shares: SharesRepository
  readonly #files: FilesRepository
  readonly #events: EventLog<ShareEvents>

  constructor(deps: {
    transaction: Transactor
    shares: SharesRepository
    files: FilesRepository
    /** Records share.created with the link made or reactivated, in the same transaction. */
    events: EventLog<ShareEvents>
  }) {
    this.#transaction = deps.transaction
    this.#shares = deps.shares
    this.#files = deps.files
    this.#events = deps.events
  }

  list(accountId: string, page: { cursor?: string; limit: number }): Promise<Page<ShareWithFile>> {
    return this.#shares.list(accountId, page)
  }

  async get(accountId: string, shareId: string): Promise<ShareWithFile> {
    const share = await this.#shares.get(accountId, shareId)
    if (!share) throw notFound(`Share ${shareId}`)
    return share
  }

  /**
   * Gives the file a working link. No link yet: creates one. A disabled or expired link: reactivates it (same
   * public URL and counts) with `expiresAt` (none when omitted), and the password and download limit given
   * (those omitted stay as they were). An active link: returns it unchanged.
   */
  async create(accountId: string, fileId: string, options: NewShareOptions = {}): Promise<Share> {
    const now = Date.now()
    const expiresAt = options.expiresAt ?? null
    assertFutureExpiry(expiresAt, now)
    if (!(await this.#files.byId(accountId, fileId))) throw notFound(`File ${fileId}`)

    const settings = await toSettings({ ...options, expiresAt })
    const share = {
      id: newId('shr', now),
      accountId,
      publicId: newPublicId(),
      expiresAt,
      passwordHash: settings.passwordHash ?? null,
      maxDownloads: settings.maxDownloads ?? null,
      createdAt: now,
    }
    try {
      return await this.#transaction(async (trx) => {
        const reactivated = await this.#shares.reactivate(accountId, fileId, { ...settings, expiresAt }, trx)
        if (reactivated) {
          await this.#recordCreated(trx, accountId, reactivated.id)
          return reactivated
        }
        const active = await this.#shares.byFile(accountId, fileId, trx)
        if (active) return active
        await this.#shares.insert({ ...share, target: { fileId } }, trx)
        await this.#recordCreated(trx, accountId, share.id)
        const { passwordHash, ...created } = share
        return {
          ...created,
          fileId,
          state: 'active' as const,
          isActive: true,
          viewCount: 0,
          downloadCount: 0,
          hasPassword: passwordHash !== null,
        }
      })
    } catch (error) {
      // A concurrent request created the file's link first: answer with that one, like any active link.
      if (isUniqueViolation(error)) {
        const raced = await this.#shares.byFile(accountId, fileId)
        if (raced) return raced
      }
      if (isForeignKeyViolation(error)) throw notFound(`File ${fileId}`)
      throw error
    }
  }

  /** share.created, with the link as this transaction leaves it. */
  async #recordCreated(trx: Transaction, accountId: string, shareId: string): Promise<void> {
    const audience = await this.#events.audience(trx, accountId, 'share.created')
    const share = audience && (await this.#shares.get(accountId, shareId, trx))
    if (audience && share) await this.#events.record(trx, audience, [share])
  }

  /** Changes the settings given of the account's file link (changeLink). */
  async update(accountId: string, shareId: string, changes: ShareChanges): Promise<Share> {
    const { targetId, ...share } = await changeLink(this.#shares, 'file', accountId, shareId, changes)
    return { ...share, fileId: targetId }
  }
}

/**
 * Changes the settings given of the account's link of a file or of a folder. Enabling a link whose stored expiry
 * has passed, without replacing that expiry in the same call, is a conflict: the link would still not work. A
 * new password ends every pass given for the old one (the public page asks again).
 */
export async function changeLink(
  shares: SharesRepository,
  target: LinkTarget,
  accountId: string,
  shareId: string,
  changes: ShareChanges,
): Promise<Link & { targetId: string }> {
  if (changes.expiresAt !== undefined) assertFutureExpiry(changes.expiresAt, Date.now())
  const updated = await shares.update(target, accountId, shareId, await toSettings(changes), {
    skipExpired: changes.isActive === true && changes.expiresAt === undefined,
  })
  if (updated) return updated
  const expiry = await shares.storedExpiry(target, accountId, shareId)
  if (expiry === undefined) throw notFound(`Share ${shareId}`)
  throw conflict(
    `Share ${shareId} cannot be activated: its expiry ${new Date(Number(expiry)).toISOString()} has passed.`,
    'Send "isActive": true together with a future "expiresAt", or null for no expiry.',
  )
}
