// Share links: at most one per file, public under an unguessable id. The stored flag and the expiry give
// the effective state together (isShareActive); every answer carries the effective one. A link may also ask
// for a password (kept only as a scrypt hash) and allow a number of downloads in all.
import type { AuditDetails, AuditLog } from '../../platform/audit/audit-log.ts'
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

/** The audit log's kinds of a link of each target: a file's link is a `share`, a folder's a `folder_share`. */
const AUDIT_KIND = {
  file: { created: 'share.created', changed: 'share.changed', deleted: 'share.deleted' },
  folder: {
    created: 'folder_share.created',
    changed: 'folder_share.changed',
    deleted: 'folder_share.deleted',
  },
} as const

/**
 * What the audit log says of a link's settings: the values a reader may see, and whether it asks for a
 * password, never the password (nor its hash).
 */
export function linkAuditDetails(
  link: Pick<Link, 'expiresAt' | 'maxDownloads' | 'hasPassword'>,
  target: LinkTarget,
  targetId: string,
  targetName: string,
): AuditDetails {
  return {
    [target === 'file' ? 'fileId' : 'folderId']: targetId,
    name: targetName,
    expiresAt: link.expiresAt === null ? null : new Date(link.expiresAt).toISOString(),
    maxDownloads: link.maxDownloads,
    hasPassword: link.hasPassword,
  }
}

/** Records that the account's link of `target` was made or reactivated, in the transaction that did it. */
export function recordLinkCreated(
  audit: AuditLog,
  trx: Transaction,
  target: LinkTarget,
  accountId: string,
  link: Link,
  targetId: string,
  targetName: string,
): Promise<void> {
  return audit.record(trx, {
    accountId,
    kind: AUDIT_KIND[target].created,
    subjectId: link.id,
    details: linkAuditDetails(link, target, targetId, targetName),
  })
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
  readonly #audit: AuditLog

  constructor(deps: {
    transaction: Transactor
    shares: SharesRepository
    files: FilesRepository
    /** Records share.created with the link made or reactivated, in the same transaction. */
    events: EventLog<ShareEvents>
    /** Records share.created, share.changed and share.deleted, in the transactions that make them. */
    audit: AuditLog
  }) {
    this.#transaction = deps.transaction
    this.#shares = deps.shares
    this.#files = deps.files
    this.#events = deps.events
    this.#audit = deps.audit
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
    const file = await this.#files.byId(accountId, fileId)
    if (!file) throw notFound(`File ${fileId}`)

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
          await this.#recordCreated(trx, accountId, reactivated, file.name)
          return reactivated
        }
        const active = await this.#shares.byFile(accountId, fileId, trx)
        if (active) return active
        await this.#shares.insert({ ...share, target: { fileId } }, trx)
        const { passwordHash, ...fields } = share
        const created: Share = {
          ...fields,
          fileId,
          state: 'active' as const,
          isActive: true,
          viewCount: 0,
          downloadCount: 0,
          hasPassword: passwordHash !== null,
        }
        await this.#recordCreated(trx, accountId, created, file.name)
        return created
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

  /** share.created, with the link as this transaction leaves it, in the webhooks' outbox and the audit log. */
  async #recordCreated(trx: Transaction, accountId: string, share: Share, fileName: string): Promise<void> {
    await recordLinkCreated(this.#audit, trx, 'file', accountId, share, share.fileId, fileName)
    const audience = await this.#events.audience(trx, accountId, 'share.created')
    const withFile = audience && (await this.#shares.get(accountId, share.id, trx))
    if (audience && withFile) await this.#events.record(trx, audience, [withFile])
  }

  /** Changes the settings given of the account's file link (changeLink). */
  async update(accountId: string, shareId: string, changes: ShareChanges): Promise<Share> {
    const deps = { transaction: this.#transaction, shares: this.#shares, audit: this.#audit }
    const { targetId, ...share } = await changeLink(deps, 'file', accountId, shareId, changes)
    return { ...share, fileId: targetId }
  }
}

/**
 * The names of the settings `changes` gives other values than the link had `before`: read off the change, not
 * the link after it, since a password is stored hashed (a new one cannot be told from the old by its hash).
 */
function changedLinkSettings(before: Link, changes: ShareChanges): string[] {
  const changed: string[] = []
  if (changes.isActive !== undefined && changes.isActive !== (before.state !== 'disabled')) {
    changed.push('isActive')
  }
  if (changes.expiresAt !== undefined && changes.expiresAt !== before.expiresAt) changed.push('expiresAt')
  // A password given is a new one (the hash cannot tell it is the same); removing one is a change if it had one.
  if (changes.password !== undefined && (changes.password !== null || before.hasPassword)) {
    changed.push('password')
  }
  if (changes.maxDownloads !== undefined && changes.maxDownloads !== before.maxDownloads) {
    changed.push('maxDownloads')
  }
  return changed
}

/**
 * Records a change of a link's settings: turned off by its owner, it is deleted; working again when it did not
 * (enabled, or given a new expiry), reactivated, as `create` reactivates one; otherwise changed, with the
 * names of the settings changed. A change that changed nothing is not recorded.
 */
async function recordLinkChange(
  audit: AuditLog,
  trx: Transaction,
  target: LinkTarget,
  accountId: string,
  before: Link & { targetName: string },
  after: Link & { targetId: string },
  changes: ShareChanges,
): Promise<void> {
  const changed = changedLinkSettings(before, changes)
  if (changed.length === 0) return
  const kind =
    changes.isActive === false && changed.includes('isActive')
      ? AUDIT_KIND[target].deleted
      : !before.isActive && after.isActive
        ? AUDIT_KIND[target].created
        : AUDIT_KIND[target].changed
  await audit.record(trx, {
    accountId,
    kind,
    subjectId: after.id,
    details: { changed, ...linkAuditDetails(after, target, after.targetId, before.targetName) },
  })
}

/**
 * Changes the settings given of the account's link of a file or of a folder. Enabling a link whose stored expiry
 * has passed, without replacing that expiry in the same call, is a conflict: the link would still not work. A
 * new password ends every pass given for the old one (the public page asks again).
 */
export async function changeLink(
  deps: { transaction: Transactor; shares: SharesRepository; audit: AuditLog },
  target: LinkTarget,
  accountId: string,
  shareId: string,
  changes: ShareChanges,
): Promise<Link & { targetId: string }> {
  const { shares } = deps
  if (changes.expiresAt !== undefined) assertFutureExpiry(changes.expiresAt, Date.now())
  // Hashed before the transaction: scrypt takes a while, and the link's row stays locked for the transaction.
  const settings = await toSettings(changes)
  const skipExpired = changes.isActive === true && changes.expiresAt === undefined
  const updated = await deps.transaction(async (trx) => {
    const before = await shares.beforeChange(trx, target, accountId, shareId)
    if (!before) return undefined
    const after = await shares.update(target, accountId, shareId, settings, { skipExpired }, trx)
    if (after) await recordLinkChange(deps.audit, trx, target, accountId, before, after, changes)
    return after
  })
  if (updated) return updated
  const expiry = await shares.storedExpiry(target, accountId, shareId)
  if (expiry === undefined) throw notFound(`Share ${shareId}`)
  throw conflict(
    `Share ${shareId} cannot be activated: its expiry ${new Date(Number(expiry)).toISOString()} has passed.`,
    'Send "isActive": true together with a future "expiresAt", or null for no expiry.',
  )
}
