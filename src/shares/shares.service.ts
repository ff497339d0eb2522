// Share links: at most one per file, public under an unguessable id. The stored flag and the expiry give
// the effective state together (share-state.ts); every answer carries the effective one. Each state change is
// one conditional statement, so a concurrent request can never slip between a check and its write.
import type { Kysely, Selectable, Updateable } from 'kysely'
import { isForeignKeyViolation, isUniqueViolation } from '../db/errors.ts'
import { type Page, toPage } from '../db/pagination.ts'
import { preparePages } from '../db/prepared.ts'
import type { Database, SharesTable } from '../db/schema.ts'
import { conflict, invalid, notFound } from '../errors.ts'
import { type StoredFile, selectFiles, toStoredFile } from '../files/files.service.ts'
import { newId, newPublicId } from '../ids.ts'
import type { ServiceDeps } from '../services.ts'
import { isShareActive, sharePublicUrl } from './share-state.ts'

export interface Share {
  id: string
  fileId: string
  publicId: string
  publicUrl: string
  /** Effective: false once `expiresAt` has passed, whatever the stored flag says. */
  isActive: boolean
  expiresAt: number | null
  viewCount: number
  downloadCount: number
  createdAt: number
}

export interface ShareWithFile extends Share {
  file: { name: string; contentType: string; size: number }
}

/** What the public share page needs: the link and the whole file behind it. */
export interface PublicShare {
  share: Share
  file: StoredFile
}

export interface ShareChanges {
  isActive?: boolean
  /** Epoch ms, or null to clear. */
  expiresAt?: number | null
}

// Unqualified for RETURNING (which names only the written table), qualified for joins.
const SHARE_FIELDS = [
  'id',
  'file_id',
  'public_id',
  'is_active',
  'expires_at',
  'view_count',
  'download_count',
  'created_at',
] as const
const SHARE_COLUMNS = [
  'shares.id',
  'shares.file_id',
  'shares.public_id',
  'shares.is_active',
  'shares.expires_at',
  'shares.view_count',
  'shares.download_count',
  'shares.created_at',
] as const

type ShareRow = Pick<Selectable<SharesTable>, (typeof SHARE_FIELDS)[number]>

/** A new expiry must lie in the future: a link created or set to expire in the past would be born dead. */
function assertFutureExpiry(expiresAt: number | null, now: number): void {
  if (expiresAt !== null && expiresAt <= now) {
    throw invalid(
      'The request body "expiresAt" must be in the future.',
      'Send a later date-time, or null for a link that never expires.',
    )
  }
}

export class SharesService {
  readonly #db: Kysely<Database>
  readonly #publicUrl: string
  readonly #listPage

