// Share analytics' SQL: read straight from the counters the public share page increments. The aggregate is
// one statement over the account's rows (shares and file requests are both indexed by account).
import type { Kysely } from 'kysely'
import type { Db } from '../db/database.ts'
import type { Database } from '../db/schema.ts'
import { isShareActive } from '../shares/shares.repository.ts'

export interface ShareAnalytics {
  shareId: string
  views: number
  downloads: number
  /** Effective: false once `expiresAt` has passed. */
  isActive: boolean
  expiresAt: number | null
}

/** A share's counts on one UTC day (days since 1970-01-01). */
export interface DailyCounts {
  day: number
  views: number
  downloads: number
}

export interface AggregateAnalytics {
  shares: number
  /** Links that work now: enabled and not expired. */
  activeShares: number
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
      .select(['id', 'view_count', 'download_count', 'is_active', 'expires_at'])
      .where('id', '=', shareId)
      .where('account_id', '=', accountId)
      .executeTakeFirst()
    if (!row) return undefined
    const expiresAt = row.expires_at === null ? null : Number(row.expires_at)
    return {
      shareId: row.id,
      views: Number(row.view_count),
      downloads: Number(row.download_count),
      isActive: isShareActive(row.is_active, expiresAt),
      expiresAt,
    }
  }

  async aggregate(accountId: string): Promise<AggregateAnalytics> {
    const now = Date.now()
    const row = await this.#db
      .selectFrom('shares')
      .where('shares.account_id', '=', accountId)
      .select((eb) => [
        eb.fn.countAll<number>().as('shares'),
        eb.fn
          .countAll<number>()
          .filterWhere((w) =>
            w.and([
              w('shares.is_active', '=', true),
              w.or([w('shares.expires_at', 'is', null), w('shares.expires_at', '>', now)]),
            ]),
          )
          .as('active_shares'),
        // SUM over no rows is NULL; an account without shares has 0 views.
        eb.fn.coalesce(eb.fn.sum<number>('shares.view_count'), eb.lit(0)).as('views'),
        eb.fn.coalesce(eb.fn.sum<number>('shares.download_count'), eb.lit(0)).as('downloads'),
        eb
          .selectFrom('file_requests')
          .select((r) => r.fn.countAll<number>().as('n'))
          .where('file_requests.account_id', '=', accountId)
          .where('file_requests.is_active', '=', true)
          .as('active_requests'),
      ])
      .executeTakeFirstOrThrow()
    return {
      shares: Number(row.shares),
      activeShares: Number(row.active_shares),
      activeRequests: Number(row.active_requests),
      views: Number(row.views),
      downloads: Number(row.downloads),
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
}
