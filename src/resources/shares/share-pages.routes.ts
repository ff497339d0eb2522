// The public pages of share links, for the people a file or a folder is shared with:
// - GET /s/{publicId}: the file's page, with a preview; counts a view.
// - GET|HEAD /s/{publicId}/download: the bytes, served exactly as the API's download serves them (download.ts);
//   counts a download when it begins at byte 0. `?disposition=inline` for the page's players and viewers.
// - GET|HEAD /s/{publicId}/preview: the image preview (a WebP); counts nothing.
// - POST /s/{publicId}: the password form of a protected link.
// - /sf/{publicId}…: a folder link's pages (folder-share-pages.routes.ts).
// An unknown link is a 404 page; a disabled, expired or exhausted one a 410 page that shows nothing of the
// file. A protected link shows nothing, not even the file's name, before its password has been given. The
// rules (the password's guesses limited, the download limit) are PublicSharesService's; the routes keep the
// passes it gives in cookies and answer with pages (link-pages.ts: what both kinds of link share).
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { RouteApp, Routes } from '../../module.ts'
import { acceptForms } from '../../platform/web/forms.ts'
import { sendFileContent } from '../files/download.ts'
import type { FaultLog } from '../files/file-content.ts'
import { TEXT_PREVIEW_BYTES, viewerKindOf } from '../files/file-viewers.views.ts'
import { folderLinkRoutes } from './folder-share-pages.routes.ts'
import {
  isPrefetch,
  type LinkPagesKit,
  type LinkParams,
  linkPagesKit,
  MAX_PUBLIC_ID_LENGTH,
  passwordRoute,
  sendLinkDownload,
} from './link-pages.ts'
import type { PublicLink, UnlockedState } from './public-shares.service.ts'
import { passwordPage, sharePage } from './share-pages.views.ts'

export const sharePagesRoutes: Routes = async (app, deps) => {
  // The password form's body; in this plugin only, so the JSON API still refuses form bodies.
  await acceptForms(app, 4096)
  const kit = linkPagesKit(app, deps)
  for (const routes of [sharePageRoutes, linkContentRoutes, folderLinkRoutes]) routes(app, kit)
  passwordRoute(app, kit, 'file')
  passwordRoute(app, kit, 'folder')
}

/**
 * The file link behind the request's public id, as this browser may see it (`locked` before its password); for a
 * download, also open to the holder of a download pass once the link's downloads are all taken.
 */
async function openFor(
  request: FastifyRequest<{ Params: LinkParams }>,
  { publicShares, passOf }: LinkPagesKit,
  forDownload = false,
): Promise<UnlockedState> {
  const { publicId } = request.params
  if (publicId.length > MAX_PUBLIC_ID_LENGTH) return { kind: 'unknown' }
  const password = passOf(request, 'password')
  return forDownload
    ? publicShares.openForDownload(publicId, { password, download: passOf(request, 'download') })
    : publicShares.openUnlocked(publicId, password)
}

/** The working file link this browser may fetch from; otherwise answers its 404, 410 or 403 page. */
async function openUnlockedLink(
  request: FastifyRequest<{ Params: LinkParams }>,
  reply: FastifyReply,
  kit: LinkPagesKit,
  forDownload = false,
) {
  const state = await openFor(request, kit, forDownload)
  if (state.kind === 'open') return state.link
  if (state.kind === 'locked') kit.sendPasswordFirst(reply, state.link)
  else kit.sendGone(reply, state)
  return undefined
}

/** A link's page: the file, with a preview; counts a view. */
function sharePageRoutes(app: RouteApp, kit: LinkPagesKit): void {
  const { publicShares, urls, web, pages, pageConfig, sendGone } = kit

  /** The page of a link's file, rendered once for everything it shows: a file's bytes never change, its name may. */
  async function renderedPage(link: PublicLink, log: FaultLog): Promise<Buffer> {
    const key = `${link.shareId}\n${link.file.name}\n${link.preview ? 'preview' : ''}`
    const cached = pages.get(key)
    if (cached) return cached
    const kind = viewerKindOf({ ...link.file, preview: link.preview })
    const text = kind === 'text' ? await publicShares.textHead(link, TEXT_PREVIEW_BYTES, log) : undefined
    return pages.set(key, web.layout.render(sharePage(link, { urls, text, kind })))
  }

  app.get<{ Params: LinkParams }>(
    '/s/:publicId',
    { config: pageConfig, schema: { hide: true } },
    async (request, reply) => {
      const state = await openFor(request, kit)
      if (state.kind === 'locked') return web.send(reply, 200, passwordPage({}, 'file'))
      if (state.kind !== 'open') return sendGone(reply, state)
      const { link } = state
      const counting =
        request.method === 'GET' && !isPrefetch(request) ? publicShares.countView(link) : undefined
      // Committed before the page goes out (a view the reader saw is never lost), and awaited together with
      // the page, so that a failure of either is heard.
      const [html] = await Promise.all([renderedPage(link, request.log), counting])
      return web.sendRendered(reply, 200, html)
    },
  )
}

/** A link's bytes and its preview. */
function linkContentRoutes(app: RouteApp, kit: LinkPagesKit): void {
  const { publicShares, web, pageConfig } = kit
  // HEAD declared with GET, so that its answer keeps the Content-Length of the bytes it does not send.
  app.route<{ Params: LinkParams; Querystring: { disposition?: string } }>({
    method: ['GET', 'HEAD'],
    url: '/s/:publicId/download',
    config: pageConfig,
    schema: { hide: true },
    handler: async (request, reply) => {
      const link = await openUnlockedLink(request, reply, kit, true)
      if (!link) return reply
      return sendLinkDownload(request, reply, kit, link)
    },
  })

  app.route<{ Params: LinkParams }>({
    method: ['GET', 'HEAD'],
    url: '/s/:publicId/preview',
    config: pageConfig,
    schema: { hide: true },
    handler: async (request, reply) => {
      const link = await openUnlockedLink(request, reply, kit)
      if (!link) return reply
      const preview = publicShares.previewContent(link, request.log)
      if (!preview) return web.sendError(reply, 404)
      return sendFileContent(request, reply, preview, 'inline')
    },
  })
}
