// Share analytics' SQL: read straight from the counters the public share page increments. The aggregate is
// one statement over the account's rows (shares and file requests are both indexed by account). The account's
// days, and its shares that the most people viewed or downloaded in a period, are read from the index of the
// days' rows by account and day (migration 0014): what they cost grows with the rows of the period, not with
// the shares the account has. What the links of deleted files counted stays in the account's totals and days
// (migration 0029).
import type { Kysely } from 'kysely'
import type { Db } from '../../platform/db/database.ts'
import type { Database } from '../../platform/db/schema.ts'
import { isActiveState, type ShareState, shareStateOfRow } from '../files/share-state.ts'
import { requestTakesFilesNow } from '../requests/requests.repository.ts'
import { shareOpensNow } from '../shares/shares.repository.ts'

export interface ShareAnalytics {
  shareId: string
  views: number
  downloads: number
  /** What the link is now (share-state.ts). */
  state: ShareState
  /** The API's `isActive`, from `state`: false once disabled or expired. */
  isActive: boolean
  expiresAt: number | null
}

/** A share's counts on one UTC day (days since 1970-01-01). */
export interface DailyCounts {
  day: number
  views: number
  downloads: number
}

/** What a link opens: a file (`fileId`) or a folder (`folderId`), and its name. */
export interface LinkTargetName {
  fileId: string | null
  folderId: string | null
  /** The file's name, or the folder's. */
  name: string
}

/** A share's counts over a period, with what it opens. */
export interface ShareInPeriod extends LinkTargetName {
  shareId: string
  views: number
  downloads: number
}

/** A share as a choice in a list: what it opens, and whether the link works now. */
export interface ShareChoice extends LinkTargetName {
  shareId: string
  state: ShareState
}

type TargetRow = {
  file_id: string | null
  file_name: string | null
  folder_id: string | null
  folder_name: string | null
}

function targetOf(row: TargetRow): LinkTargetName {
  return { fileId: row.file_id, folderId: row.folder_id, name: row.file_name ?? row.folder_name ?? '' }
}

function toChoice(
  row: Parameters<typeof shareStateOfRow>[0] & TargetRow & { id: string },
  now: number,
): ShareChoice {
  return { shareId: row.id, ...targetOf(row), state: shareStateOfRow(row, now) }
}

/**
 * shares ⟕ files ⟕ folders, keeping the links that open something now: a folder's, or a file's while the file is
 * not in the trash (its link is gone with it until it is restored; what it counted is not).
 */
function linksInUse(db: Kysely<Database>) {
  return db
    .selectFrom('shares')
    .leftJoin('files', 'files.id', 'shares.file_id')
    .leftJoin('folders', 'folders.id', 'shares.folder_id')
    .where((eb) => eb.or([eb('shares.folder_id', 'is not', null), eb('files.trashed_at', 'is', null)]))
}

const TARGET_COLUMNS = [
  'files.id as file_id',
  'files.name as file_name',
  'folders.id as folder_id',
  'folders.name as folder_name',
] as const

export interface AggregateAnalytics {
  shares: number
  /** Links that open now: in state `active` (share-state.ts). */
  activeShares: number
  /** File requests that take files now: in state `open` (request-state.ts). */
  activeRequests: number
  views: number
  downloads: number
}

export class AnalyticsRepository {
  readonly #db: Kysely<Database>

  constructor(db: Db) {
    this.#db = db.kysely
  }

  async forShare(accountId: string, shareId: string): Promise<ShareAnalytics | undefined> {
    const row = await this.#db
      .selectFrom('shares')
      .select(['id', 'view_count', 'download_count', 'is_active', 'expires_at', 'max_downloads'])
      .where('id', '=', shareId)
      .where('account_id', '=', accountId)
      .executeTakeFirst()
    if (!row) return undefined
    const state = shareStateOfRow(row)
    return {
      shareId: row.id,
      views: Number(row.view_count),
      downloads: Number(row.download_count),
      state,
      isActive: isActiveState(state),
      expiresAt: row.expires_at === null ? null : Number(row.expires_at),
    }
  }

  async aggregate(accountId: string): Promise<AggregateAnalytics> {
    const now = Date.now()
    const row = await this.#db
      .selectFrom('shares')
      .leftJoin('files', 'files.id', 'shares.file_id')
      .where('shares.account_id', '=', accountId)
      .select((eb) => {
        // The links of files in the trash are gone with them (until restored); what they counted is not.
        const inUse = eb.or([eb('shares.folder_id', 'is not', null), eb('files.trashed_at', 'is', null)])
        return [
          eb.fn.countAll<number>().filterWhere(inUse).as('shares'),
          eb.fn
            .countAll<number>()
            .filterWhere((w) => w.and([inUse, shareOpensNow(w, now)]))
            .as('active_shares'),
          // SUM over no rows is NULL; an account without shares has 0 views.
          eb.fn.coalesce(eb.fn.sum<number>('shares.view_count'), eb.lit(0)).as('views'),
          eb.fn.coalesce(eb.fn.sum<number>('shares.download_count'), eb.lit(0)).as('downloads'),
          // What the links of deleted files counted (migration 0029): what happened stays in the totals.
          eb
            .selectFrom('past_share_counts')
            .select((p) => p.fn.coalesce(p.fn.sum<number>('views'), p.lit(0)).as('n'))
            .where('past_share_counts.account_id', '=', accountId)
            .as('past_views'),
          eb
            .selectFrom('past_share_counts')
            .select((p) => p.fn.coalesce(p.fn.sum<number>('downloads'), p.lit(0)).as('n'))
            .where('past_share_counts.account_id', '=', accountId)
            .as('past_downloads'),
          eb
            .selectFrom('file_requests')
            .select((r) => r.fn.countAll<number>().as('n'))
            .where('file_requests.account_id', '=', accountId)
            .where((r) => requestTakesFilesNow(r, now))
            .as('active_requests'),
        ]
      })
      .executeTakeFirstOrThrow()
    return {
      shares: Number(row.shares),
      activeShares: Number(row.active_shares),
      activeRequests: Number(row.active_requests),
      views: Number(row.views) + Number(row.past_views),
      downloads: Number(row.downloads) + Number(row.past_downloads),
    }
  }

