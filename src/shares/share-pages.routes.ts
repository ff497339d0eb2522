// The public pages of share links, for the people a file is shared with:
// - GET /s/{publicId}: the file's page, with a preview; counts a view.
// - GET|HEAD /s/{publicId}/download: the bytes, served exactly as the API's download serves them (download.ts);
//   counts a download when it begins at byte 0. `?disposition=inline` for the page's players and viewers.
// - GET|HEAD /s/{publicId}/preview: the image preview (a WebP); counts nothing.
// - POST /s/{publicId}: the password form of a protected link.
// An unknown link is a 404 page; a disabled, expired or exhausted one a 410 page that shows nothing of the
// file. A protected link shows nothing, not even the file's name, before its password has been given.
import formBody from '@fastify/formbody'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { sendFileContent } from '../files/download.ts'
import { addressBucket, retryAfterSeconds } from '../http/rate-limit.ts'
import { parseFormStrictly } from '../http/strict-text.ts'
import type { Routes } from '../routes.ts'
import { PageCache } from '../web/page-cache.ts'
import type { PassKind } from './link-passes.ts'
import type { LinkState, PublicLink } from './public-shares.service.ts'
import { linkPaths, passwordPage, previewKindOf, sharePage, TEXT_PREVIEW_BYTES } from './share-pages.views.ts'

/** Public ids are 32 characters; anything much longer is not one, and is not looked up. */
const MAX_PUBLIC_ID_LENGTH = 64

/** Password guesses: a burst of 10, then one a minute, per link and per client address, across processes. */
const PASSWORD_ATTEMPTS = { limit: 10, windowMs: 10 * 60_000 }

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

/** A download the link does not allow, answered as a page by the handler that started it. */
class RefusedDownload extends Error {
  readonly status: number
  readonly title: string
  readonly text: string

  constructor(status: number, title: string, text: string) {
    super(title)
    this.status = status
    this.title = title
    this.text = text
  }
}

