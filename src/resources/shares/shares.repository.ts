// Shares' SQL. Each state change is one conditional statement, so a concurrent request can never slip
// between a check and its write. View and download counts are increments in SQL, never read-modified-written;
// those of requests that arrive together are committed together (db/write-batch.ts), with the day's counts.
import {
  type CompiledQuery,
  type ExpressionBuilder,
  type Kysely,
  type Selectable,
  sql,
  type Updateable,
} from 'kysely'
import type { Db, Executor, Transaction } from '../../platform/db/database.ts'
import { type Page, toPage } from '../../platform/db/pagination.ts'
import { idLookup } from '../../platform/db/read-path/id-lookup.ts'
import { compileOnce, preparePages } from '../../platform/db/read-path/prepared.ts'
import type { Database } from '../../platform/db/schema.ts'
import type { ServedFile } from '../files/file-content.ts'
import { type FilePreview, JOINED_PREVIEW_COLUMNS, joinedPreview } from '../files/file-previews.repository.ts'
import { isActiveState, type ShareState, shareStateOfRow } from '../files/share-state.ts'
import type { SharesTable } from './shares.tables.ts'

/** What every share link is, of a file or of a folder (folder-shares.repository.ts). */
export interface Link {
  id: string
  publicId: string
  /** What the link is now (share-state.ts). */
  state: ShareState
  /** The API's `isActive`, from `state`: false once disabled or expired. */
  isActive: boolean
  expiresAt: number | null
  viewCount: number
  downloadCount: number
  /** Whether the link asks for a password. */
  hasPassword: boolean
  /** Downloads allowed in all; null for no limit. */
  maxDownloads: number | null
  createdAt: number
}

/** What a link is of: its row names a file or a folder (migration 0033), and each kind is read and changed apart. */
export type LinkTarget = 'file' | 'folder'

/** The column of the link's row that names its target. */
export const TARGET_COLUMN = { file: 'file_id', folder: 'folder_id' } as const satisfies Record<
  LinkTarget,
  string
>

/** A file's link: the API's Share. */
export interface Share extends Link {
  fileId: string
}

export interface ShareWithFile extends Share {
  file: { name: string; contentType: string; size: number }
}

/** A new link's row: of a file or of a folder. */
export type NewLinkRow = Omit<Link, 'state' | 'isActive' | 'viewCount' | 'downloadCount' | 'hasPassword'> & {
  accountId: string
  passwordHash: string | null
  target: { fileId: string; folderId?: undefined } | { folderId: string; fileId?: undefined }
}

/** A change of a link's settings; a property left out stays as it is. */
export interface ShareSettings {
  isActive?: boolean
  expiresAt?: number | null
  passwordHash?: string | null
  maxDownloads?: number | null
}

/** What the public page of a link needs: the link, its file and the file's preview, in one read. */
export interface PublicLinkRow {
  share: Share & { accountId: string; passwordHash: string | null }
  file: ServedFile
  preview: Omit<FilePreview, 'fileId'> | null
  /**
   * Whether the owner had an active webhook endpoint as the link was read: only then may a visit be heard of,
   * and need its counting look for the endpoints that hear of it.
   */
  ownerHasWebhooks: boolean
}

/** One visit to count: a view of the page, or a download, which a link's limit may refuse. */
export interface Visit {
  shareId: string
  kind: 'view' | 'download'
  /** The link has a download limit: the download counts only while it is below it. */
  limited: boolean
}

/** Days since 1970-01-01, UTC: the unit of the daily counts. */
export const DAY_MS = 86_400_000

/** Whether a row of `shares` is `active` as `shareStateOf` decides it, at `now`, in SQL. */
export function shareOpensNow(eb: ExpressionBuilder<Database, 'shares'>, now: number) {
  return eb.and([
    eb('shares.is_active', '=', true),
    eb.or([eb('shares.expires_at', 'is', null), eb('shares.expires_at', '>', now)]),
    eb.or([
      eb('shares.max_downloads', 'is', null),
      eb('shares.download_count', '<', eb.ref('shares.max_downloads')),
    ]),
  ])
}

