// The owner's files in the web app (views in files-app.views.ts, browser module files-app.client.ts):
// - GET / and GET /folders/{folderId}: every file or one folder's, newest first or in the order `?sort=` asks,
//   searched with `?query=`, paged with the API's cursors (`?cursor=` forward, `?before=` back, `?from=` the
//   place of the page's first file), the folders beside them; a folder's page ends with the Share panel of its
//   link (share-panel.views.ts; its forms post to shares/shares-app.routes.ts).
// - GET /files/rows?ids=…: the rows of the files the uploader just made, for it to add without a reload.
// - POST /files/bulk: the selection form: move, delete (a confirmation first), each in one transaction.
// - GET /files/{fileId}: the file's page; its actions: rename, move, delete (confirmed), download, preview.
// A delete moves the files to the trash when the server keeps one (trash-app.routes.ts), and its notice then
// offers an Undo: the ids of the files are in the address (`?undo=a,b`), for the notice's form to restore.
// Everything needs the session; every change is a POST with its CSRF token. Another account's id is a 404 page.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { type Static, Type } from 'typebox'
import type { RouteApp, RouteDeps, Routes } from '../../module.ts'
import { MULTIPART_THRESHOLD_BYTES } from '../../platform/blob/blob-store.ts'
import { invalid } from '../../platform/errors.ts'
import { readerTimeZone } from '../../platform/web/chosen-days.ts'
import { formReader } from '../../platform/web/form-reader.ts'
import { acceptForms, type FormState, refusalOf } from '../../platform/web/forms.ts'
import { type Notices, noticeOf, withNotice } from '../../platform/web/notices.ts'
import { appNav, csrfToken, safeReturnTo, sessionAccountId } from '../accounts/web-sessions.ts'
import { sendFileContent } from './download.ts'
import { DEFAULT_FILE_ORDER, FILE_ORDERS } from './file-order.ts'
import { TEXT_PREVIEW_BYTES, viewer, viewerKindOf } from './file-viewers.views.ts'
import {
  confirmDeleteFilePage,
  confirmDeletePage,
  FILE_PATHS,
  FOLDERS_SHOWN,
  filePage,
  fileRow,
  filesPage,
} from './files-app.views.ts'
import { sharePanel } from './share-panel.views.ts'

/** Files per page of the list. */
const PAGE_SIZE = 50
/** Files one bulk action takes: a page of the list is 50; a selection grown by "More" stays within this. */
const MAX_SELECTION = 1000
/**
 * Files a delete's Undo names in the address: two pages of the list, well within what an address may hold
 * (a selection of 1000 ids would not be); a larger delete's notice links to the trash instead.
 */
const MAX_UNDO = 100
const UNDO_PATTERN = `^[A-Za-z0-9_]{1,100}(,[A-Za-z0-9_]{1,100}){0,${MAX_UNDO - 1}}$`

const ListQuery = Type.Object({
  query: Type.Optional(Type.String({ maxLength: 200 })),
  sort: Type.Optional(Type.Enum([...FILE_ORDERS])),
  cursor: Type.Optional(Type.String({ maxLength: 128 })),
  before: Type.Optional(Type.String({ maxLength: 128 })),
  from: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000_000 })),
  done: Type.Optional(Type.String({ maxLength: 40 })),
  n: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
  undo: Type.Optional(Type.String({ pattern: UNDO_PATTERN })),
})

const FolderParams = Type.Object({ folderId: Type.String({ minLength: 1, maxLength: 100 }) })
const FileParams = Type.Object({ fileId: Type.String({ minLength: 1, maxLength: 100 }) })
const FileIds = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: MAX_SELECTION })

const readBulkForm = formReader(
  Type.Object(
    {
      action: Type.Union([Type.Literal('move'), Type.Literal('delete'), Type.Literal('confirm-delete')]),
      fileIds: Type.Optional(FileIds),
      folderId: Type.Optional(Type.String({ maxLength: 100 })),
      return_to: Type.Optional(Type.String({ maxLength: 2048 })),
    },
    { additionalProperties: false },
  ),
)

/** What a `done` code in the address says after a change; `n` counts the files it was about. */
const NOTICES: Notices = {
  moved: (n) => `${n} file${n === 1 ? '' : 's'} moved.`,
  deleted: (n) => `${n} file${n === 1 ? '' : 's'} deleted.`,
  trashed: (n) => `${n} file${n === 1 ? '' : 's'} moved to the trash.`,
  restored: (n) => `${n} file${n === 1 ? '' : 's'} restored.`,
  'nothing-restored': () => 'Nothing to restore: those files are no longer in the trash.',
  'nothing-selected': () => 'Select at least one file first: tick the box beside it.',
  'folder-created': () => 'Folder created. Upload files into it, or move files here from All files.',
  'folder-renamed': () => 'Folder renamed.',
  'folder-deleted': () => 'Folder deleted. Its files are in All files now.',
  renamed: () => 'File renamed.',
  'moved-one': () => 'File moved.',
  'share-on': () => 'The share link works. Copy it below and send it to whoever should have the file.',
  'share-saved': () => 'Share settings saved.',
  'share-off': () => 'The share link is off: it no longer opens, until you turn it on again.',
  'folder-share-on': () =>
    'The folder’s share link works. Copy it below and send it to whoever should see its files.',
  'folder-share-off': () => 'The folder’s share link is off: it no longer opens, until you turn it on again.',
}

