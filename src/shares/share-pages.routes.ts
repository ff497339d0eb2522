// The public pages of share links, for the people a file is shared with:
// - GET /s/{publicId}: the file's page, with a preview; counts a view.
// - GET|HEAD /s/{publicId}/download: the bytes, served exactly as the API's download serves them (download.ts);
//   counts a download when it begins at byte 0. `?disposition=inline` for the page's players and viewers.
// - GET|HEAD /s/{publicId}/preview: the image preview (a WebP); counts nothing.
// - POST /s/{publicId}: the password form of a protected link.
// An unknown link is a 404 page; a disabled, expired or exhausted one a 410 page that shows nothing of the
// file. A protected link shows nothing, not even the file's name, before its password has been given. The
// rules (the password's guesses limited, the download limit) are PublicSharesService's; the routes keep the
// passes it gives in cookies and answer with pages.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { openDownload, planDownload, sendFileContent } from '../files/download.ts'
import { TEXT_PREVIEW_BYTES, viewerKindOf } from '../files/file-viewers.views.ts'
import { clientAddress } from '../http/client-address.ts'
import { addressBucket } from '../http/rate-limit.ts'
import type { RouteApp, RouteDeps, Routes } from '../routes.ts'
import { formReader } from '../web/form-reader.ts'
import { acceptForms } from '../web/forms.ts'
import { PageCache } from '../web/page-cache.ts'
import type { Web } from '../web/web.ts'
import type { PassKind } from './link-passes.ts'
import type {
  LinkState,
  Pass,
  PublicLink,
  PublicSharesService,
  UnlockedState,
} from './public-shares.service.ts'
import { linkPaths, passwordPage, sharePage } from './share-pages.views.ts'

/** Public ids are 32 characters; anything much longer is not one, and is not looked up. */
const MAX_PUBLIC_ID_LENGTH = 64

const readPasswordForm = formReader(
  Type.Object(
    { password: Type.String({ maxLength: 256, errorMessage: 'Enter the password you were given.' }) },
    { additionalProperties: false },
  ),
)

/** The cookie of each pass, and the path it is sent back to. */
const PASS_COOKIES: Record<PassKind, { name: string; path: (publicId: string) => string }> = {
  password: { name: 'coffer_link_pass', path: (publicId) => linkPaths(publicId).page },
  download: { name: 'coffer_download_pass', path: (publicId) => linkPaths(publicId).download },
}

/** Browsers fetching a page the reader has not opened (yet): such a request is not a view. */
function isPrefetch(request: FastifyRequest): boolean {
  const { headers } = request
  const purpose = `${headers['sec-purpose'] ?? ''} ${headers.purpose ?? ''} ${headers['x-purpose'] ?? ''} ${headers['x-moz'] ?? ''}`
  return /\b(prefetch|prerender|preview)\b/i.test(purpose)
}

interface LinkParams {
  publicId: string
}

export const sharePagesRoutes: Routes = async (app, deps) => {
  // The password form's body; in this plugin only, so the JSON API still refuses form bodies.
  await acceptForms(app, 4096)
  const kit = sharePagesKit(app, deps)
  for (const routes of [sharePageRoutes, passwordRoutes, linkContentRoutes]) routes(app, kit)
}

/** What every group of the share pages' routes shares: the service, the option presets, the links' access. */
function sharePagesKit(app: RouteApp, { services, config, urls, web }: RouteDeps) {
  const { publicShares } = services
  const passes = linkPasses(app, config.publicUrl.startsWith('https:'))
  return {
    publicShares,
    urls,
    web,
    pages: new PageCache(),
    pageConfig: { page: true } as const,
    ...passes,
    ...linkAccess(publicShares, web, passes.passOf),
  }
}

type Kit = ReturnType<typeof sharePagesKit>