// Unqualified for RETURNING (which names only the written table), qualified for joins.
export const LINK_FIELDS = [
  'id',
  'public_id',
  'is_active',
  'expires_at',
  'view_count',
  'download_count',
  'password_hash',
  'max_downloads',
  'created_at',
] as const
const SHARE_FIELDS = [...LINK_FIELDS, 'file_id'] as const
export const LINK_COLUMNS = LINK_FIELDS.map((field) => `shares.${field}` as const)
const SHARE_COLUMNS = SHARE_FIELDS.map((field) => `shares.${field}` as const)

export type LinkRow = Pick<Selectable<SharesTable>, (typeof LINK_FIELDS)[number]>
type ShareRow = Pick<Selectable<SharesTable>, (typeof SHARE_FIELDS)[number]>
type ShareWithFileRow = ShareRow & { file_name: string; file_content_type: string; file_size: number }

export function toLink(row: LinkRow, now: number): Link {
  const state = shareStateOfRow(row, now)
  return {
    id: row.id,
    publicId: row.public_id,
    state,
    isActive: isActiveState(state),
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
    viewCount: Number(row.view_count),
    downloadCount: Number(row.download_count),
    hasPassword: row.password_hash !== null,
    maxDownloads: row.max_downloads === null ? null : Number(row.max_downloads),
    createdAt: Number(row.created_at),
  }
}

/** A file's link from its row, which the statements that read file links select only where `file_id` is set. */
function toShare(row: ShareRow, now: number): Share {
  if (row.file_id === null) throw new Error(`Share ${row.id} is a folder's link, read as a file's`)
  return { ...toLink(row, now), fileId: row.file_id }
}

/** The columns of the settings given; those left out are not written. */
export function settingsToColumns(settings: ShareSettings): Updateable<SharesTable> {
  const columns: Updateable<SharesTable> = {}
  if (settings.isActive !== undefined) columns.is_active = settings.isActive
  if (settings.expiresAt !== undefined) columns.expires_at = settings.expiresAt
  if (settings.passwordHash !== undefined) columns.password_hash = settings.passwordHash
  if (settings.maxDownloads !== undefined) columns.max_downloads = settings.maxDownloads
  return columns
}

function toShareWithFile(row: ShareWithFileRow, now: number): ShareWithFile {
  return {
    ...toShare(row, now),
    file: { name: row.file_name, contentType: row.file_content_type, size: Number(row.file_size) },
  }
}

/**
 * The statements that add a link's views and downloads to its totals and to its day's counts, compiled once:
 * `granted` limited downloads were added to the total by their own statements, and count for the day only.
 * PostgreSQL does both in one statement; SQLite needs two, which the caller runs in one transaction. The
 * day's row carries the link's account (the account's days are read by it), taken from the link's row as it
 * is written: RETURNING on PostgreSQL, on SQLite a read of the row the first statement just wrote.
 */
