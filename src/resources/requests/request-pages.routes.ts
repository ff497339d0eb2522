// The public page of a file request, `/r/{publicId}`, where outside submitters send files: the request's
// title, description and limits, and the form that sends the files through the request's public API
// (public-requests.routes.ts). An unknown link is a 404 page; a request that no longer takes files (disabled,
// past its deadline, or full: request-state.ts) a 410 page that says why and shows nothing else of it.

import type { Routes } from '../../module.ts'
import { readerTimeZone } from '../../platform/web/chosen-days.ts'
import { closedText, requestPage } from './request-pages.views.ts'

/** Public ids are 32 characters; anything much longer is not one, and is not looked up. */
const MAX_PUBLIC_ID_LENGTH = 64

export const requestPagesRoutes: Routes = async (app, { services, urls, web }) => {
  const { publicRequests } = services

  app.get<{ Params: { publicId: string } }>(
    '/r/:publicId',
    { config: { page: true }, schema: { hide: true } },
    async (request, reply) => {
      const { publicId } = request.params
      const found = publicId.length > MAX_PUBLIC_ID_LENGTH ? undefined : await publicRequests.open(publicId)
      if (!found || found.kind === 'unknown') return web.sendError(reply, 404)
      if (found.state !== 'open') return web.sendError(reply, 410, closedText(found.state))
      const settings = {
        serverPath: new URL(urls.origin).pathname.replace(/\/$/, ''),
        blobApiUrl: urls.blobApi,
        maxFileSize: await publicRequests.largestFile(found.request),
        timeZone: readerTimeZone(request),
      }
      return web.send(reply, 200, requestPage(found.request, settings))
    },
  )
}