  constructor(deps: Pick<ServiceDeps, 'db' | 'config'>) {
    this.#db = deps.db.kysely
    this.#publicUrl = deps.config.publicUrl
    this.#listPage = preparePages(deps.db, 'shares_list', 'shares', 1, (accountId: string) =>
      this.#selectWithFile().where('shares.account_id', '=', accountId),
    )
  }

  #toShare(row: ShareRow, now: number): Share {
    const expiresAt = row.expires_at === null ? null : Number(row.expires_at)
    return {
      id: row.id,
      fileId: row.file_id,
      publicId: row.public_id,
      publicUrl: sharePublicUrl(this.#publicUrl, row.public_id),
      isActive: isShareActive(row.is_active, expiresAt, now),
      expiresAt,
      viewCount: Number(row.view_count),
      downloadCount: Number(row.download_count),
      createdAt: Number(row.created_at),
    }
  }

  /** shares ⋈ files: a page of shares with their files is one query. */
  #selectWithFile() {
    return this.#db
      .selectFrom('shares')
      .innerJoin('files', 'files.id', 'shares.file_id')
      .select([
        ...SHARE_COLUMNS,
        'files.name as file_name',
        'files.content_type as file_content_type',
        'files.size as file_size',
      ])
  }

  #toShareWithFile(
    row: ShareRow & { file_name: string; file_content_type: string; file_size: number },
    now: number,
  ): ShareWithFile {
    return {
      ...this.#toShare(row, now),
      file: { name: row.file_name, contentType: row.file_content_type, size: Number(row.file_size) },
    }
  }

  async list(accountId: string, page: { cursor?: string; limit: number }): Promise<Page<ShareWithFile>> {
    const now = Date.now()
    const rows = await this.#listPage([accountId], page.cursor, page.limit)
    return toPage(rows, page.limit, (row) => this.#toShareWithFile(row, now))
  }

  async get(accountId: string, shareId: string): Promise<ShareWithFile> {
    const row = await this.#selectWithFile()
      .where('shares.id', '=', shareId)
      .where('shares.account_id', '=', accountId)
      .executeTakeFirst()
    if (!row) throw notFound(`Share ${shareId}`)
    return this.#toShareWithFile(row, Date.now())
  }

  /**
   * Gives the file a working link. No link yet: creates one. A disabled or expired link: reactivates it (same
   * public URL and counts) with `expiresAt` (none when omitted). An active link: returns it unchanged.
   */
  async create(accountId: string, fileId: string, expiresAt: number | null = null): Promise<Share> {
    const now = Date.now()
    assertFutureExpiry(expiresAt, now)
    const file = await this.#db
      .selectFrom('files')
      .select('id')
      .where('id', '=', fileId)
      .where('account_id', '=', accountId)
      .executeTakeFirst()
    if (!file) throw notFound(`File ${fileId}`)

    const reactivated = await this.#db
      .updateTable('shares')
      .set({ is_active: true, expires_at: expiresAt, updated_at: now })
      .where('file_id', '=', fileId)
      .where('account_id', '=', accountId)
      .where((eb) => eb.or([eb('is_active', '=', false), eb('expires_at', '<=', now)]))
      .returning(SHARE_FIELDS)
      .executeTakeFirst()
    if (reactivated) return this.#toShare(reactivated, now)

    const active = await this.#findByFile(accountId, fileId)
    if (active) return this.#toShare(active, now)

    const row = {
      id: newId('shr', now),
      account_id: accountId,
      file_id: fileId,
      public_id: newPublicId(),
      is_active: true,
      expires_at: expiresAt,
      view_count: 0,
      download_count: 0,
      created_at: now,
      updated_at: now,
    }
    try {
      await this.#db.insertInto('shares').values(row).execute()
    } catch (error) {
      // A concurrent request created the file's link first: answer with that one, like any active link.
      if (isUniqueViolation(error)) {
        const raced = await this.#findByFile(accountId, fileId)
        if (raced) return this.#toShare(raced, now)
      }
      if (isForeignKeyViolation(error)) throw notFound(`File ${fileId}`)
      throw error
    }
    return this.#toShare(row, now)
  }

  #findByFile(accountId: string, fileId: string) {
    return this.#db
      .selectFrom('shares')
      .select(SHARE_FIELDS)
      .where('file_id', '=', fileId)
      .where('account_id', '=', accountId)
      .executeTakeFirst()
  }

  /**
   * Sets the flag and/or the expiry. Enabling a link whose stored expiry has passed, without replacing that
   * expiry in the same call, is a conflict: the link would still not work.
   */
  async update(accountId: string, shareId: string, changes: ShareChanges): Promise<Share> {
    const now = Date.now()
    if (changes.expiresAt !== undefined) assertFutureExpiry(changes.expiresAt, now)
    const set: Updateable<SharesTable> = { updated_at: now }
    if (changes.isActive !== undefined) set.is_active = changes.isActive
    if (changes.expiresAt !== undefined) set.expires_at = changes.expiresAt

    let query = this.#db
      .updateTable('shares')
      .set(set)
      .where('id', '=', shareId)
      .where('account_id', '=', accountId)
    if (changes.isActive === true && changes.expiresAt === undefined) {
      query = query.where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    }
    const updated = await query.returning(SHARE_FIELDS).executeTakeFirst()
    if (updated) return this.#toShare(updated, now)

    const current = await this.#db
      .selectFrom('shares')
      .select('expires_at')
      .where('id', '=', shareId)
      .where('account_id', '=', accountId)
      .executeTakeFirst()
    if (!current) throw notFound(`Share ${shareId}`)
    throw conflict(
      `Share ${shareId} cannot be activated: its expiry ${new Date(Number(current.expires_at)).toISOString()} has passed.`,
      'Send "isActive": true together with a future "expiresAt", or null for no expiry.',
    )
  }

  /** The link behind a public id, with its file, while the link works; otherwise undefined. */
  async findPublic(publicId: string): Promise<PublicShare | undefined> {
    const now = Date.now()
    const row = await selectFiles(this.#db)
      .select('shares.created_at as share_created_at')
      .where('shares.public_id', '=', publicId)
      .where('shares.is_active', '=', true)
      .where((eb) => eb.or([eb('shares.expires_at', 'is', null), eb('shares.expires_at', '>', now)]))
      .executeTakeFirst()
    if (!row) return undefined
    const file = toStoredFile(row, now)
    if (!file.share) return undefined
    return {
      share: {
        ...file.share,
        fileId: file.id,
        publicUrl: sharePublicUrl(this.#publicUrl, file.share.publicId),
        createdAt: Number(row.share_created_at),
      },
      file,
    }
  }

  /** Counts one view of the public page; an increment in SQL, so concurrent views are never lost. */
  async recordView(shareId: string): Promise<void> {
    await this.#db
      .updateTable('shares')
      .set((eb) => ({ view_count: eb('view_count', '+', 1) }))
      .where('id', '=', shareId)
      .execute()
  }

  /** Counts one download through the public link, atomically like `recordView`. */
  async recordDownload(shareId: string): Promise<void> {
    await this.#db
      .updateTable('shares')
      .set((eb) => ({ download_count: eb('download_count', '+', 1) }))
      .where('id', '=', shareId)
      .execute()
  }
}