function countVisitStatements(db: Db) {
  const addToDay = (shareId: string, day: number, views: number, downloads: number) =>
    db.kysely
      .insertInto('share_daily_counts')
      .columns(['share_id', 'account_id', 'day', 'views', 'downloads'])
      // SQLite reads an upsert's SELECT right only with a WHERE, which this one has.
      .expression((eb) =>
        eb
          .selectFrom('shares')
          .select([
            'shares.id',
            'shares.account_id',
            eb.val(day).as('day'),
            eb.val(views).as('views'),
            eb.val(downloads).as('downloads'),
          ])
          .where('shares.id', '=', shareId),
      )
      .onConflict((oc) =>
        oc.columns(['share_id', 'day']).doUpdateSet((eb) => ({
          views: eb('share_daily_counts.views', '+', eb.ref('excluded.views')),
          downloads: eb('share_daily_counts.downloads', '+', eb.ref('excluded.downloads')),
        })),
      )
  const addToTotals = (shareId: string, views: number, downloads: number) =>
    db.kysely
      .updateTable('shares')
      .set((eb) => ({
        view_count: eb('view_count', '+', views),
        download_count: eb('download_count', '+', downloads),
      }))
      .where('id', '=', shareId)
  if (db.engine === 'postgres') {
    const both = compileOnce(
      5,
      (shareId: string, day: number, views: number, downloads: number, dayDownloads: number) =>
        db.kysely
          .with('counted', () => addToTotals(shareId, views, downloads).returning(['id', 'account_id']))
          .insertInto('share_daily_counts')
          .columns(['share_id', 'account_id', 'day', 'views', 'downloads'])
          .expression((eb) =>
            eb
              .selectFrom('counted')
              .select([
                'counted.id',
                'counted.account_id',
                sql<number>`${day}::integer`.as('day'),
                sql<number>`${views}::bigint`.as('views'),
                sql<number>`${dayDownloads}::bigint`.as('downloads'),
              ]),
          )
          .onConflict((oc) =>
            oc.columns(['share_id', 'day']).doUpdateSet((eb) => ({
              views: eb('share_daily_counts.views', '+', eb.ref('excluded.views')),
              downloads: eb('share_daily_counts.downloads', '+', eb.ref('excluded.downloads')),
            })),
          ),
    )
    return (shareId: string, day: number, views: number, downloads: number, granted: number) => [
      both(shareId, day, views, downloads, downloads + granted),
    ]
  }
  const totals = compileOnce(3, addToTotals)
  const today = compileOnce(4, addToDay)
  return (shareId: string, day: number, views: number, downloads: number, granted: number) => [
    totals(shareId, views, downloads),
    today(shareId, day, views, downloads + granted),
  ]
}

/**
 * The statement that turns the account's link of a file or a folder back on, with `expiresAt` and the other
 * settings given, if it is disabled or expired: the caller says what it returns.
 */
export function reactivation(
  executor: Executor,
  accountId: string,
  target: { file: string } | { folder: string },
  settings: Omit<ShareSettings, 'isActive'> & { expiresAt: number | null },
  now: number,
) {
  const [column, targetId] =
    'file' in target ? (['file_id', target.file] as const) : (['folder_id', target.folder] as const)
  return executor
    .updateTable('shares')
    .set({ ...settingsToColumns(settings), is_active: true, updated_at: now })
    .where(column, '=', targetId)
    .where('account_id', '=', accountId)
    .where((eb) => eb.or([eb('is_active', '=', false), eb('expires_at', '<=', now)]))
}

/**
 * The active webhook endpoints of a link's owner: read with the link on every visit (by the endpoints' index on
 * their account), so that a visit to the link of an owner without any costs nothing more. Which types they
 * receive is left to the commit of the visits: a LIKE here cost SQLite ten times the rest of the read.
 */
export const activeEndpoints = (eb: ExpressionBuilder<Database, 'shares'>) =>
  eb
    .selectFrom('webhook_endpoints')
    .select('webhook_endpoints.id')
    .whereRef('webhook_endpoints.account_id', '=', 'shares.account_id')
    .where('webhook_endpoints.is_active', '=', true)

/** A link's owner is not disabled: a disabled account's links answer as links that never were, until enabled. */
export const ownerEnabled = (eb: ExpressionBuilder<Database, 'shares'>) =>
  eb.not(
    eb.exists(
      eb
        .selectFrom('accounts')
        .select('accounts.id')
        .whereRef('accounts.id', '=', 'shares.account_id')
        .where('accounts.disabled_at', 'is not', null),
    ),
  )

export class SharesRepository {
  readonly #database: Db
  readonly #db: Kysely<Database>
  readonly #listPage
  readonly #publicLink
  readonly #addVisits: ReturnType<typeof countVisitStatements>
  readonly #countLimitedDownload: (shareId: string) => CompiledQuery

