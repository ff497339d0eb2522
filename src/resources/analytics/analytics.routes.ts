import { Type } from 'typebox'
import type { Routes } from '../../module.ts'
import { invalid } from '../../platform/errors.ts'
import { accountOf, requireScopes } from '../../platform/http/auth.ts'
import { Data, ERROR_RESPONSES, extensionOperation } from '../../platform/http/schemas.ts'
import {
  AnalyticsQuery,
  DailyAnalyticsQuery,
  serializeDailySeries,
  serializeShareAnalytics,
  serializeTopShares,
  TopSharesQuery,
} from './analytics.schemas.ts'
import { DEFAULT_DAYS } from './analytics.service.ts'

/** A `date` query value as the epoch ms of its UTC midnight; the schema has checked its form. */
function dayOf(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  const ms = Date.parse(`${value}T00:00:00Z`)
  if (Number.isNaN(ms)) throw invalid(`The query parameter "${name}" must be a valid date (YYYY-MM-DD).`)
  return ms
}

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

  app.get(
    '/analytics/daily',
    {
      schema: {
        tags: ['analytics'],
        operationId: 'getDailyAnalytics',
        summary: 'Views and downloads per day',
        ...extensionOperation(`The views and downloads on each UTC day of a period, counted exactly as ShareAnalytics
counts them and committed with them: with \`shareId\`, of that share link (ShareDailyAnalytics; a share that does
not exist or belongs to another account is a 404); without, of all the account's share links together
(AccountDailyAnalytics, the sums of theirs). \`from\` after \`to\`, or a period longer than the bound, is a 400.`),
        security: requireScopes(['analytics:read']),
        querystring: DailyAnalyticsQuery,
        response: {
          200: Data(Type.Union([Type.Ref('ShareDailyAnalytics'), Type.Ref('AccountDailyAnalytics')])),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request) => {
      const { shareId, from, to } = request.query
      const series = await analytics.daily(accountOf(request), shareId, {
        from: dayOf('from', from),
        to: dayOf('to', to),
      })
      return { data: serializeDailySeries(series) }
    },
  )

  app.get(
    '/analytics/top-shares',
    {
      schema: {
        tags: ['analytics'],
        operationId: 'getTopShares',
        summary: 'The share links most viewed and most downloaded in a period',
        ...extensionOperation(`The account's share links with the most views, and those with the most downloads, in a
period of UTC days (by default the last ${DEFAULT_DAYS}, today included), each with its file and its counts of the
period, read from the same daily counts as \`GET /analytics/daily\`. \`from\` after \`to\`, or a period longer
than the bound, is a 400.`),
        security: requireScopes(['analytics:read']),
        querystring: TopSharesQuery,
        response: { 200: Data(Type.Ref('TopShares')), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { from, to, count } = request.query
      const top = await analytics.top(
        accountOf(request),
        { from: dayOf('from', from), to: dayOf('to', to) },
        count,
      )
      return { data: serializeTopShares(top) }
    },
  )
}
