// The public pages of a folder link (registered by share-pages.routes.ts, beside a file link's):
// - GET /sf/{publicId}: the folder's files as they are now, newest first, 50 a page (`?cursor=`); its first page
//   counts a view.
// - GET /sf/{publicId}/files/{fileId}: one of them, as a file link's page shows a file; counts nothing.
// - GET|HEAD /sf/{publicId}/files/{fileId}/download and …/preview: its bytes and image preview, as a file link's;
//   each download from byte 0 counts one download of the link, under its download limit.
// - GET /sf/{publicId}/zip: every file of the folder as one zip, streamed as it is built; counts one download.
// - POST /sf/{publicId}: the password form (link-pages.ts).
// A file that is not in the folder (any more), or that another account owns, is the same 404 as an unknown link;
// a disabled, expired or exhausted link is a 410 everywhere under it, and a protected one shows nothing, not
// even the folder's name, before its password has been given.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { RouteApp } from '../../module.ts'
import { sendFileContent } from '../files/download.ts'
import { TEXT_PREVIEW_BYTES, viewerKindOf } from '../files/file-viewers.views.ts'
import { sendZip } from '../files/zip/zip-response.ts'
import { folderLinkPage } from './folder-share-pages.views.ts'
import {
  EXHAUSTED,
  isPrefetch,
  type LinkPagesKit,
  type LinkParams,
  MAX_PUBLIC_ID_LENGTH,
  sendLinkDownload,
} from './link-pages.ts'
import type { PublicLink } from './public-shares.service.ts'
import { folderLinkPaths, passwordPage, sharePage } from './share-pages.views.ts'

/** Files on a page of a folder link. */
const FILES_PER_PAGE = 50

interface FileParams extends LinkParams {
  fileId: string
}

const tooLong = (params: Partial<FileParams>) =>
  (params.publicId?.length ?? 0) > MAX_PUBLIC_ID_LENGTH ||
  (params.fileId?.length ?? 0) > MAX_PUBLIC_ID_LENGTH * 2

export function folderLinkRoutes(app: RouteApp, kit: LinkPagesKit): void {
  folderPageRoute(app, kit)
  folderFileRoutes(app, kit)
  folderZipRoute(app, kit)
}

/** The folder's page: its files, a page at a time; the first page counts a view. */
function folderPageRoute(app: RouteApp, kit: LinkPagesKit): void {
  const { publicShares, urls, web, pageConfig, passOf, sendGone } = kit
  app.get<{ Params: LinkParams; Querystring: { cursor?: string } }>(
    '/sf/:publicId',
    { config: pageConfig, schema: { hide: true } },
    async (request, reply) => {
      const { publicId } = request.params
      if (tooLong(request.params)) return sendGone(reply, { kind: 'unknown' })
      const state = await publicShares.openFolderUnlocked(publicId, passOf(request, 'password'))
      if (state.kind === 'locked') return web.send(reply, 200, passwordPage({}, 'folder', publicId))
      if (state.kind !== 'open') return sendGone(reply, state)
      const { link } = state
      const { cursor } = request.query
      // A page address with its cursor given twice is no page of the list, as a cursor that is not one is not.
      if (cursor !== undefined && typeof cursor !== 'string') return web.sendError(reply, 400)
      // A view is the page a visitor opens (a GET: the HEAD Fastify answers with this handler is none, nor a
      // browser's prefetch), not each further page of the list.
      const counting =
        request.method === 'GET' && cursor === undefined && !isPrefetch(request)
          ? publicShares.countView(link)
          : undefined
      // Together, so that neither failure goes unheard; the view is committed before the page goes out.
      const [files] = await Promise.all([
        publicShares.folderFiles(link, { cursor, limit: FILES_PER_PAGE }),
        counting,
      ])
      return web.send(reply, 200, folderLinkPage(link, files, { urls, paged: cursor !== undefined }))
    },
  )
}

