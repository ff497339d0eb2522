// Downloads of several files as one zip, for the owner's web app (the archive: zip.service.ts, zip-stream.ts):
// - POST /files/zip: the files whose ids the form sends (`fileIds`, repeated; at most 1,000, so a POST: a
//   selection that large does not fit in an address), named "Coffer files (N).zip". Other fields are ignored,
//   so the list's selection form can send here from a button of its own (`formaction`).
// - GET /folders/{folderId}/zip: every file of the folder, named "<folder name>.zip". Changes nothing.
// Both need the session (the POST also its CSRF token, as every form of the app); refusals are pages, and
// another account's folder, or a selection of nothing that is the account's, is a 404 page. The archive is
// streamed as it is built, with Content-Length when its entries are known before it starts.
import { Type } from 'typebox'
import type { Routes } from '../../../module.ts'
import { formReader } from '../../../platform/web/form-reader.ts'
import { acceptForms } from '../../../platform/web/forms.ts'
import { sessionAccountId } from '../../accounts/web-sessions.ts'
import { MAX_ZIP_SELECTION } from './zip.service.ts'
import { sendZip } from './zip-response.ts'

export const ZIP_PATHS = {
  selection: '/files/zip',
  folder: (folderId: string) => `/folders/${encodeURIComponent(folderId)}/zip`,
} as const

const readSelection = formReader(
  Type.Object(
    {
      fileIds: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        minItems: 1,
        maxItems: MAX_ZIP_SELECTION,
      }),
    },
    // The selection form of the list also carries its own fields (the action, the target folder, where to
    // go back to); a zip has no use for them.
    { additionalProperties: true },
  ),
)

export const zipRoutes: Routes = async (app, { services, web, webSessions }) => {
  const { zips } = services
  // 1,000 ids of about 30 characters each, and the other fields of the selection form.
  await acceptForms(app, 128 * 1024)
  const page = { page: true } as const

  app.post(
    ZIP_PATHS.selection,
    {
      config: page,
      schema: { hide: true },
      preValidation: [webSessions.requireSession, app.csrfProtection],
    },
    async (request, reply) => {
      const form = readSelection(request.body)
      if (!form.ok) {
        const tooMany = /at most/.test(form.errors.fileIds ?? '')
        return web.sendError(reply, 400, {
          title: tooMany ? 'Too many files selected' : 'No files selected',
          message: tooMany
            ? `A zip holds at most ${MAX_ZIP_SELECTION.toLocaleString('en')} selected files. Go back and select fewer, or download their folder.`
            : 'Go back, tick the box beside each file to download, then choose "Download as zip".',
        })
      }
      const archive = await zips.ofFiles(sessionAccountId(request), form.value.fileIds, request.log)
      return sendZip(reply, archive)
    },
  )

  app.get(
    '/folders/:folderId/zip',
    {
      config: page,
      // A HEAD would read the whole archive to throw it away: not offered.
      exposeHeadRoute: false,
      schema: {
        hide: true,
        params: Type.Object({ folderId: Type.String({ minLength: 1, maxLength: 100 }) }),
      },
      preValidation: webSessions.requireSession,
    },
    async (request, reply) => {
      const archive = await zips.ofFolder(sessionAccountId(request), request.params.folderId, request.log)
      return sendZip(reply, archive)
    },
  )
}
