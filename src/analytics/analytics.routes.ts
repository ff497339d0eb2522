import { Type } from 'typebox'
import { accountOf, requireScopes } from '../http/auth.ts'
import { Data, ERROR_RESPONSES } from '../http/schemas.ts'
import type { Routes } from '../wiring.ts'
import { AnalyticsQuery, serializeShareAnalytics } from './analytics.schemas.ts'

export const analyticsRoutes: Routes = async (app, { services }) => {
  const { analytics } = services

  app.get(
    '/analytics',
    {
      schema: {
        tags: ['analytics'],
        operationId: 'getAnalytics',
        summary: 'Share analytics',
        description: `With \`shareId\`: that share's ShareAnalytics (a share that does not exist or belongs to another
account is a 404). Without: the account's AggregateAnalytics. \`isActive\` and \`activeShares\` count the effective
state: a link whose \`expiresAt\` has passed is not active.`,
        security: requireScopes(['analytics:read']),
        querystring: AnalyticsQuery,
        response: {
          200: Data(Type.Union([Type.Ref('ShareAnalytics'), Type.Ref('AggregateAnalytics')])),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request) => {
      const { shareId } = request.query
      if (shareId === undefined) return { data: await analytics.aggregate(accountOf(request)) }
      return { data: serializeShareAnalytics(await analytics.forShare(accountOf(request), shareId)) }
    },
  )
}