  constructor(db: Db) {
    this.#database = db
    this.#db = db.kysely
    this.#listPage = preparePages(db, 'shares_list', 'shares', 1, (accountId: string) =>
      this.#selectWithFile().where('shares.account_id', '=', accountId),
    )
    // Read on every view of a public page: compiled once and, on PostgreSQL, the links asked for in one turn
    // read together (read-path/id-lookup.ts).
    this.#publicLink = idLookup(
      db,
      'share_links_by_public_ids',
      (publicIds) =>
        db.kysely
          .selectFrom('shares')
          .innerJoin('files', 'files.id', 'shares.file_id')
          .leftJoin('file_previews', 'file_previews.file_id', 'files.id')
          .select([
            ...SHARE_COLUMNS,
            'shares.account_id',
            'files.name as file_name',
            'files.content_type as file_content_type',
            'files.size as file_size',
            'files.sha256 as file_sha256',
            'files.created_at as file_created_at',
            'files.blob_key as file_blob_key',
            ...JOINED_PREVIEW_COLUMNS,
            (eb) => eb.exists(activeEndpoints(eb)).as('owner_has_webhooks'),
          ])
          // The page of a file in the trash, or of a disabled account, answers as a link that never was.
          .where('files.trashed_at', 'is', null)
          .where(ownerEnabled)
          .where('shares.public_id', 'in', publicIds),
      (row) => row.public_id,
    )
    this.#addVisits = countVisitStatements(db)
    this.#countLimitedDownload = compileOnce(1, (shareId: string) =>
      db.kysely
        .updateTable('shares')
        .set((eb) => ({ download_count: eb('download_count', '+', 1) }))
        .where('id', '=', shareId)
        .where((eb) =>
          eb.or([eb('max_downloads', 'is', null), eb('download_count', '<', eb.ref('max_downloads'))]),
        ),
    )
  }

  /**
   * shares ⋈ files: a page of shares with their files is one query. The link of a file in the trash is gone
   * with it, until the file is restored.
   */
  #selectWithFile(executor: Executor = this.#db) {
    return executor
      .selectFrom('shares')
      .innerJoin('files', 'files.id', 'shares.file_id')
      .select([
        ...SHARE_COLUMNS,
        'files.name as file_name',
        'files.content_type as file_content_type',
        'files.size as file_size',
      ])
      .where('files.trashed_at', 'is', null)
  }

  async list(accountId: string, page: { cursor?: string; limit: number }): Promise<Page<ShareWithFile>> {
    const now = Date.now()
    const rows = await this.#listPage([accountId], page.cursor, page.limit)
    return toPage(rows, page.limit, (row) => toShareWithFile(row, now))
  }

  async get(accountId: string, shareId: string, executor?: Executor): Promise<ShareWithFile | undefined> {
    const row = await this.#selectWithFile(executor)
      .where('shares.id', '=', shareId)
      .where('shares.account_id', '=', accountId)
      .executeTakeFirst()
    return row && toShareWithFile(row, Date.now())
  }

  async byFile(accountId: string, fileId: string, executor: Executor = this.#db): Promise<Share | undefined> {
    const row = await executor
      .selectFrom('shares')
      .select(SHARE_FIELDS)
      .where('file_id', '=', fileId)
      .where('account_id', '=', accountId)
      .executeTakeFirst()
    return row && toShare(row, Date.now())
  }

  /**
   * Turns the file's link back on with `expiresAt` and the other settings given, if it is disabled or
   * expired; undefined otherwise.
   */
  async reactivate(
    accountId: string,
    fileId: string,
    settings: Omit<ShareSettings, 'isActive'> & { expiresAt: number | null },
    executor: Executor = this.#db,
  ): Promise<Share | undefined> {
    const now = Date.now()
    const row = await reactivation(executor, accountId, { file: fileId }, settings, now)
      .returning(SHARE_FIELDS)
      .executeTakeFirst()
    return row && toShare(row, now)
  }

  /** A target with a link already is a unique violation; a target that is gone, a foreign-key violation. */
  async insert(link: NewLinkRow, executor: Executor = this.#db): Promise<void> {
    await executor
      .insertInto('shares')
      .values({
        id: link.id,
        account_id: link.accountId,
        file_id: link.target.fileId ?? null,
        folder_id: link.target.folderId ?? null,
        public_id: link.publicId,
        is_active: true,
        expires_at: link.expiresAt,
        view_count: 0,
        download_count: 0,
        password_hash: link.passwordHash,
        max_downloads: link.maxDownloads,
        created_at: link.createdAt,
        updated_at: link.createdAt,
      })
      .execute()
  }

  /**
   * Changes the settings given of the account's link of `target`'s kind; with `skipExpired`, only if its stored
   * expiry has not passed. Undefined when nothing was changed: no such link, or its expiry has passed.
   */
  async update(
    target: LinkTarget,
    accountId: string,
    shareId: string,
    changes: ShareSettings,
    options: { skipExpired: boolean },
    executor: Executor = this.#db,
  ): Promise<(Link & { targetId: string }) | undefined> {
    const now = Date.now()
    let query = executor
      .updateTable('shares')
      .set({ ...settingsToColumns(changes), updated_at: now })
      .where('id', '=', shareId)
      .where('account_id', '=', accountId)
      .where(TARGET_COLUMN[target], 'is not', null)
    if (options.skipExpired) {
      query = query.where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    }
    const row = await query.returning([...LINK_FIELDS, 'file_id', 'folder_id']).executeTakeFirst()
    return row && { ...toLink(row, now), targetId: (row.file_id ?? row.folder_id) as string }
  }

  /**
   * The account's link of `target`'s kind as it is before a change, with its file's or folder's name, in the
   * changing transaction: locked on PostgreSQL until it commits, so that what the audit log says the change
   * was (SharesService's changeLink) is what it was; SQLite's transactions exclude each other already.
   */
  async beforeChange(
    trx: Transaction,
    target: LinkTarget,
    accountId: string,
    shareId: string,
  ): Promise<(Link & { targetName: string }) | undefined> {
    const query = trx
      .selectFrom('shares')
      .leftJoin('files', 'files.id', 'shares.file_id')
      .leftJoin('folders', 'folders.id', 'shares.folder_id')
      .select([...LINK_COLUMNS, 'files.name as file_name', 'folders.name as folder_name'])
      .where('shares.id', '=', shareId)
      .where('shares.account_id', '=', accountId)
      .where(`shares.${TARGET_COLUMN[target]}`, 'is not', null)
    const row = await (this.#database.engine === 'postgres'
      ? query.forUpdate('shares')
      : query
    ).executeTakeFirst()
    return row && { ...toLink(row, Date.now()), targetName: row.file_name ?? row.folder_name ?? '' }
  }

  /** The stored expiry of the account's link of `target`'s kind: undefined when there is none, null for none. */
  async storedExpiry(
    target: LinkTarget,
    accountId: string,
    shareId: string,
  ): Promise<number | null | undefined> {
    const row = await this.#db
      .selectFrom('shares')
      .select('expires_at')
      .where('id', '=', shareId)
      .where('account_id', '=', accountId)
      .where(TARGET_COLUMN[target], 'is not', null)
      .executeTakeFirst()
    return row && (row.expires_at === null ? null : Number(row.expires_at))
  }

  /**
   * Folds what the links of the account's given files counted, day by day, into the account's past counts
   * (migration 0029), in the transaction that is about to delete the files: their links and days' rows go with
   * them, what they counted stays in the account's totals and chart. One statement, whatever the files.
   */
  async keepCountsOfFiles(trx: Transaction, accountId: string, fileIds: string[]): Promise<void> {
    if (fileIds.length === 0) return
    await this.#keepCounts(trx, accountId, 'file_id', fileIds)
  }

  /** `keepCountsOfFiles` for the link of the account's folder, in the transaction about to delete the folder. */
  async keepCountsOfFolder(trx: Transaction, accountId: string, folderId: string): Promise<void> {
    await this.#keepCounts(trx, accountId, 'folder_id', [folderId])
  }

  async #keepCounts(
    trx: Transaction,
    accountId: string,
    column: (typeof TARGET_COLUMN)[LinkTarget],
    targetIds: string[],
  ): Promise<void> {
    await trx
      .insertInto('past_share_counts')
      .columns(['account_id', 'day', 'views', 'downloads'])
      .expression((eb) =>
        eb
          .selectFrom('share_daily_counts')
          .innerJoin('shares', 'shares.id', 'share_daily_counts.share_id')
          // SQLite reads an upsert's SELECT right only with a WHERE, which this one has.
          .where('shares.account_id', '=', accountId)
          .where(`shares.${column}`, 'in', targetIds)
          .select((s) => [
            'shares.account_id',
            'share_daily_counts.day',
            s.fn.sum<number>('share_daily_counts.views').as('views'),
            s.fn.sum<number>('share_daily_counts.downloads').as('downloads'),
          ])
          .groupBy(['shares.account_id', 'share_daily_counts.day']),
      )
      .onConflict((oc) =>
        oc.columns(['account_id', 'day']).doUpdateSet((eb) => ({
          views: eb('past_share_counts.views', '+', eb.ref('excluded.views')),
          downloads: eb('past_share_counts.downloads', '+', eb.ref('excluded.downloads')),
        })),
      )
      .execute()
  }

  /** The link behind a public id, whatever its state, with its file and preview; undefined if none. */
  async byPublicId(publicId: string): Promise<PublicLinkRow | undefined> {
    const row = await this.#publicLink(publicId)
    if (!row) return undefined
    const share = toShare(row, Date.now())
    return {
      share: { ...share, accountId: row.account_id, passwordHash: row.password_hash },
      file: {
        id: share.fileId,
        name: row.file_name,
        contentType: row.file_content_type,
        size: Number(row.file_size),
        sha256: row.file_sha256,
        createdAt: Number(row.file_created_at),
        blobKey: row.file_blob_key,
      },
      preview: joinedPreview(row),
      ownerHasWebhooks: Boolean(row.owner_has_webhooks),
    }
  }

  /**
   * Counts visits, with the day's counts, committed when this resolves (or with `trx`, the caller's
   * transaction): per link, its views and unlimited downloads with the day's counts in one go (one statement on
   * PostgreSQL, which can update and insert in one; two in a transaction on SQLite), and each download of a
   * limited link by a conditional statement of its own, so that the limit holds exactly. Several links are
   * written in the order of their ids, so that concurrent batches of several processes always lock them in the
   * same order. One outcome per visit: true when it was counted, false when its link's download limit had been
   * reached (nothing is counted then).
   */
  async countVisits(visits: Visit[], trx?: Transaction): Promise<boolean[]> {
    const day = Math.floor(Date.now() / DAY_MS)
    const counted = visits.map(() => true)
    const byShare = new Map<string, { views: number; downloads: number; limited: number[] }>()
    visits.forEach((visit, i) => {
      let tally = byShare.get(visit.shareId)
      if (!tally) {
        tally = { views: 0, downloads: 0, limited: [] }
        byShare.set(visit.shareId, tally)
      }
      if (visit.kind === 'view') tally.views++
      else if (visit.limited) tally.limited.push(i)
      else tally.downloads++
    })
    const write = async (executor: Executor) => {
      for (const [shareId, { views, downloads, limited }] of [...byShare].sort(([a], [b]) =>
        a < b ? -1 : 1,
      )) {
        let granted = 0
        for (const i of limited) {
          const { numAffectedRows } = await executor.executeQuery(this.#countLimitedDownload(shareId))
          if (Number(numAffectedRows) > 0) granted++
          else counted[i] = false
        }
        // The limited downloads granted were counted in total above; they count for the day here.
        if (views > 0 || downloads > 0 || granted > 0) {
          for (const statement of this.#addVisits(shareId, day, views, downloads, granted)) {
            await executor.executeQuery(statement)
          }
        }
      }
    }
    const statements = (this.#database.engine === 'postgres' ? 1 : 2) * byShare.size
    if (trx) await write(trx)
    else if (statements === 1 && visits.every((visit) => !visit.limited)) await write(this.#db)
    else await this.#database.transaction(write)
    return counted
  }
}
