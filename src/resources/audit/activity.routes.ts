// The account's activity (/account/activity, views in activity.views.ts): its audit log, newest first, by
// family of kinds, a page of 50 at a time. A settings page of the account, served here because audit/ builds on
// accounts, never the reverse.
import { Type } from 'typebox'
import type { Routes } from '../../module.ts'
import { ACCOUNT_PATHS } from '../accounts/account-pages.views.ts'
import { appNav, sessionAccountId } from '../accounts/web-sessions.ts'
import { activityPage } from './activity.views.ts'
import { knownKind } from './audit.schemas.ts'

const PAGE_SIZE = 50

const ActivityQuery = Type.Object(
  {
    kind: Type.Optional(Type.String({ maxLength: 40 })),
    after: Type.Optional(Type.String({ maxLength: 128 })),
  },
  { additionalProperties: false },
)

export const activityRoutes: Routes = async (app, { services, web, webSessions }) => {
  const { audit } = services
  app.get(
    ACCOUNT_PATHS.activity,
    {
      config: { page: true },
      schema: { hide: true, querystring: ActivityQuery },
      preValidation: webSessions.requireSession,
    },
    async (request, reply) => {
      const viewerId = sessionAccountId(request)
      const kind = knownKind(request.query.kind)
      const { after } = request.query
      const page = await audit.page({ accountId: viewerId, kind }, after, PAGE_SIZE)
      const query = (extra: Record<string, string>) => {
        const search = new URLSearchParams({ ...(kind ? { kind } : {}), ...extra }).toString()
        return search ? `${ACCOUNT_PATHS.activity}?${search}` : ACCOUNT_PATHS.activity
      }
      return web.send(
        reply,
        200,
        activityPage({
          nav: appNav(request, reply, 'account'),
          viewerId,
          entries: page.items,
          kind,
          newestHref: after === undefined ? null : query({}),
          olderHref: page.nextCursor ? query({ after: page.nextCursor }) : null,
          retentionDays: audit.retentionDays,
        }),
      )
    },
  )
}