const readRename = formReader(
  Type.Object(
    {
      name: Type.String({
        maxLength: 255,
        pattern: '\\S',
        errorMessage: {
          pattern: 'Give the file a name: this one is empty.',
          maxLength: 'Give the file a name of at most 255 characters.',
        },
      }),
    },
    { additionalProperties: false },
  ),
)

/** `path` without the Undo of an earlier delete, so that a later change's notice does not offer it again. */
export function withoutUndo(path: string): string {
  const url = new URL(path, 'http://coffer.invalid')
  url.searchParams.delete('undo')
  return `${url.pathname}${url.search}${url.hash}`
}

/**
 * Where a delete of `fileIds` sends the browser back to: `back` with its notice, and the ids for the Undo when
 * the files went to the trash (and are few enough for an address).
 */
function afterDelete(back: string, fileIds: string[], trashDays: number): string {
  if (trashDays === 0) return withNotice(back, 'deleted', fileIds.length)
  const path = withNotice(withoutUndo(back), 'trashed', fileIds.length)
  if (fileIds.length === 0 || fileIds.length > MAX_UNDO) return path
  const url = new URL(path, 'http://coffer.invalid')
  url.searchParams.set('undo', fileIds.join(','))
  return `${url.pathname}${url.search}${url.hash}`
}

const readMove = formReader(
  Type.Object({ folderId: Type.Optional(Type.String({ maxLength: 100 })) }, { additionalProperties: false }),
)

export const filesAppRoutes: Routes = async (app, deps) => {
  await acceptForms(app, 256 * 1024)
  const kit = filesAppKit(app, deps)
  for (const routes of [listRoutes, bulkRoutes, filePageRoutes, fileChangeRoutes, fileContentRoutes]) {
    routes(app, kit)
  }
}

/** What every files page's routes share: the services, the option presets, the uploader's settings. */
function filesAppKit(app: RouteApp, { services, config, urls, web, webSessions }: RouteDeps) {
  const { files, folders, shares, folderShares, analytics, trash } = services
  const page = { page: true } as const
  const signedIn = { config: page, preValidation: webSessions.requireSession }
  const posted = { config: page, preValidation: [webSessions.requireSession, app.csrfProtection] }
  const uploader = {
    blobApiUrl: urls.blobApi,
    maxFileSize: config.maxFileSize,
    multipartThreshold: MULTIPART_THRESHOLD_BYTES,
    filesPerPreparation: 100,
  }
  return {
    files,
    trash,
    folders,
    shares,
    folderShares,
    analytics,
    services,
    config,
    urls,
    web,
    webSessions,
    signedIn,
    posted,
    uploader,
  }
}

type Kit = ReturnType<typeof filesAppKit>

/**
 * The folder's link, if it has one, and its Share panel (with the link's views and downloads per day), for the
 * folder's page.
 */
async function folderSharePart(
  { folderShares, analytics, urls }: Kit,
  request: FastifyRequest,
  folderId: string,
  token: string,
) {
  const accountId = sessionAccountId(request)
  const link = (await folderShares.byFolder(accountId, folderId)) ?? null
  const daily = link ? await analytics.daily(accountId, link.id, {}) : undefined
  const panel = sharePanel({
    target: { kind: 'folder', id: folderId },
    csrfToken: token,
    share: link && { ...link, publicUrl: urls.folderSharePage(link.publicId) },
    days: daily?.days,
    timeZone: readerTimeZone(request),
  })
  return { link, panel }
}

