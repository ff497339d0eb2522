// The page an invitation links to (GET|POST /account/invite/{secret}, views in invitation-pages.views.ts): the
// form that makes the invited account; once made, the browser is signed in to it. A used, expired or unknown
// invitation is a 410 page that says so.
import { Type } from 'typebox'
import type { Routes } from '../../module.ts'
import { formReader } from '../../platform/web/form-reader.ts'
import { acceptForms, refusalOf } from '../../platform/web/forms.ts'
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from './accounts.service.ts'
import { INVITATION_PATH, invitationPage } from './invitation-pages.views.ts'
import { csrfToken } from './web-sessions.ts'

const readAcceptance = formReader(
  Type.Object(
    {
      email: Type.String({ maxLength: 254 }),
      password: Type.String({ minLength: MIN_PASSWORD_LENGTH, maxLength: MAX_PASSWORD_LENGTH }),
      confirm: Type.String({ maxLength: MAX_PASSWORD_LENGTH }),
    },
    { additionalProperties: false },
  ),
)

const INVITATION_USED = {
  title: 'This invitation cannot be used',
  message:
    'It was used already, has expired, or is not right. Ask the admin who sent it for a new one, or sign in if you already made your account.',
}

const Params = Type.Object({ secret: Type.String({ minLength: 1, maxLength: 200 }) })

export const invitationPagesRoutes: Routes = async (app, { services, web, webSessions }) => {
  await acceptForms(app)
  const { invitations, accounts } = services
  const page = { page: true } as const
  const hidden = { hide: true, params: Params }
  const open = { config: page, schema: hidden, preValidation: webSessions.load }
  const posted = { config: page, schema: hidden, preValidation: [webSessions.load, app.csrfProtection] }

  app.get<{ Params: { secret: string } }>(`${INVITATION_PATH}/:secret`, open, async (request, reply) => {
    const invitation = await invitations.open(request.params.secret)
    if (!invitation) return web.sendError(reply, 410, INVITATION_USED)
    return web.send(
      reply,
      200,
      invitationPage({ csrfToken: csrfToken(request, reply), action: request.url, invitation }),
    )
  })

  app.post<{ Params: { secret: string } }>(`${INVITATION_PATH}/:secret`, posted, async (request, reply) => {
    const invitation = await invitations.open(request.params.secret)
    if (!invitation) return web.sendError(reply, 410, INVITATION_USED)
    const form = readAcceptance(request.body)
    const again = (status: number, values: Record<string, string>, errors: Record<string, string>) =>
      web.send(
        reply,
        status,
        invitationPage({
          csrfToken: csrfToken(request, reply),
          action: request.url,
          invitation,
          values,
          errors,
        }),
      )
    if (!form.ok) return again(400, { email: form.values.email ?? '' }, form.errors)
    const { email, password, confirm } = form.value
    if (password !== confirm) return again(400, { email }, { confirm: 'The two passwords are not the same.' })
    try {
      const account = await invitations.accept(request.params.secret, { email, password })
      await webSessions.signIn(request, reply, account)
      webSessions.rememberDevice(reply, await accounts.rememberDevice(account.id))
      return reply.redirect('/', 303)
    } catch (error) {
      const { status, errors } = refusalOf(error)
      if (status === 410) return web.sendError(reply, 410, INVITATION_USED)
      return again(status, { email }, errors)
    }
  })
}
