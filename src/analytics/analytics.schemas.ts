import { Type } from 'typebox'
import { DateTime, Extension, Nullable, toIsoOrNull } from '../http/schemas.ts'
import type { ShareAnalytics } from './analytics.repository.ts'
import { type DailySeries, DEFAULT_DAYS, MAX_DAYS } from './analytics.service.ts'

const Count = (description: string) => Type.Integer({ minimum: 0, description })

export const ShareAnalyticsSchema = Type.Object(
  {
    shareId: Type.String(),
    views: Count('Views of the public share page.'),
    downloads: Count('Downloads through the public link.'),
    isActive: Type.Boolean({ description: 'Effective state: false once `expiresAt` has passed.' }),
    expiresAt: Nullable(DateTime()),
  },
  { $id: 'ShareAnalytics', additionalProperties: false, description: 'Counts of one share link.' },
)

export const AggregateAnalyticsSchema = Type.Object(
  {
    shares: Count('Share links of the account.'),
    activeShares: Count('Share links that work now: enabled and not expired.'),
    activeRequests: Count('File requests that are active.'),
    views: Count('Views of all share links.'),
    downloads: Count('Downloads through all share links.'),
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

export const ShareDailyAnalyticsSchema = Extension(
  Type.Object(
    {
      shareId: Type.String(),
      from: Day('The first day of the period (UTC), inclusive.'),
      to: Day('The last day of the period (UTC), inclusive.'),
      days: Type.Array(
        Type.Object(
          {
            date: Day('A day of the period (UTC).'),
            views: Count('Views of the public share page that day.'),
            downloads: Count('Downloads through the public link that day.'),
          },
          { additionalProperties: false },
        ),
        { description: 'Every day of the period, in order; a day without views or downloads has zeros.' },
      ),
    },
    {
      $id: 'ShareDailyAnalytics',
      additionalProperties: false,
      description:
        "A share link's views and downloads on each day of a period, counted as ShareAnalytics counts them.",
    },
  ),
)

export const DailyAnalyticsQuery = Type.Object(
  {
    shareId: Type.String({ minLength: 1, maxLength: 128, description: 'An owned share.' }),
    from: Type.Optional(
      Day(`The first day (UTC), inclusive. Default: ${DEFAULT_DAYS - 1} days before \`to\`.`),
    ),
    to: Type.Optional(
      Day(
        `The last day (UTC), inclusive. Default: today, or ${DEFAULT_DAYS - 1} days after \`from\` (today at the latest). At most ${MAX_DAYS} days in all.`,
      ),
    ),
  },
  { additionalProperties: false },
)

/** The UTC date of a midnight, YYYY-MM-DD. */
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10)

/** A daily series as ShareDailyAnalyticsSchema shows it. */
export const serializeDailySeries = (series: DailySeries) => ({
  shareId: series.shareId,
  from: isoDay(series.from),
  to: isoDay(series.to),
  days: series.days.map((counts) => ({ ...counts, date: isoDay(counts.date) })),
})