/** The list of files, every one or a folder's, and the rows of new uploads. */
function listRoutes(app: RouteApp, kit: Kit): void {
  const { files, trash, folders, web, webSessions, signedIn, uploader } = kit
  /** The list of every file (folderId undefined) or of a folder. */
  async function list(
    request: FastifyRequest<{ Querystring: Static<typeof ListQuery> }>,
    reply: FastifyReply,
    folderId: string | undefined,
  ) {
    const accountId = sessionAccountId(request)
    const { query: raw, cursor, before, done, n } = request.query
    const query = raw?.trim() || undefined
    // A search comes newest first only: an order in its address is let go rather than refused.
    const order = query ? DEFAULT_FILE_ORDER : (request.query.sort ?? DEFAULT_FILE_ORDER)
    const token = csrfToken(request, reply)
    const [folder, listed, byName, folderShare] = await Promise.all([
      folderId === undefined ? null : folders.get(accountId, folderId),
      files.list(accountId, { query, folderId, order, cursor, before, limit: PAGE_SIZE }),
      folders.byName(accountId, FOLDERS_SHOWN),
      folderId === undefined ? undefined : folderSharePart(kit, request, folderId, token),
    ])
    return web.send(
      reply,
      200,
      filesPage(
        {
          nav: appNav(request, reply, 'files'),
          csrfToken: token,
          folder,
          folders: byName,
          query,
          order,
          files: listed.items,
          nextCursor: listed.nextCursor,
          prevCursor: listed.prevCursor,
          // Only a hint: files added or deleted meanwhile move the list under it.
          from: listed.prevCursor === null ? 1 : (request.query.from ?? 1),
          pageSize: PAGE_SIZE,
          uploader,
          notice: noticeOf(NOTICES, done, n),
          undo: done === 'trashed' ? request.query.undo?.split(',') : undefined,
          trashDays: trash.retentionDays,
          ...(folderShare ? { folderShare } : {}),
        },
        withoutUndo(request.url),
      ),
    )
  }

  app.get(
    FILE_PATHS.home,
    { ...signedIn, schema: { hide: true, querystring: ListQuery } },
    (request, reply) => list(request, reply, undefined),
  )

  app.get(
    '/folders/:folderId',
    { ...signedIn, schema: { hide: true, params: FolderParams, querystring: ListQuery } },
    (request, reply) => list(request, reply, request.params.folderId),
  )

  // The rows of files the uploader made (`?ids=a,b`), rendered as every row is; a script's call, so refusals
  // are JSON.
  app.get(
    FILE_PATHS.rows,
    {
      preValidation: webSessions.requireSession,
      schema: {
        hide: true,
        querystring: Type.Object({
          ids: Type.String({ pattern: '^[A-Za-z0-9_]{1,100}(,[A-Za-z0-9_]{1,100}){0,99}$' }),
        }),
      },
    },
    async (request, reply) => {
      const found = await files.findMany(sessionAccountId(request), request.query.ids.split(','))
      return web.sendRendered(reply, 200, found.map(fileRow).join('\n'))
    },
  )
}

/** The selection's actions: move, delete after a confirmation. */
function bulkRoutes(app: RouteApp, { files, trash, web, posted }: Kit): void {
  app.post(FILE_PATHS.bulk, { ...posted, schema: { hide: true } }, async (request, reply) => {
    const form = readBulkForm(request.body)
    if (!form.ok) throw invalid(Object.values(form.errors).join(' '))
    const { action, fileIds = [], folderId, return_to } = form.value
    const back = withoutUndo(safeReturnTo(return_to, FILE_PATHS.home))
    if (fileIds.length === 0) return reply.redirect(withNotice(back, 'nothing-selected'), 303)
    const accountId = sessionAccountId(request)
    switch (action) {
      case 'move': {
        const moved = await files.moveMany(accountId, fileIds, folderId || null)
        return reply.redirect(withNotice(back, 'moved', moved.length), 303)
      }
      case 'delete': {
        const chosen = await files.findMany(accountId, fileIds)
        if (chosen.length === 0) return reply.redirect(withNotice(back, 'nothing-selected'), 303)
        const token = csrfToken(request, reply)
        return web.send(
          reply,
          200,
          confirmDeletePage({
            nav: appNav(request, reply, 'files'),
            csrfToken: token,
            files: chosen,
            returnTo: back,
            trashDays: trash.retentionDays,
          }),
        )
      }
      case 'confirm-delete': {
        const deleted = await files.deleteMany(accountId, fileIds, request.log)
        return reply.redirect(afterDelete(back, deleted, trash.retentionDays), 303)
      }
    }
  })
}

