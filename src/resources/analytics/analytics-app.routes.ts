// The analytics page of the web app (views in analytics-app.views.ts):
// - GET /analytics?days=7|30|90&share=<shareId>|all: the totals, the views and downloads per day of the range
//   for all shares or one, and the shares most viewed and downloaded in it. One call of
//   AnalyticsService.overview, which reads them through the very methods GET /api/v1/analytics, …/daily and
//   …/top-shares call, so the page and the API never disagree. Another account's share, or an unknown one,
//   is a 404 page that names nothing of it.
// The session is required; the page changes nothing, so it has no form to protect.
import { Type } from 'typebox'
import type { Routes } from '../../module.ts'
import { AppError } from '../../platform/errors.ts'
import { appNav, sessionAccountId } from '../accounts/web-sessions.ts'
import type { PageRange } from './analytics.service.ts'
import { ALL_SHARES, ANALYTICS_PATH, analyticsPage, shareNotFoundPage } from './analytics-app.views.ts'

const PageQuery = Type.Object(
  {
    days: Type.Optional(Type.Union([Type.Literal('7'), Type.Literal('30'), Type.Literal('90')])),
    share: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  },
  { additionalProperties: false },
)

/** The range shown when none is asked for. */
const DEFAULT_RANGE: PageRange = 30

export const analyticsAppRoutes: Routes = async (app, { services, web, webSessions }) => {
  const { analytics } = services

  app.get(
    ANALYTICS_PATH,
    {
      config: { page: true },
      schema: { hide: true, querystring: PageQuery },
      preValidation: webSessions.requireSession,
    },
    async (request, reply) => {
      const { days, share } = request.query
      const nav = appNav(request, reply, 'analytics')
      try {
        const overview = await analytics.overview(sessionAccountId(request), {
          range: days === undefined ? DEFAULT_RANGE : (Number(days) as PageRange),
          shareId: share === undefined || share === ALL_SHARES ? undefined : share,
        })
        return web.send(reply, 200, analyticsPage({ ...overview, nav }))
      } catch (error) {
        // Another account's share, or one deleted: a 404 inside the app, which leads back to all shares.
        if (error instanceof AppError && error.code === 'not_found') {
          return web.send(reply, 404, shareNotFoundPage(nav, web))
        }
        throw error
      }
    },
  )
}
