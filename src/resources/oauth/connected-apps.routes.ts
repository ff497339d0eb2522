// The account's connected applications (/account/apps, views in connected-apps.views.ts): the list, and
// revoking one, which removes its grant with every code and token of it. A settings page of the account, served
// here because oauth/ builds on accounts, never the reverse.

import type { Routes } from '../../module.ts'
import { acceptForms } from '../../platform/web/forms.ts'
import { ACCOUNT_PATHS } from '../accounts/account-pages.views.ts'
import { appNav, sessionAccountId } from '../accounts/web-sessions.ts'
import { appsPage } from './connected-apps.views.ts'

export const connectedAppsRoutes: Routes = async (app, { services, web, webSessions }) => {
  await acceptForms(app)
  const { connectedApps } = services
  const page = { page: true } as const
  const hidden = { hide: true }
  const signedIn = { config: page, schema: hidden, preValidation: webSessions.requireSession }
  const signedInPost = {
    config: page,
    schema: hidden,
    preValidation: [webSessions.requireSession, app.csrfProtection],
  }

  app.get(ACCOUNT_PATHS.apps, signedIn, async (request, reply) => {
    const apps = await connectedApps.list(sessionAccountId(request))
    return web.send(reply, 200, appsPage({ nav: appNav(request, reply, 'account'), apps }))
  })

  app.post<{ Params: { grantId: string } }>(
    `${ACCOUNT_PATHS.apps}/:grantId/revoke`,
    signedInPost,
    async (request, reply) => {
      await connectedApps.revoke(sessionAccountId(request), request.params.grantId)
      return reply.redirect(ACCOUNT_PATHS.apps, 303)
    },
  )
}