/** The passes this browser holds for links, kept in cookies. */
function linkPasses(app: RouteApp, secure: boolean) {
  /** The pass of `kind` this browser holds for links, if any. */
  function passOf(request: FastifyRequest, kind: PassKind): string | undefined {
    return app.parseCookie(request.headers.cookie ?? '')[PASS_COOKIES[kind].name]
  }

  function givePass(reply: FastifyReply, link: PublicLink, kind: PassKind, pass: Pass): void {
    reply.setCookie(PASS_COOKIES[kind].name, pass.token, {
      path: PASS_COOKIES[kind].path(link.publicId),
      httpOnly: true,
      sameSite: 'lax',
      secure,
      maxAge: pass.maxAgeSeconds,
    })
  }

  return { passOf, givePass }
}

/** The link a request opens, as this browser may see it, and the pages of the links it may not. */
function linkAccess(
  publicShares: PublicSharesService,
  web: Web,
  passOf: ReturnType<typeof linkPasses>['passOf'],
) {
  /** The 404 or 410 page of a link that does not work. */
  function sendGone(reply: FastifyReply, state: Exclude<LinkState, { kind: 'open' }>) {
    if (state.kind === 'unknown') return web.sendError(reply, 404)
    return web.sendError(reply, 410, state.reason === 'exhausted' ? EXHAUSTED : undefined)
  }

  /**
   * The link behind the request's public id, as this browser may see it (`locked` before its password); for a
   * download, also open to the holder of a download pass once the link's downloads are all taken.
   */
  async function openFor(
    request: FastifyRequest<{ Params: LinkParams }>,
    forDownload = false,
  ): Promise<UnlockedState> {
    const { publicId } = request.params
    if (publicId.length > MAX_PUBLIC_ID_LENGTH) return { kind: 'unknown' }
    const password = passOf(request, 'password')
    return forDownload
      ? publicShares.openForDownload(publicId, { password, download: passOf(request, 'download') })
      : publicShares.openUnlocked(publicId, password)
  }

  /** The working link this browser may fetch from; otherwise answers its 404, 410 or 403 page. */
  async function openUnlockedLink(
    request: FastifyRequest<{ Params: LinkParams }>,
    reply: FastifyReply,
    forDownload = false,
  ) {
    const state = await openFor(request, forDownload)
    if (state.kind === 'open') return state.link
    if (state.kind === 'locked') web.sendError(reply, 403, PASSWORD_FIRST(state.link))
    else sendGone(reply, state)
    return undefined
  }

  return { sendGone, openFor, openUnlockedLink }
}

/** A link's page: the file, with a preview; counts a view. */
function sharePageRoutes(
  app: RouteApp,
  { publicShares, urls, web, pages, pageConfig, openFor, sendGone }: Kit,
): void {
  app.get<{ Params: LinkParams }>(
    '/s/:publicId',
    { config: pageConfig, schema: { hide: true } },
    async (request, reply) => {
      const state = await openFor(request)
      if (state.kind === 'locked') return web.send(reply, 200, passwordPage({}))
      if (state.kind !== 'open') return sendGone(reply, state)
      const { link } = state
      const counting =
        request.method === 'GET' && !isPrefetch(request) ? publicShares.countView(link) : undefined
      // Everything the page shows: a file's bytes never change, but its name may.
      const key = `${link.shareId}\n${link.file.name}\n${link.preview ? 'preview' : ''}`
      let html = pages.get(key)
      if (!html) {
        const kind = viewerKindOf({ ...link.file, preview: link.preview })
        const text =
          kind === 'text' ? await publicShares.textHead(link, TEXT_PREVIEW_BYTES, request.log) : undefined
        html = pages.set(key, web.layout.render(sharePage(link, { urls, text, kind })))
      }
      // Committed before the page goes out: a view the reader saw is never lost.
      await counting
      return web.sendRendered(reply, 200, html)
    },
  )
}