export const sharePagesRoutes: Routes = async (app, { services, config, urls, web }) => {
  const { publicShares } = services
  const attempts = app.rateLimitStore(PASSWORD_ATTEMPTS)
  // The password form's body; in this plugin only, so the JSON API still refuses form bodies.
  await app.register(formBody, { bodyLimit: 4096, parser: parseFormStrictly })

  const secure = config.publicUrl.startsWith('https:')
  const pages = new PageCache()
  const pageConfig = { page: true } as const

  /** The working link behind the request's public id; otherwise answers its 404 or 410 page. */
  async function openLink(request: FastifyRequest<{ Params: LinkParams }>, reply: FastifyReply) {
    const { publicId } = request.params
    const state: LinkState =
      publicId.length > MAX_PUBLIC_ID_LENGTH ? { kind: 'unknown' } : await publicShares.open(publicId)
    if (state.kind === 'open') return state.link
    if (state.kind === 'unknown') web.sendError(reply, 404)
    else web.sendError(reply, 410, state.reason === 'exhausted' ? EXHAUSTED : undefined)
    return undefined
  }

  /** `openLink`, and for a protected link only with this browser's pass: a 403 page otherwise. */
  async function openUnlockedLink(request: FastifyRequest<{ Params: LinkParams }>, reply: FastifyReply) {
    const link = await openLink(request, reply)
    if (link?.hasPassword && !(await hasPass(request, link, 'password'))) {
      web.sendError(reply, 403, PASSWORD_FIRST(link))
      return undefined
    }
    return link
  }

  async function hasPass(request: FastifyRequest, link: PublicLink, kind: PassKind): Promise<boolean> {
    const cookies = app.parseCookie(request.headers.cookie ?? '')
    return publicShares.checkPass(link, kind, cookies[PASS_COOKIES[kind].name])
  }

  async function givePass(reply: FastifyReply, link: PublicLink, kind: PassKind): Promise<void> {
    const { token, maxAgeSeconds } = await publicShares.issuePass(link, kind)
    reply.setCookie(PASS_COOKIES[kind].name, token, {
      path: PASS_COOKIES[kind].path(link.publicId),
      httpOnly: true,
      sameSite: 'lax',
      secure,
      maxAge: maxAgeSeconds,
    })
  }

  app.get<{ Params: LinkParams }>(
    '/s/:publicId',
    { config: pageConfig, schema: { hide: true } },
    async (request, reply) => {
      const link = await openLink(request, reply)
      if (!link) return reply
      if (link.hasPassword && !(await hasPass(request, link, 'password'))) {
        return web.send(reply, 200, passwordPage({}))
      }
      const counting =
        request.method === 'GET' && !isPrefetch(request) ? publicShares.countView(link) : undefined
      // Everything the page shows: a file's bytes never change, but its name may.
      const key = `${link.shareId}\n${link.file.name}\n${link.preview ? 'preview' : ''}`
      let html = pages.get(key)
      if (!html) {
        const kind = previewKindOf(link)
        const text =
          kind === 'text' ? await publicShares.textHead(link, TEXT_PREVIEW_BYTES, request.log) : undefined
        html = pages.set(key, web.layout.render(sharePage(link, { urls, text, kind })))
      }
      // Committed before the page goes out: a view the reader saw is never lost.
      await counting
      return web.sendRendered(reply, 200, html)
    },
  )

  app.post<{ Params: LinkParams; Body: { password?: unknown } }>(
    '/s/:publicId',
    { config: pageConfig, schema: { hide: true } },
    async (request, reply) => {
      const link = await openLink(request, reply)
      if (!link) return reply
      const { page } = linkPaths(link.publicId)
      if (!link.hasPassword) return reply.redirect(page, 303)
      // Counted before the password is checked, right or wrong: a guess past the limit costs no hashing.
      const [byLink, byAddress] = await Promise.all([
        attempts.hit(`share-password:${link.shareId}`),
        attempts.hit(`share-password-${addressBucket(request.ip)}`),
      ])
      if (!byLink.allowed || !byAddress.allowed) {
        const wait = retryAfterSeconds(Math.max(byLink.retryAfterUs, byAddress.retryAfterUs))
        reply.header('retry-after', wait)
        return web.sendError(reply, 429, {
          title: 'Too many attempts',
          message: `Too many passwords were tried for this link. Try again in ${Math.ceil(wait / 60)} minute${wait > 60 ? 's' : ''}.`,
        })
      }
      const password = typeof request.body?.password === 'string' ? request.body.password : ''
      const right =
        password.length > 0 &&
        password.length <= 256 &&
        (await publicShares.checkPassword(link.publicId, password))
      if (!right)
        return web.send(reply, 403, passwordPage({ error: 'That is not the password of this link.' }))
      await givePass(reply, link, 'password')
      return reply.redirect(page, 303)
    },
  )

  // HEAD declared with GET, so that its answer keeps the Content-Length of the bytes it does not send.
  app.route<{ Params: LinkParams; Querystring: { disposition?: string } }>({
    method: ['GET', 'HEAD'],
    url: '/s/:publicId/download',
    config: pageConfig,
    schema: { hide: true },
    handler: async (request, reply) => {
      const link = await openUnlockedLink(request, reply)
      if (!link) return reply
      const disposition = request.query.disposition === 'inline' ? 'inline' : 'attachment'
      try {
        return await sendFileContent(request, reply, publicShares.content(link, request.log), disposition, {
          beforeSend: async (delivery) => {
            if (request.method !== 'GET' || delivery.kind !== 'bytes') return
            if (delivery.start === 0) {
              if (!(await publicShares.countDownload(link))) {
                throw new RefusedDownload(410, EXHAUSTED.title, EXHAUSTED.message)
              }
              if (link.limited) await givePass(reply, link, 'download')
            } else if (link.limited && !(await hasPass(request, link, 'download'))) {
              // The rest of a download this browser was granted, or nothing: ranges that skip byte 0 would
              // otherwise fetch a limited file without ever counting.
              throw new RefusedDownload(403, 'Start the download from the beginning', LIMITED_RANGE_MESSAGE)
            }
          },
        })
      } catch (error) {
        if (!(error instanceof RefusedDownload)) throw error
        return web.sendError(reply, error.status, { title: error.title, message: error.text })
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
