import { Type } from 'typebox'
import { DateTime, Extension, Nullable, toIsoOrNull } from '../../platform/http/schemas.ts'
import type { ShareAnalytics } from './analytics.repository.ts'
import {
  type DailySeries,
  DEFAULT_DAYS,
  DEFAULT_TOP,
  MAX_DAYS,
  MAX_TOP,
  type TopShares,
} from './analytics.service.ts'

const Count = (description: string) => Type.Integer({ minimum: 0, description })

export const ShareAnalyticsSchema = Type.Object(
  {
    shareId: Type.String(),
    views: Count('Views of the public share page.'),
    downloads: Count('Downloads through the public link.'),
    isActive: Type.Boolean({
      description:
        'false when the link is disabled, and false once `expiresAt` has passed; `state` says whether it opens.',
    }),
    state: Extension(Type.Ref('ShareState', { readOnly: true })),
    expiresAt: Nullable(DateTime()),
  },
  { $id: 'ShareAnalytics', additionalProperties: false, description: 'Counts of one share link.' },
)

export const AggregateAnalyticsSchema = Type.Object(
  {
    shares: Count('Share links of the account: of files (those in the trash left out) and of folders.'),
    activeShares: Count(
      'Share links that open now: those whose `state` is `active`, of files and of folders.',
    ),
    activeRequests: Count('File requests that take files now: those whose `state` is `open`.'),
    views: Count('Views of all share links, of files and of folders, those of deleted ones included.'),
    downloads: Count(
      'Downloads through all share links, of files and of folders, those of deleted ones included.',
    ),
  },
  { $id: 'AggregateAnalytics', additionalProperties: false, description: 'Totals over the account.' },
)

export const AnalyticsQuery = Type.Object(
  {
    shareId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 128,
        description: 'An owned share: answer with its ShareAnalytics instead of the totals.',
      }),
    ),
  },
  { additionalProperties: false },
)

/** A share's analytics as ShareAnalyticsSchema shows them. */
export const serializeShareAnalytics = (share: ShareAnalytics) => ({
  ...share,
  expiresAt: toIsoOrNull(share.expiresAt),
})

const Day = (description: string) => Type.String({ format: 'date', description })

const DayCounts = Type.Object(
  {
    date: Day('A day of the period (UTC).'),
    views: Count('Views of the public share page that day.'),
    downloads: Count('Downloads through the public link that day.'),
  },
  { additionalProperties: false },
)

const EveryDay = Type.Array(DayCounts, {
  description: 'Every day of the period, in order; a day without views or downloads has zeros.',
})

export const ShareDailyAnalyticsSchema = Extension(
  Type.Object(
    {
      shareId: Type.String(),
      from: Day('The first day of the period (UTC), inclusive.'),
      to: Day('The last day of the period (UTC), inclusive.'),
      days: EveryDay,
    },
    {
      $id: 'ShareDailyAnalytics',
      additionalProperties: false,
      description:
        "A share link's views and downloads on each day of a period, counted as ShareAnalytics counts them.",
    },
  ),
)

export const AccountDailyAnalyticsSchema = Extension(
  Type.Object(
    {
      from: Day('The first day of the period (UTC), inclusive.'),
      to: Day('The last day of the period (UTC), inclusive.'),
      days: EveryDay,
    },
    {
      $id: 'AccountDailyAnalytics',
      additionalProperties: false,
      description:
        "The views and downloads of all the account's share links on each day of a period: the sums of their ShareDailyAnalytics.",
    },
  ),
)

const From = () =>
  Type.Optional(Day(`The first day (UTC), inclusive. Default: ${DEFAULT_DAYS - 1} days before \`to\`.`))
const To = () =>
  Type.Optional(
    Day(
      `The last day (UTC), inclusive. Default: today, or ${DEFAULT_DAYS - 1} days after \`from\` (today at the latest). At most ${MAX_DAYS} days in all.`,
    ),
  )

export const DailyAnalyticsQuery = Type.Object(
  {
    shareId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 128,
        description: "An owned share; without it, the sums over all the account's shares.",
      }),
    ),
    from: From(),
    to: To(),
  },
  { additionalProperties: false },
)

const TopShare = Type.Object(
  {
    shareId: Type.String(),
    fileId: Nullable(Type.String({ description: "The link's file; null for a folder link." })),
    folderId: Nullable(Type.String({ description: "The link's folder; null for a file link." })),
    name: Type.String({ description: "The file's name, or the folder's for a folder link." }),
    views: Count('Views of the public share page in the period.'),
    downloads: Count('Downloads through the public link in the period.'),
  },
  { additionalProperties: false },
)

export const TopSharesSchema = Extension(
  Type.Object(
    {
      from: Day('The first day of the period (UTC), inclusive.'),
      to: Day('The last day of the period (UTC), inclusive.'),
      mostViewed: Type.Array(TopShare, {
        description:
          'The share links with the most views in the period, most first (ties: more downloads, then the newer link); only links with at least one.',
      }),
      mostDownloaded: Type.Array(TopShare, {
        description:
          'The share links with the most downloads in the period, most first (ties: more views, then the newer link); only links with at least one.',
      }),
    },
    {
      $id: 'TopShares',
      additionalProperties: false,
      description:
        "The account's share links most viewed and most downloaded in a period, with what they open (a file or a folder), counted as ShareDailyAnalytics counts them.",
    },
  ),
)

export const TopSharesQuery = Type.Object(
  {
    from: From(),
    to: To(),
    count: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_TOP,
        default: DEFAULT_TOP,
        description: `Links in each list at most (default ${DEFAULT_TOP}). Not a page size: the lists have no further pages.`,
      }),
    ),
  },
  { additionalProperties: false },
)

/** The UTC date of a midnight, YYYY-MM-DD. */
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10)

/** A daily series as ShareDailyAnalyticsSchema shows it, or AccountDailyAnalyticsSchema for all shares. */
export const serializeDailySeries = (series: DailySeries) => {
  const period = {
    from: isoDay(series.from),
    to: isoDay(series.to),
    days: series.days.map((counts) => ({ ...counts, date: isoDay(counts.date) })),
  }
  return series.shareId === null ? period : { shareId: series.shareId, ...period }
}

/** The most viewed and downloaded shares as TopSharesSchema shows them. */
export const serializeTopShares = (top: TopShares) => ({
  ...top,
  from: isoDay(top.from),
  to: isoDay(top.to),
})