/** The password form of a protected link. */
function passwordRoutes(app: RouteApp, { publicShares, web, pageConfig, sendGone, givePass }: Kit): void {
  app.post<{ Params: LinkParams }>(
    '/s/:publicId',
    { config: pageConfig, schema: { hide: true } },
    async (request, reply) => {
      const { publicId } = request.params
      if (publicId.length > MAX_PUBLIC_ID_LENGTH) return sendGone(reply, { kind: 'unknown' })
      const form = readPasswordForm(request.body)
      if (!form.ok) {
        // Not a guess, so not counted: the form again, marked. A link that does not work is still its 404
        // or 410, and one without a password its page.
        const state = await publicShares.open(publicId)
        if (state.kind !== 'open') return sendGone(reply, state)
        if (!state.link.hasPassword) return reply.redirect(linkPaths(publicId).page, 303)
        return web.send(reply, 400, passwordPage({ errors: form.errors }))
      }
      const { password } = form.value
      const result = await publicShares.unlock({
        publicId,
        password,
        client: addressBucket(clientAddress(request)),
      })
      switch (result.kind) {
        case 'unknown':
        case 'gone':
          return sendGone(reply, result)
        case 'unprotected':
          return reply.redirect(linkPaths(result.link.publicId).page, 303)
        case 'throttled': {
          const wait = result.retryAfterSeconds
          reply.header('retry-after', wait)
          return web.sendError(reply, 429, {
            title: 'Too many attempts',
            message: `Too many passwords were tried for this link. Try again in ${Math.ceil(wait / 60)} minute${wait > 60 ? 's' : ''}.`,
          })
        }
        case 'wrong':
          return web.send(
            reply,
            403,
            passwordPage({ errors: { password: 'That is not the password of this link.' } }),
          )
        case 'unlocked':
          givePass(reply, result.link, 'password', result.pass)
          return reply.redirect(linkPaths(result.link.publicId).page, 303)
      }
    },
  )
}

/** A link's bytes and its preview. */
function linkContentRoutes(
  app: RouteApp,
  { publicShares, web, pageConfig, passOf, givePass, openUnlockedLink }: Kit,
): void {
  // HEAD declared with GET, so that its answer keeps the Content-Length of the bytes it does not send.
  app.route<{ Params: LinkParams; Querystring: { disposition?: string } }>({
    method: ['GET', 'HEAD'],
    url: '/s/:publicId/download',
    config: pageConfig,
    schema: { hide: true },
    handler: async (request, reply) => {
      const link = await openUnlockedLink(request, reply, true)
      if (!link) return reply
      const disposition = request.query.disposition === 'inline' ? 'inline' : 'attachment'
      const content = publicShares.content(link, request.log)
      const plan = planDownload(request, content.file, disposition)
      // Ready before the download is counted: a store that fails it fails it uncounted.
      const download = await openDownload(reply, plan, content, { countedExactly: link.limited })
      // Only a GET that sends bytes is a download: not HEAD, not a 304.
      if (plan.kind !== 'bytes') return download.send()
      const admission = await publicShares
        .admitDownload(link, {
          start: plan.start,
          length: plan.end - plan.start + 1,
          downloadPass: passOf(request, 'download'),
        })
        .catch((error: unknown) => {
          download.discard()
          throw error
        })
      if (admission.kind !== 'admitted') download.discard()
      switch (admission.kind) {
        case 'exhausted':
          return web.sendError(reply, 410, EXHAUSTED)
        case 'start-from-beginning':
          return web.sendError(reply, 403, {
            title: 'Start the download from the beginning',
            message: LIMITED_RANGE_MESSAGE,
          })
        case 'admitted':
          if (admission.pass) givePass(reply, link, 'download', admission.pass)
          return download.send({ end: plan.start + admission.length - 1, unsent: admission.unsent })
      }
    },
  })

  app.route<{ Params: LinkParams }>({
    method: ['GET', 'HEAD'],
    url: '/s/:publicId/preview',
    config: pageConfig,
    schema: { hide: true },
    handler: async (request, reply) => {
      const link = await openUnlockedLink(request, reply)
      if (!link) return reply
      const preview = publicShares.previewContent(link, request.log)
      if (!preview) return web.sendError(reply, 404)
      return sendFileContent(request, reply, preview, 'inline')
    },
  })
}

const EXHAUSTED = {
  title: 'This link is no longer available',
  message:
    'It has been downloaded as many times as its owner allowed. Ask the person who sent it for a new one.',
}

const LIMITED_RANGE_MESSAGE =
  "This link allows a limited number of downloads, so a download must begin from the file's first byte."

const PASSWORD_FIRST = (link: PublicLink) => ({
  title: 'This link is protected',
  message: `Open ${linkPaths(link.publicId).page} and enter its password first.`,
})
