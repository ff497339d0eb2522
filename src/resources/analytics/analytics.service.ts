// Share analytics: a share's counts, the account's totals, views and downloads per day (of a share or of the
// whole account), the shares most viewed and downloaded in a period, and what the analytics page shows, made
// of those same methods so that the page and the API never disagree (analytics.repository.ts).
import { invalid, notFound } from '../../platform/errors.ts'
import { DAY_MS } from '../shares/shares.repository.ts'
import type {
  AggregateAnalytics,
  AnalyticsRepository,
  DailyCounts,
  LinkTargetName,
  ShareAnalytics,
  ShareChoice,
  ShareInPeriod,
} from './analytics.repository.ts'

/** The days a daily series covers when none are asked for: the last 30, today included. */
export const DEFAULT_DAYS = 30
/** The most days one daily series covers. */
export const MAX_DAYS = 366
/** The shares each list of the most viewed and downloaded holds by default, and at most. */
export const DEFAULT_TOP = 5
export const MAX_TOP = 25
/** The periods the analytics page offers, in days up to today. */
export const PAGE_RANGES = [7, 30, 90] as const
export type PageRange = (typeof PAGE_RANGES)[number]
/** The shares the page's picker lists: the newest, so that its cost stays bounded. */
export const PAGE_CHOICES = 250

/** A period asked for: the epoch ms of the UTC midnights of its first and last days, either left out. */
export interface Period {
  from?: number
  to?: number
}

/** Counts for each day of a period, days without any included as zeros. */
export interface DailySeries {
  /** The share counted; null for all the account's shares. */
  shareId: string | null
  /** The first and last day, inclusive, as the epoch ms of their UTC midnights; so is each day's `date`. */
  from: number
  to: number
  days: { date: number; views: number; downloads: number }[]
}

/** The shares with the most views, and those with the most downloads, in a period. */
export interface TopShares {
  from: number
  to: number
  mostViewed: ShareInPeriod[]
  mostDownloaded: ShareInPeriod[]
}

/** Everything the analytics page shows, read through the methods the API calls. */
export interface AnalyticsOverview {
  range: PageRange
  totals: AggregateAnalytics
  /** The share chosen, with its all-time counts; null for all shares. */
  share: (ShareAnalytics & LinkTargetName) | null
  series: DailySeries
  top: TopShares
  /** Shares to choose from, by file name: the newest PAGE_CHOICES, and the one chosen. */
  choices: ShareChoice[]
  /** Whether the account has shares beyond those listed. */
  moreChoices: boolean
}

const collator = new Intl.Collator('en', { sensitivity: 'base', numeric: true })

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
   * Views and downloads on each day from `from` to `to` (epoch ms of UTC midnights, inclusive), of the share
   * or, without one, of all the account's shares; by default the last DEFAULT_DAYS days up to today, or up to
   * `to`, or from `from`.
   */
  async daily(accountId: string, shareId: string | undefined, period: Period): Promise<DailySeries> {
    const { first, last } = resolve(period)
    let counted: DailyCounts[] | undefined
    if (shareId === undefined) counted = await this.#analytics.accountDaily(accountId, first, last)
    else {
      counted = await this.#analytics.daily(accountId, shareId, first, last)
      if (!counted) throw notFound(`Share ${shareId}`)
    }
    const byDay = new Map(counted.map((counts) => [counts.day, counts]))
    const days: DailySeries['days'] = []
    for (let day = first; day <= last; day++) {
      const { views = 0, downloads = 0 } = byDay.get(day) ?? {}
      days.push({ date: day * DAY_MS, views, downloads })
    }
    return { shareId: shareId ?? null, from: first * DAY_MS, to: last * DAY_MS, days }
  }

  /** The `limit` shares most viewed, and the `limit` most downloaded, in the period (as `daily` reads it). */
  async top(accountId: string, period: Period, limit = DEFAULT_TOP): Promise<TopShares> {
    const { first, last } = resolve(period)
    const [mostViewed, mostDownloaded] = await Promise.all([
      this.#analytics.top(accountId, 'views', first, last, limit),
      this.#analytics.top(accountId, 'downloads', first, last, limit),
    ])
    return { from: first * DAY_MS, to: last * DAY_MS, mostViewed, mostDownloaded }
  }

  /**
   * The analytics page: the account's totals (or the chosen share's), the days of the last `range` days, the
   * shares most viewed and downloaded in them, and the shares to choose from. Another account's share is a
   * 404, before anything is read.
   */
  async overview(
    accountId: string,
    view: { range: PageRange; shareId?: string },
  ): Promise<AnalyticsOverview> {
    const chosen = view.shareId === undefined ? undefined : await this.#chosen(accountId, view.shareId)
    const today = Math.floor(Date.now() / DAY_MS)
    const period = { from: (today - view.range + 1) * DAY_MS, to: today * DAY_MS }
    const [totals, share, series, top, listed] = await Promise.all([
      this.aggregate(accountId),
      chosen && this.forShare(accountId, chosen.shareId),
      this.daily(accountId, chosen?.shareId, period),
      this.top(accountId, period),
      this.#analytics.choices(accountId, PAGE_CHOICES),
    ])
    const choices = listed.choices
    if (chosen && !choices.some((choice) => choice.shareId === chosen.shareId)) choices.push(chosen)
    choices.sort((a, b) => collator.compare(a.name, b.name) || (a.shareId < b.shareId ? -1 : 1))
    return {
      range: view.range,
      totals,
      share:
        chosen && share
          ? { ...share, fileId: chosen.fileId, folderId: chosen.folderId, name: chosen.name }
          : null,
      series,
      top,
      choices,
      moreChoices: listed.more,
    }
  }

  async #chosen(accountId: string, shareId: string): Promise<ShareChoice> {
    const choice = await this.#analytics.choice(accountId, shareId)
    if (!choice) throw notFound(`Share ${shareId}`)
    return choice
  }
}

/** The first and last days (days since 1970-01-01) of a period asked for, with the defaults and bounds. */
function resolve(period: Period): { first: number; last: number } {
  const today = Math.floor(Date.now() / DAY_MS)
  const toDay = period.to === undefined ? undefined : Math.floor(period.to / DAY_MS)
  const fromDay = period.from === undefined ? undefined : Math.floor(period.from / DAY_MS)
  const last = toDay ?? (fromDay === undefined ? today : Math.min(fromDay + DEFAULT_DAYS - 1, today))
  const first = fromDay ?? last - DEFAULT_DAYS + 1
  if (first > last) throw invalid('The query parameter "from" must not be after "to".')
  if (last - first + 1 > MAX_DAYS) {
    throw invalid(`The period from "from" to "to" must be at most ${MAX_DAYS} days.`)
  }
  return { first, last }
}