/** A file's page and its rename. */
function filePageRoutes(
  app: RouteApp,
  { files, folders, shares, analytics, urls, web, signedIn, posted }: Kit,
): void {
  /** The file's page, with the rename form shown again when it was refused. */
  async function showFile(
    request: FastifyRequest,
    reply: FastifyReply,
    fileId: string,
    status: number,
    extra: { renameForm?: FormState; notice?: string } = {},
  ) {
    const accountId = sessionAccountId(request)
    const file = await files.get(accountId, fileId)
    const kind = viewerKindOf(file)
    const [byName, text, share, daily] = await Promise.all([
      folders.byName(accountId, FOLDERS_SHOWN),
      kind === 'text' ? files.textHead(accountId, fileId, TEXT_PREVIEW_BYTES, request.log) : undefined,
      file.share ? shares.get(accountId, file.share.id) : null,
      file.share ? analytics.daily(accountId, file.share.id, {}) : undefined,
    ])
    const token = csrfToken(request, reply)
    const paths = { inline: FILE_PATHS.inline(file.id), preview: FILE_PATHS.preview(file.id) }
    return web.send(
      reply,
      status,
      filePage({
        nav: appNav(request, reply, 'files'),
        csrfToken: token,
        file,
        folders: byName,
        viewer: viewer(file, kind, paths, text),
        sharePanel: sharePanel({
          target: { kind: 'file', id: file.id },
          csrfToken: token,
          share: share && { ...share, publicUrl: urls.sharePage(share.publicId) },
          days: daily?.days,
          timeZone: readerTimeZone(request),
        }),
        ...extra,
      }),
    )
  }

  app.get(
    '/files/:fileId',
    { ...signedIn, schema: { hide: true, params: FileParams, querystring: ListQuery } },
    (request, reply) =>
      showFile(request, reply, request.params.fileId, 200, {
        notice: noticeOf(NOTICES, request.query.done, request.query.n),
      }),
  )

  app.post(
    '/files/:fileId/rename',
    { ...posted, schema: { hide: true, params: FileParams } },
    async (request, reply) => {
      const { fileId } = request.params
      const form = readRename(request.body)
      if (!form.ok) return showFile(request, reply, fileId, 400, { renameForm: form })
      try {
        await files.update(sessionAccountId(request), fileId, { name: form.value.name })
      } catch (error) {
        const { status, errors } = refusalOf(error, { field: 'name' })
        return showFile(request, reply, fileId, status, { renameForm: { values: form.values, errors } })
      }
      return reply.redirect(withNotice(FILE_PATHS.file(fileId), 'renamed'), 303)
    },
  )
}

/** A file moved or deleted from its page. */
function fileChangeRoutes(app: RouteApp, { files, trash, web, signedIn, posted }: Kit): void {
  app.post(
    '/files/:fileId/move',
    { ...posted, schema: { hide: true, params: FileParams } },
    async (request, reply) => {
      const { fileId } = request.params
      const form = readMove(request.body)
      if (!form.ok) throw invalid('Choose a folder from the list.')
      await files.update(sessionAccountId(request), fileId, { folderId: form.value.folderId || null })
      return reply.redirect(withNotice(FILE_PATHS.file(fileId), 'moved-one'), 303)
    },
  )

  app.get(
    '/files/:fileId/delete',
    { ...signedIn, schema: { hide: true, params: FileParams } },
    async (request, reply) => {
      const file = await files.get(sessionAccountId(request), request.params.fileId)
      const token = csrfToken(request, reply)
      return web.send(
        reply,
        200,
        confirmDeleteFilePage({
          nav: appNav(request, reply, 'files'),
          csrfToken: token,
          file,
          trashDays: trash.retentionDays,
        }),
      )
    },
  )

  app.post(
    '/files/:fileId/delete',
    { ...posted, schema: { hide: true, params: FileParams } },
    async (request, reply) => {
      const file = await files.get(sessionAccountId(request), request.params.fileId)
      await files.delete(sessionAccountId(request), file.id, request.log)
      const back = file.folderId ? FILE_PATHS.folder(file.folderId) : FILE_PATHS.home
      return reply.redirect(afterDelete(back, [file.id], trash.retentionDays), 303)
    },
  )
}

/** The file's bytes and its preview, for the owner's pages. */
function fileContentRoutes(app: RouteApp, { files, signedIn }: Kit): void {
  // The file's bytes and its preview, for the owner's pages: served as the API serves them (download.ts).
  app.route({
    method: ['GET', 'HEAD'],
    url: '/files/:fileId/download',
    ...signedIn,
    schema: {
      hide: true,
      params: FileParams,
      querystring: Type.Object({
        disposition: Type.Optional(Type.Union([Type.Literal('inline'), Type.Literal('attachment')])),
      }),
    },
    handler: async (request, reply) => {
      const content = await files.content(sessionAccountId(request), request.params.fileId, request.log)
      return sendFileContent(request, reply, content, request.query.disposition ?? 'attachment')
    },
  })

  app.route({
    method: ['GET', 'HEAD'],
    url: '/files/:fileId/preview',
    ...signedIn,
    schema: { hide: true, params: FileParams },
    handler: async (request, reply) => {
      const content = await files.previewContent(
        sessionAccountId(request),
        request.params.fileId,
        request.log,
      )
      // A file's preview never changes: the owner's browser keeps it rather than ask again on every list.
      return sendFileContent(request, reply, content, 'inline', {
        cacheControl: 'private, max-age=31536000, immutable',
      })
    },
  })
}
