// The owner's trash in the web app (views in trash-app.views.ts), beside the trash's API (trash.routes.ts),
// calling the same TrashService:
// - GET /trash: the files deleted last first, paged with the API's cursor (`?cursor=`), with the trash's size.
// - POST /trash/restore: restores the files the form names (`fileIds`): a row's Restore, and the Undo of a
//   files page's notice after a delete; back to the page it came from (`return_to`), with a notice.
// - GET /trash/{fileId}/delete, then POST: a file in the trash deleted for good, after a confirmation.
// - GET /trash/empty, then POST /trash/empty: every file of the trash deleted for good, after a confirmation.
// Everything needs the session; every change is a POST with its CSRF token. A file the trash does not hold
// (another account's, restored meanwhile, gone for good) is skipped by a restore and a 404 page for a delete.
import { Type } from 'typebox'
import type { Routes } from '../../module.ts'
import { invalid } from '../../platform/errors.ts'
import { formReader } from '../../platform/web/form-reader.ts'
import { acceptForms } from '../../platform/web/forms.ts'
import { type Notices, noticeOf, withNotice } from '../../platform/web/notices.ts'
import { appNav, csrfToken, safeReturnTo, sessionAccountId } from '../accounts/web-sessions.ts'
import { FILE_PATHS } from './files-app.views.ts'
import { confirmDeleteForeverPage, confirmEmptyPage, trashPage } from './trash-app.views.ts'

/** Files per page of the trash. */
const PAGE_SIZE = 50
/** Files one restore takes: a delete's Undo names at most 100 (files-app.routes.ts). */
const MAX_RESTORE = 100

const TrashQuery = Type.Object({
  cursor: Type.Optional(Type.String({ maxLength: 128 })),
  done: Type.Optional(Type.String({ maxLength: 40 })),
  n: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
})

const FileParams = Type.Object({ fileId: Type.String({ minLength: 1, maxLength: 100 }) })

const readRestore = formReader(
  Type.Object(
    {
      fileIds: Type.Optional(
        Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: MAX_RESTORE }),
      ),
      return_to: Type.Optional(Type.String({ maxLength: 2048 })),
    },
    { additionalProperties: false },
  ),
)

const readReturnTo = formReader(
  Type.Object(
    { return_to: Type.Optional(Type.String({ maxLength: 2048 })) },
    { additionalProperties: false },
  ),
)

/**
 * What a `done` code says after a change; `restored` and `nothing-restored` also on the files pages, where the
 * Undo comes back to (files-app.routes.ts has the same codes).
 */
const NOTICES: Notices = {
  restored: (n) =>
    n === 1
      ? 'File restored: it is back in its folder.'
      : `${n} files restored: they are back in their folders.`,
  'nothing-restored': () => 'Nothing to restore: those files are no longer in the trash.',
  'deleted-forever': () => 'File deleted for good.',
  emptied: (n) => `Trash emptied: ${n} file${n === 1 ? '' : 's'} deleted for good.`,
}

export const trashAppRoutes: Routes = async (app, { services, web, webSessions }) => {
  await acceptForms(app, 64 * 1024)
  const { trash } = services
  const page = { page: true } as const
  const signedIn = { config: page, preValidation: webSessions.requireSession }
  const posted = { config: page, preValidation: [webSessions.requireSession, app.csrfProtection] }

  app.get(
    FILE_PATHS.trash,
    { ...signedIn, schema: { hide: true, querystring: TrashQuery } },
    async (request, reply) => {
      const accountId = sessionAccountId(request)
      const { cursor, done, n } = request.query
      const [listed, size] = await Promise.all([
        trash.list(accountId, { cursor, limit: PAGE_SIZE }),
        trash.size(accountId),
      ])
      const token = csrfToken(request, reply)
      return web.send(
        reply,
        200,
        trashPage({
          nav: appNav(request, reply, 'files'),
          csrfToken: token,
          retentionDays: trash.retentionDays,
          files: listed.items,
          size,
          nextCursor: listed.nextCursor,
          later: cursor !== undefined,
          returnTo: request.url,
          notice: noticeOf(NOTICES, done, n),
          now: Date.now(),
        }),
      )
    },
  )

  app.post(FILE_PATHS.restore, { ...posted, schema: { hide: true } }, async (request, reply) => {
    const form = readRestore(request.body)
    if (!form.ok) throw invalid(Object.values(form.errors).join(' '))
    const { fileIds = [], return_to } = form.value
    const back = safeReturnTo(return_to, FILE_PATHS.trash)
    // Those the trash no longer holds (a second click on Undo, gone for good) are skipped, as a bulk delete
    // skips what it cannot delete.
    const restored = (await trash.restoreMany(sessionAccountId(request), fileIds)).length
    return reply.redirect(
      restored === 0 ? withNotice(back, 'nothing-restored', 0) : withNotice(back, 'restored', restored),
      303,
    )
  })

  app.get(
    '/trash/:fileId/delete',
    { ...signedIn, schema: { hide: true, params: FileParams } },
    async (request, reply) => {
      const file = await trash.get(sessionAccountId(request), request.params.fileId)
      const token = csrfToken(request, reply)
      return web.send(
        reply,
        200,
        confirmDeleteForeverPage({ nav: appNav(request, reply, 'files'), csrfToken: token, file }),
      )
    },
  )

  app.post(
    '/trash/:fileId/delete',
    { ...posted, schema: { hide: true, params: FileParams } },
    async (request, reply) => {
      const form = readReturnTo(request.body)
      const back = safeReturnTo(form.ok ? form.value.return_to : undefined, FILE_PATHS.trash)
      await trash.deleteForever(sessionAccountId(request), request.params.fileId, request.log)
      return reply.redirect(withNotice(back, 'deleted-forever', 1), 303)
    },
  )

  app.get(FILE_PATHS.emptyTrash, { ...signedIn, schema: { hide: true } }, async (request, reply) => {
    const size = await trash.size(sessionAccountId(request))
    if (size.files === 0) return reply.redirect(FILE_PATHS.trash, 303)
    const token = csrfToken(request, reply)
    return web.send(
      reply,
      200,
      confirmEmptyPage({ nav: appNav(request, reply, 'files'), csrfToken: token, size }),
    )
  })

  app.post(FILE_PATHS.emptyTrash, { ...posted, schema: { hide: true } }, async (request, reply) => {
    const count = await trash.empty(sessionAccountId(request), request.log)
    return reply.redirect(withNotice(FILE_PATHS.trash, 'emptied', count), 303)
  })
}
