import { Type } from 'typebox'
import { DateTime, Nullable, toIsoOrNull } from '../http/schemas.ts'
import type { ShareAnalytics } from './analytics.repository.ts'

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
