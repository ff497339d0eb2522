// Share analytics: a share's counts, the account's totals, and a share's counts per day
// (analytics.repository.ts).
import { invalid, notFound } from '../errors.ts'
import { DAY_MS } from '../shares/shares.repository.ts'
import type { AggregateAnalytics, AnalyticsRepository, ShareAnalytics } from './analytics.repository.ts'

/** The days a daily series covers when none are asked for: the last 30, today included. */
export const DEFAULT_DAYS = 30
/** The most days one daily series covers. */
export const MAX_DAYS = 366

/** A share's counts for each day of a period, days without any included as zeros. */
export interface DailySeries {
  shareId: string
  /** The first and last day, inclusive, as the epoch ms of their UTC midnights; so is each day's `date`. */
  from: number
  to: number
  days: { date: number; views: number; downloads: number }[]
}

export class AnalyticsService {
  readonly #analytics: AnalyticsRepository

  constructor(deps: { analytics: AnalyticsRepository }) {
    this.#analytics = deps.analytics
  }

  async forShare(accountId: string, shareId: string): Promise<ShareAnalytics> {
    const analytics = await this.#analytics.forShare(accountId, shareId)
    if (!analytics) throw notFound(`Share ${shareId}`)
    return analytics
  }

  aggregate(accountId: string): Promise<AggregateAnalytics> {
    return this.#analytics.aggregate(accountId)
  }

  /**
   * The share's views and downloads on each day from `from` to `to` (epoch ms of UTC midnights, inclusive);
   * by default the last DEFAULT_DAYS days up to today, or up to `to`, or from `from`.
   */
  async daily(
    accountId: string,
    shareId: string,
    period: { from?: number; to?: number },
  ): Promise<DailySeries> {
    const today = Math.floor(Date.now() / DAY_MS)
    const toDay = period.to === undefined ? undefined : Math.floor(period.to / DAY_MS)
    const fromDay = period.from === undefined ? undefined : Math.floor(period.from / DAY_MS)
    const last = toDay ?? (fromDay === undefined ? today : Math.min(fromDay + DEFAULT_DAYS - 1, today))
    const first = fromDay ?? last - DEFAULT_DAYS + 1
    if (first > last) throw invalid('The query parameter "from" must not be after "to".')
    if (last - first + 1 > MAX_DAYS) {
      throw invalid(`The period from "from" to "to" must be at most ${MAX_DAYS} days.`)
    }
    const counted = await this.#analytics.daily(accountId, shareId, first, last)
    if (!counted) throw notFound(`Share ${shareId}`)
    const byDay = new Map(counted.map((counts) => [counts.day, counts]))
    const days: DailySeries['days'] = []
    for (let day = first; day <= last; day++) {
      const { views = 0, downloads = 0 } = byDay.get(day) ?? {}
      days.push({ date: day * DAY_MS, views, downloads })
    }
    return { shareId, from: first * DAY_MS, to: last * DAY_MS, days }
  }
}
