// The Share panel's actions on a file's page in the web app (views in files/share-panel.views.ts):
// - POST /files/{fileId}/share: makes the file's link, or turns a disabled or expired one on again (no expiry).
// - GET|POST /shares/{shareId}/settings: expiry, password and download limit; the panel's form posts here, and
//   a refused form is shown again on this page, each problem beside its field.
// - POST /shares/{shareId}/disable: turns the link off (its address and counts stay).
// Each calls one SharesService method, the API's own rules. Session only, every change with its CSRF token;
// another account's file or link is a 404 page. After a change the browser goes back to the file's page.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { html } from 'ghtml'
import { type Static, Type } from 'typebox'
import { appNav, csrfToken, sessionAccountId } from '../accounts/web-sessions.ts'
import { SHARE_PATHS, sharePanel } from '../files/share-panel.views.ts'
import { MAX_DOWNLOADS_LIMIT, PASSWORD_LENGTH } from '../files/share-settings.shared.ts'
import type { Routes } from '../routes.ts'
import { endOfDay, knownTimeZone, readerTimeZone, refuseEndedDay, TimeZoneField } from '../web/chosen-days.ts'
import { formReader } from '../web/form-reader.ts'
import { acceptForms, type FormState, refusalOf } from '../web/forms.ts'
import { withNotice } from '../web/notices.ts'
import type { ShareChanges } from './shares.service.ts'

const SettingsForm = Type.Object(
  {
    expires: Type.Optional(
      Type.String({
        format: 'date',
        errorMessage: 'Give the day as YYYY-MM-DD, or leave it empty for no expiry.',
      }),
    ),
    password: Type.Optional(
      Type.String({
        minLength: PASSWORD_LENGTH.min,
        maxLength: PASSWORD_LENGTH.max,
        errorMessage: `Use ${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max} characters, or leave it empty.`,
      }),
    ),
    removePassword: Type.Optional(Type.Literal('on')),
    maxDownloads: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_DOWNLOADS_LIMIT,
        errorMessage: 'Give a whole number of downloads, 1 or more, or leave it empty for no limit.',
      }),
    ),
    timeZone: TimeZoneField,
  },
  { additionalProperties: false },
)
const readSettings = formReader(SettingsForm)

/** What the expiry field says when its day has already ended. */
const PAST_DAY = 'Choose today or a later day.'

/** The changes a settings form asks for: the expiry at the end of its day where it was chosen; an empty password keeps it. */
function changesOf(form: Static<typeof SettingsForm>): ShareChanges {
  const changes: ShareChanges = {
    expiresAt: form.expires ? endOfDay(form.expires, knownTimeZone(form.timeZone)) : null,
    maxDownloads: form.maxDownloads ?? null,
  }
  if (form.removePassword) changes.password = null
  else if (form.password) changes.password = form.password
  return changes
}

/** Problems of the service, as the form names its fields and in words for people. */
const FIELD_OF: Record<string, string> = {
  expiresAt: 'expires',
  maxDownloads: 'maxDownloads',
  password: 'password',
}
const PAGE_MESSAGE: Record<string, string> = { expiresAt: PAST_DAY }

const FileParams = Type.Object({ fileId: Type.String({ minLength: 1, maxLength: 100 }) })
const ShareParams = Type.Object({ shareId: Type.String({ minLength: 1, maxLength: 100 }) })

const fileShare = (fileId: string) => `/files/${fileId}#share`

export const sharesAppRoutes: Routes = async (app, { services, urls, web, webSessions }) => {
  const { shares } = services
  await acceptForms(app)
  const page = { page: true } as const
  const signedIn = { config: page, preValidation: webSessions.requireSession }
  const posted = { config: page, preValidation: [webSessions.requireSession, app.csrfProtection] }

  /** The settings on a page of their own, with the form's problems. */
  async function settingsPage(
    request: FastifyRequest,
    reply: FastifyReply,
    shareId: string,
    status: number,
    form?: FormState,
  ) {
    const share = await shares.get(sessionAccountId(request), shareId)
    const panel = sharePanel({
      fileId: share.fileId,
      csrfToken: csrfToken(request, reply),
      share: { ...share, publicUrl: urls.sharePage(share.publicId) },
      timeZone: readerTimeZone(request),
      ...(form ? { form } : {}),
    })
    const main = html`<div class="narrow stack">
<p><a href="/files/${share.fileId}">← Back to ${share.file.name}</a></p>
<h1 id="page-title">Share settings of “${share.file.name}”</h1>
!${panel}
</div>`
    return web.send(reply, status, {
      title: `Share settings of ${share.file.name} · Coffer`,
      main,
      nav: appNav(request, reply, 'files'),
    })
  }

  app.post(
    '/files/:fileId/share',
    { ...posted, schema: { hide: true, params: FileParams } },
    async (request, reply) => {
      const { fileId } = request.params
      await shares.create(sessionAccountId(request), fileId)
      return reply.redirect(withNotice(fileShare(fileId), 'share-on'), 303)
    },
  )

  app.get(
    '/shares/:shareId/settings',
    { ...signedIn, schema: { hide: true, params: ShareParams } },
    (request, reply) => settingsPage(request, reply, request.params.shareId, 200),
  )

  app.post(
    '/shares/:shareId/settings',
    { ...posted, schema: { hide: true, params: ShareParams } },
    async (request, reply) => {
      const { shareId } = request.params
      const form = refuseEndedDay(readSettings(request.body), 'expires', PAST_DAY)
      if (!form.ok)
        return settingsPage(request, reply, shareId, 400, {
          ...form,
          values: { ...form.values, password: '' },
        })
      try {
        const share = await shares.update(sessionAccountId(request), shareId, changesOf(form.value))
        return reply.redirect(withNotice(fileShare(share.fileId), 'share-saved'), 303)
      } catch (error) {
        const { status, errors } = refusalOf(error, {
          fields: FIELD_OF,
          otherFields: 'form',
          messages: PAGE_MESSAGE,
        })
        return settingsPage(request, reply, shareId, status, { values: form.values, errors })
      }
    },
  )

  app.post(
    SHARE_PATHS.disable(':shareId'),
    { ...posted, schema: { hide: true, params: ShareParams } },
    async (request, reply) => {
      const share = await shares.update(sessionAccountId(request), request.params.shareId, {
        isActive: false,
      })
      return reply.redirect(withNotice(fileShare(share.fileId), 'share-off'), 303)
    },
  )
}
