// The pages of single sign-on (sso.service.ts): the sign-in page's button posts to the start, which sends the
// browser to the provider; the provider sends it back to the callback, which signs it in or shows what went wrong.
// - POST /account/sso/start: a form with its CSRF token, from this origin only (http/same-origin.ts), so that no
//   other site can start a sign-in in someone's browser. The flow (state, nonce, PKCE verifier, where to go back)
//   goes sealed in a cookie for /account/sso only, SameSite=Lax so that the provider's redirect back brings it.
// - GET /account/sso/callback: the provider's answer. The flow cookie is cleared whatever happens, so an answer
//   is good once in a browser; the code is good once at the provider. A refusal is a page in plain words (sso.views.ts)
//   with the way back, never an error page of the server.
import type { FastifyReply } from 'fastify'
import { Type } from 'typebox'
import type { Routes } from '../../module.ts'
import { formReader } from '../../platform/web/form-reader.ts'
import { acceptForms } from '../../platform/web/forms.ts'
import { ACCOUNT_PATHS } from '../accounts/account-pages.views.ts'
import { safeReturnTo } from '../accounts/web-sessions.ts'
import { ProviderUnreachable, type SsoRefusal } from './sso.service.ts'
import { refusalPage } from './sso.views.ts'
import { FLOW_SECONDS } from './sso-flow.ts'

const HOME = '/'
const readStart = formReader(
  Type.Object({ return_to: Type.Optional(Type.String()) }, { additionalProperties: false }),
)

export const ssoRoutes: Routes = async (app, { services, config, web, webSessions }) => {
  const sso = services.sso
  if (!sso) return
  await acceptForms(app)
  const secure = config.publicUrl.startsWith('https:')
  const flowCookie = {
    name: secure ? '__Secure-coffer_sso' : 'coffer_sso',
    options: { path: '/account/sso', httpOnly: true, sameSite: 'lax' as const, secure },
  }
  const page = { page: true } as const
  const hidden = { hide: true }

  const refuse = (reply: FastifyReply, refusal: SsoRefusal) => {
    const { status, page: shown } = refusalPage(web, refusal, sso.name)
    return web.send(reply, status, shown)
  }

  app.post(
    ACCOUNT_PATHS.ssoStart,
    { config: page, schema: hidden, preValidation: [webSessions.load, app.csrfProtection] },
    async (request, reply) => {
      const form = readStart(request.body)
      const returnTo = safeReturnTo(form.ok ? form.value.return_to : form.values.return_to, HOME)
      let started: Awaited<ReturnType<typeof sso.start>>
      try {
        started = await sso.start(returnTo)
      } catch (error) {
        if (error instanceof ProviderUnreachable) {
          request.log.warn('single sign-on: the provider cannot be reached (discovery failed)')
          return refuse(reply, { kind: 'unreachable' })
        }
        throw error
      }
      reply.setCookie(flowCookie.name, started.sealedFlow, { ...flowCookie.options, maxAge: FLOW_SECONDS })
      return reply.redirect(started.url, 303)
    },
  )

  app.get(
    ACCOUNT_PATHS.ssoCallback,
    { config: page, schema: hidden, preValidation: webSessions.load },
    async (request, reply) => {
      const sealed = request.cookies[flowCookie.name]
      reply.clearCookie(flowCookie.name, flowCookie.options)
      const query = request.url.indexOf('?')
      const result = await sso.finish(query === -1 ? '' : request.url.slice(query), sealed)
      if (result.kind === 'refused') {
        // The reason only: never the query, which holds the code and the state.
        request.log.info({ refusal: result.refusal.kind }, 'single sign-on refused')
        return refuse(reply, result.refusal)
      }
      await webSessions.signIn(request, reply, result.account)
      webSessions.rememberDevice(reply, await services.accounts.rememberDevice(result.account.id))
      return reply.redirect(result.returnTo, 303)
    },
  )
}