/** One of the folder's files: its page, bytes and preview. */
function folderFileRoutes(app: RouteApp, kit: LinkPagesKit): void {
  const { publicShares, urls, web, pageConfig, passOf, sendGone, sendPasswordFirst } = kit

  /** The file this browser may see of the folder link; otherwise answers its 404, 410 or 403 page. */
  async function openFile(
    request: FastifyRequest<{ Params: FileParams }>,
    reply: FastifyReply,
    forDownload: boolean,
  ): Promise<PublicLink | undefined> {
    const { publicId, fileId } = request.params
    if (tooLong(request.params)) return void sendGone(reply, { kind: 'unknown' })
    const state = await publicShares.openFolderFile(publicId, fileId, {
      password: passOf(request, 'password'),
      download: forDownload ? passOf(request, 'download') : undefined,
    })
    if (state.kind === 'open') return state.link
    if (state.kind === 'locked') {
      // The page shows the form (posted to the folder's page); its parts answer that the password comes first.
      if (forDownload || request.url.endsWith('/preview')) sendPasswordFirst(reply, state.link)
      else web.send(reply, 200, passwordPage({}, 'folder', publicId))
    } else sendGone(reply, state)
    return undefined
  }

  app.get<{ Params: FileParams }>(
    '/sf/:publicId/files/:fileId',
    { config: pageConfig, schema: { hide: true } },
    async (request, reply) => {
      const link = await openFile(request, reply, false)
      if (!link) return reply
      const kind = viewerKindOf({ ...link.file, preview: link.preview })
      const text =
        kind === 'text' ? await publicShares.textHead(link, TEXT_PREVIEW_BYTES, request.log) : undefined
      const inFolder = {
        name: link.folder?.name ?? 'the folder',
        page: folderLinkPaths(link.publicId).page,
        copyUrl: `${urls.origin}${folderLinkPaths(link.publicId).file(link.file.id).page}`,
      }
      return web.send(reply, 200, sharePage(link, { urls, text, kind, inFolder }))
    },
  )

  // HEAD declared with GET, so that its answer keeps the Content-Length of the bytes it does not send.
  app.route<{ Params: FileParams; Querystring: { disposition?: string } }>({
    method: ['GET', 'HEAD'],
    url: '/sf/:publicId/files/:fileId/download',
    config: pageConfig,
    schema: { hide: true },
    handler: async (request, reply) => {
      const link = await openFile(request, reply, true)
      if (!link) return reply
      return sendLinkDownload(request, reply, kit, link)
    },
  })

  app.route<{ Params: FileParams }>({
    method: ['GET', 'HEAD'],
    url: '/sf/:publicId/files/:fileId/preview',
    config: pageConfig,
    schema: { hide: true },
    handler: async (request, reply) => {
      const link = await openFile(request, reply, false)
      if (!link) return reply
      const preview = publicShares.previewContent(link, request.log)
      if (!preview) return web.sendError(reply, 404)
      return sendFileContent(request, reply, preview, 'inline')
    },
  })
}

/** Download all: the folder as one zip, counted as one download. */
function folderZipRoute(app: RouteApp, kit: LinkPagesKit): void {
  const { publicShares, web, pageConfig, passOf, sendGone, sendPasswordFirst } = kit
  app.get<{ Params: LinkParams }>(
    '/sf/:publicId/zip',
    // A HEAD would build the whole archive to throw it away: not offered.
    { config: pageConfig, exposeHeadRoute: false, schema: { hide: true } },
    async (request, reply) => {
      if (tooLong(request.params)) return sendGone(reply, { kind: 'unknown' })
      const state = await publicShares.openFolderUnlocked(
        request.params.publicId,
        passOf(request, 'password'),
      )
      if (state.kind === 'locked') return sendPasswordFirst(reply, state.link)
      if (state.kind !== 'open') return sendGone(reply, state)
      const archive = await publicShares.folderZip(state.link, request.log)
      if (!archive) return web.sendError(reply, 410, EXHAUSTED)
      return sendZip(reply, archive)
    },
  )
}
