// The folder pages of the web app (views in folders-app.views.ts): every folder (GET /folders), a new one
// (GET /folders/new, POST /folders), renaming (GET|POST /folders/{id}/rename) and deleting, after a
// confirmation that says where its files and requests go, and that its own share link goes with it
// (GET|POST /folders/{id}/delete). A folder's files are the files page's (/folders/{id}), with the Share panel
// of its link; its zip, the zip routes'. Session only; every change a POST with its CSRF token; another
// account's folder is a 404 page.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import type { RouteApp, RouteDeps, Routes } from '../../module.ts'
import { formReader } from '../../platform/web/form-reader.ts'
import { acceptForms, type FormState, refusalOf } from '../../platform/web/forms.ts'
import { withNotice } from '../../platform/web/notices.ts'
import { appNav, csrfToken, sessionAccountId } from '../accounts/web-sessions.ts'
import type { Folder } from './folders.repository.ts'
import {
  deleteFolderPage,
  FOLDER_NAME_MAX,
  FOLDER_PATHS,
  foldersPage,
  newFolderPage,
  renameFolderPage,
} from './folders-app.views.ts'

const readName = formReader(
  Type.Object(
    {
      name: Type.String({
        maxLength: FOLDER_NAME_MAX,
        pattern: '\\S',
        errorMessage: `Give the folder a name of at most ${FOLDER_NAME_MAX} characters.`,
      }),
    },
    { additionalProperties: false },
  ),
)

const FolderParams = Type.Object({ folderId: Type.String({ minLength: 1, maxLength: 100 }) })

/**
 * A refusal of the service (a name taken, say), shown beside the name with its status; anything else, a folder
 * that is gone included, is not the form's to show.
 */
function nameRefused(error: unknown, name: string): [number, FormState] {
  const { status, errors } = refusalOf(error, { field: 'name' })
  return [status, { values: { name }, errors }]
}

export const foldersAppRoutes: Routes = async (app, deps) => {
  await acceptForms(app)
  const kit = foldersAppKit(app, deps)
  for (const routes of [folderListRoutes, folderRenameRoutes, folderDeleteRoutes]) routes(app, kit)
}

/** What every group of the folder pages' routes shares: the service, the option presets, the pages' nav. */
function foldersAppKit(app: RouteApp, { services, web, webSessions }: RouteDeps) {
  const page = { page: true } as const
  const signedIn = { config: page, preValidation: webSessions.requireSession }
  const posted = { config: page, preValidation: [webSessions.requireSession, app.csrfProtection] }
  const nav = (request: FastifyRequest, reply: FastifyReply) => appNav(request, reply, 'files')
  return { folders: services.folders, folderShares: services.folderShares, web, signedIn, posted, nav }
}

type Kit = ReturnType<typeof foldersAppKit>

/** Every folder, and a new one. */
function folderListRoutes(app: RouteApp, { folders, web, signedIn, posted, nav }: Kit): void {
  app.get(
    FOLDER_PATHS.list,
    {
      ...signedIn,
      schema: {
        hide: true,
        querystring: Type.Object({ cursor: Type.Optional(Type.String({ maxLength: 128 })) }),
      },
    },
    async (request, reply) => {
      const listed = await folders.list(sessionAccountId(request), {
        cursor: request.query.cursor,
        limit: 50,
      })
      return web.send(
        reply,
        200,
        foldersPage({ nav: nav(request, reply), folders: listed.items, nextCursor: listed.nextCursor }),
      )
    },
  )

  app.get(FOLDER_PATHS.new, { ...signedIn, schema: { hide: true } }, async (request, reply) =>
    web.send(reply, 200, newFolderPage({ nav: nav(request, reply), csrfToken: csrfToken(request, reply) })),
  )

  app.post(FOLDER_PATHS.create, { ...posted, schema: { hide: true } }, async (request, reply) => {
    const form = readName(request.body)
    const again = (status: number, state: FormState) =>
      web.send(
        reply,
        status,
        newFolderPage({ nav: nav(request, reply), csrfToken: csrfToken(request, reply), form: state }),
      )
    if (!form.ok) return again(400, form)
    let folder: Folder
    try {
      folder = await folders.create(sessionAccountId(request), form.value.name)
    } catch (error) {
      return again(...nameRefused(error, form.value.name))
    }
    return reply.redirect(withNotice(FOLDER_PATHS.view(folder.id), 'folder-created'), 303)
  })
}

/** A folder renamed. */
function folderRenameRoutes(app: RouteApp, { folders, web, signedIn, posted, nav }: Kit): void {
  app.get(
    '/folders/:folderId/rename',
    { ...signedIn, schema: { hide: true, params: FolderParams } },
    async (request, reply) => {
      const folder = await folders.get(sessionAccountId(request), request.params.folderId)
      return web.send(
        reply,
        200,
        renameFolderPage({ nav: nav(request, reply), csrfToken: csrfToken(request, reply), folder }),
      )
    },
  )

  app.post(
    '/folders/:folderId/rename',
    { ...posted, schema: { hide: true, params: FolderParams } },
    async (request, reply) => {
      const accountId = sessionAccountId(request)
      const { folderId } = request.params
      const form = readName(request.body)
      const again = async (status: number, state: FormState) =>
        web.send(
          reply,
          status,
          renameFolderPage({
            nav: nav(request, reply),
            csrfToken: csrfToken(request, reply),
            folder: await folders.get(accountId, folderId),
            form: state,
          }),
        )
      if (!form.ok) return again(400, form)
      try {
        await folders.rename(accountId, folderId, form.value.name)
      } catch (error) {
        return again(...nameRefused(error, form.value.name))
      }
      return reply.redirect(withNotice(FOLDER_PATHS.view(folderId), 'folder-renamed'), 303)
    },
  )
}

/** A folder deleted, after a confirmation that says where its files and requests go. */
function folderDeleteRoutes(app: RouteApp, { folders, folderShares, web, signedIn, posted, nav }: Kit): void {
  app.get(
    '/folders/:folderId/delete',
    { ...signedIn, schema: { hide: true, params: FolderParams } },
    async (request, reply) => {
      const accountId = sessionAccountId(request)
      const [folder, link] = await Promise.all([
        folders.get(accountId, request.params.folderId),
        folderShares.byFolder(accountId, request.params.folderId),
      ])
      return web.send(
        reply,
        200,
        deleteFolderPage({
          nav: nav(request, reply),
          csrfToken: csrfToken(request, reply),
          folder,
          link: link ?? null,
        }),
      )
    },
  )

  app.post(
    '/folders/:folderId/delete',
    { ...posted, schema: { hide: true, params: FolderParams } },
    async (request, reply) => {
      await folders.delete(sessionAccountId(request), request.params.folderId)
      return reply.redirect(withNotice('/', 'folder-deleted'), 303)
    },
  )
}
