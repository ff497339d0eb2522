// Shares' SQL. Each state change is one conditional statement, so a concurrent request can never slip
// between a check and its write; view and download counts are increments in SQL, never read-modified-written.
import type { Kysely, Selectable, Updateable } from 'kysely'
import type { Db } from '../db/database.ts'
import { type Page, toPage } from '../db/pagination.ts'
import { preparePages } from '../db/read-path/prepared.ts'
import type { Database, SharesTable } from '../db/schema.ts'

export interface Share {
  id: string
  fileId: string
  publicId: string
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

export type NewShareRow = Omit<Share, 'isActive' | 'viewCount' | 'downloadCount'> & { accountId: string }

/** The effective state of a link: one whose expiry has passed is inactive, whatever its flag says. */
export function isShareActive(
  isActive: boolean | number,
  expiresAt: number | null,
  now = Date.now(),
): boolean {
  return Boolean(isActive) && (expiresAt === null || expiresAt > now)
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
const SHARE_COLUMNS = SHARE_FIELDS.map((field) => `shares.${field}` as const)

type ShareRow = Pick<Selectable<SharesTable>, (typeof SHARE_FIELDS)[number]>
type ShareWithFileRow = ShareRow & { file_name: string; file_content_type: string; file_size: number }

function toShare(row: ShareRow, now: number): Share {
  const expiresAt = row.expires_at === null ? null : Number(row.expires_at)
  return {
    id: row.id,
    fileId: row.file_id,
    publicId: row.public_id,
    isActive: isShareActive(row.is_active, expiresAt, now),
    expiresAt,
    viewCount: Number(row.view_count),
    downloadCount: Number(row.download_count),
    createdAt: Number(row.created_at),
  }
}

function toShareWithFile(row: ShareWithFileRow, now: number): ShareWithFile {
  return {
    ...toShare(row, now),
    file: { name: row.file_name, contentType: row.file_content_type, size: Number(row.file_size) },
  }
}

export class SharesRepository {
  readonly #db: Kysely<Database>
  readonly #listPage

  constructor(db: Db) {
    this.#db = db.kysely
    this.#listPage = preparePages(db, 'shares_list', 'shares', 1, (accountId: string) =>
      this.#selectWithFile().where('shares.account_id', '=', accountId),
    )
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

  async list(accountId: string, page: { cursor?: string; limit: number }): Promise<Page<ShareWithFile>> {
    const now = Date.now()
    const rows = await this.#listPage([accountId], page.cursor, page.limit)
    return toPage(rows, page.limit, (row) => toShareWithFile(row, now))
  }

  async get(accountId: string, shareId: string): Promise<ShareWithFile | undefined> {
    const row = await this.#selectWithFile()
      .where('shares.id', '=', shareId)
      .where('shares.account_id', '=', accountId)
      .executeTakeFirst()
    return row && toShareWithFile(row, Date.now())
  }

  async byFile(accountId: string, fileId: string): Promise<Share | undefined> {
    const row = await this.#db
      .selectFrom('shares')
      .select(SHARE_FIELDS)
      .where('file_id', '=', fileId)
      .where('account_id', '=', accountId)
      .executeTakeFirst()
    return row && toShare(row, Date.now())
  }

  /** Turns the file's link back on with `expiresAt`, if it is disabled or expired; undefined otherwise. */
  async reactivate(accountId: string, fileId: string, expiresAt: number | null): Promise<Share | undefined> {
    const now = Date.now()
    const row = await this.#db
      .updateTable('shares')
      .set({ is_active: true, expires_at: expiresAt, updated_at: now })
      .where('file_id', '=', fileId)
      .where('account_id', '=', accountId)
      .where((eb) => eb.or([eb('is_active', '=', false), eb('expires_at', '<=', now)]))
      .returning(SHARE_FIELDS)
      .executeTakeFirst()
    return row && toShare(row, now)
  }

  /** A file with a link already is a unique violation; a file that is gone, a foreign-key violation. */
  async insert(share: NewShareRow): Promise<void> {
    await this.#db
      .insertInto('shares')
      .values({
        id: share.id,
        account_id: share.accountId,
        file_id: share.fileId,
        public_id: share.publicId,
        is_active: true,
        expires_at: share.expiresAt,
        view_count: 0,
        download_count: 0,
        created_at: share.createdAt,
        updated_at: share.createdAt,
      })
      .execute()
  }

  /**
   * Sets the flag and/or the expiry of the account's link; with `skipExpired`, only if its stored expiry has
   * not passed. Undefined when nothing was changed.
   */
  async update(
    accountId: string,
    shareId: string,
    changes: { isActive?: boolean; expiresAt?: number | null },
    options: { skipExpired: boolean },
  ): Promise<Share | undefined> {
    const now = Date.now()
    const set: Updateable<SharesTable> = { updated_at: now }
    if (changes.isActive !== undefined) set.is_active = changes.isActive
    if (changes.expiresAt !== undefined) set.expires_at = changes.expiresAt
    let query = this.#db
      .updateTable('shares')
      .set(set)
      .where('id', '=', shareId)
      .where('account_id', '=', accountId)
    if (options.skipExpired) {
      query = query.where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    }
    const row = await query.returning(SHARE_FIELDS).executeTakeFirst()
    return row && toShare(row, now)
  }

  /** The stored expiry of the account's link: undefined when there is no such link, null for none. */
  async storedExpiry(accountId: string, shareId: string): Promise<number | null | undefined> {
    const row = await this.#db
      .selectFrom('shares')
      .select('expires_at')
      .where('id', '=', shareId)
      .where('account_id', '=', accountId)
      .executeTakeFirst()
    return row && (row.expires_at === null ? null : Number(row.expires_at))
  }

  async countView(shareId: string): Promise<void> {
    await this.#db
      .updateTable('shares')
      .set((eb) => ({ view_count: eb('view_count', '+', 1) }))
      .where('id', '=', shareId)
      .execute()
  }

  async countDownload(shareId: string): Promise<void> {
    await this.#db
      .updateTable('shares')
      .set((eb) => ({ download_count: eb('download_count', '+', 1) }))
      .where('id', '=', shareId)
      .execute()
  }
}