  /**
   * The share's counts per day from `fromDay` to `toDay` (inclusive), for the days that have any, in order;
   * undefined when the account has no such share.
   */
  async daily(
    accountId: string,
    shareId: string,
    fromDay: number,
    toDay: number,
  ): Promise<DailyCounts[] | undefined> {
    const share = await this.#db
      .selectFrom('shares')
      .select('id')
      .where('id', '=', shareId)
      .where('account_id', '=', accountId)
      .executeTakeFirst()
    if (!share) return undefined
    const rows = await this.#db
      .selectFrom('share_daily_counts')
      .select(['day', 'views', 'downloads'])
      .where('share_id', '=', shareId)
      .where('day', '>=', fromDay)
      .where('day', '<=', toDay)
      .orderBy('day')
      .execute()
    return rows.map((row) => ({
      day: Number(row.day),
      views: Number(row.views),
      downloads: Number(row.downloads),
    }))
  }

  /**
   * The account's counts per day from `fromDay` to `toDay` (inclusive), summed over its shares and what the links
   * of its deleted files counted, for the days that have any, in order.
   */
  async accountDaily(accountId: string, fromDay: number, toDay: number): Promise<DailyCounts[]> {
    const rows = await this.#db
      .selectFrom((db) =>
        db
          .selectFrom('share_daily_counts')
          .select(['day', 'views', 'downloads'])
          .where('account_id', '=', accountId)
          .where('day', '>=', fromDay)
          .where('day', '<=', toDay)
          .unionAll(
            db
              .selectFrom('past_share_counts')
              .select(['day', 'views', 'downloads'])
              .where('account_id', '=', accountId)
              .where('day', '>=', fromDay)
              .where('day', '<=', toDay),
          )
          .as('days'),
      )
      .select((eb) => [
        'days.day',
        eb.fn.sum<number>('days.views').as('views'),
        eb.fn.sum<number>('days.downloads').as('downloads'),
      ])
      .groupBy('days.day')
      .orderBy('days.day')
      .execute()
    return rows.map((row) => ({
      day: Number(row.day),
      views: Number(row.views),
      downloads: Number(row.downloads),
    }))
  }

  /**
   * The account's `limit` shares with the most views (or downloads) from `fromDay` to `toDay`, most first,
   * with their counts of the period and their files; only shares with at least one. Ties go to the other
   * count, then to the newer share.
   */
  async top(
    accountId: string,
    by: 'views' | 'downloads',
    fromDay: number,
    toDay: number,
    limit: number,
  ): Promise<ShareInPeriod[]> {
    const other = by === 'views' ? 'downloads' : 'views'
    const rows = await this.#db
      .with('period', (db) =>
        db
          .selectFrom('share_daily_counts')
          .where('account_id', '=', accountId)
          .where('day', '>=', fromDay)
          .where('day', '<=', toDay)
          .select((eb) => [
            'share_id',
            eb.fn.sum<number>('views').as('views'),
            eb.fn.sum<number>('downloads').as('downloads'),
          ])
          .groupBy('share_id'),
      )
      .selectFrom('period')
      .innerJoin('shares', 'shares.id', 'period.share_id')
      .leftJoin('files', 'files.id', 'shares.file_id')
      .leftJoin('folders', 'folders.id', 'shares.folder_id')
      .select(['period.share_id', 'period.views', 'period.downloads', ...TARGET_COLUMNS])
      // A link whose file is in the trash is counted in the totals, and not listed.
      .where((eb) => eb.or([eb('shares.folder_id', 'is not', null), eb('files.trashed_at', 'is', null)]))
      .where(`period.${by}`, '>', 0)
      .orderBy(`period.${by}`, 'desc')
      .orderBy(`period.${other}`, 'desc')
      .orderBy('period.share_id', 'desc')
      .limit(limit)
      .execute()
    return rows.map((row) => ({
      shareId: row.share_id,
      ...targetOf(row),
      views: Number(row.views),
      downloads: Number(row.downloads),
    }))
  }

  /** The account's share as a choice, with its file's name; undefined when the account has no such share. */
  async choice(accountId: string, shareId: string): Promise<ShareChoice | undefined> {
    const row = await this.#choices(accountId).where('shares.id', '=', shareId).executeTakeFirst()
    return row && toChoice(row, Date.now())
  }

  /**
   * The account's `limit` newest shares with their files' names, and whether it has more: a bounded walk of
   * the shares' order index, whatever the number of shares.
   */
  async choices(accountId: string, limit: number): Promise<{ choices: ShareChoice[]; more: boolean }> {
    const now = Date.now()
    const rows = await this.#choices(accountId)
      .orderBy('shares.created_at', 'desc')
      .orderBy('shares.id', 'desc')
      .limit(limit + 1)
      .execute()
    return { choices: rows.slice(0, limit).map((row) => toChoice(row, now)), more: rows.length > limit }
  }

  #choices(accountId: string) {
    return linksInUse(this.#db)
      .select([
        'shares.id',
        'shares.is_active',
        'shares.expires_at',
        'shares.download_count',
        'shares.max_downloads',
        ...TARGET_COLUMNS,
      ])
      .where('shares.account_id', '=', accountId)
  }
}
