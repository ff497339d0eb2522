// What the public pages of both kinds of link share (share-pages.routes.ts for a file's, folder-share-pages.routes.ts
// for a folder's): the passes a browser keeps in cookies, the answer to a link that does not work or is locked,
// the password form and its route, and what is not a view (a browser's prefetch).
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import type { RouteApp, RouteDeps } from '../../module.ts'
import { clientAddress } from '../../platform/http/client-address.ts'
import { addressBucket } from '../../platform/http/rate-limit.ts'
import { formReader } from '../../platform/web/form-reader.ts'
import { PageCache } from '../../platform/web/page-cache.ts'
import type { Web } from '../../platform/web/web.ts'
import { openDownload, planDownload } from '../files/download.ts'
import type { PassKind } from './link-passes.ts'
import type { LinkAccess, LinkState, Pass, PublicLink } from './public-shares.service.ts'
import { folderLinkPaths, linkPaths, passwordPage } from './share-pages.views.ts'
import type { LinkTarget } from './shares.repository.ts'

/** Public ids are 32 characters; anything much longer is not one, and is not looked up. */
export const MAX_PUBLIC_ID_LENGTH = 64

export interface LinkParams {
  publicId: string
}

const readPasswordForm = formReader(
  Type.Object(
    { password: Type.String({ maxLength: 256, errorMessage: 'Enter the password you were given.' }) },
    { additionalProperties: false },
  ),
)

/** The page of a link: where its password pass is sent back to (the page and everything under it). */
export function linkPagePath(link: { target: LinkTarget; publicId: string }): string {
  return link.target === 'file' ? linkPaths(link.publicId).page : folderLinkPaths(link.publicId).page
}

/** Where a file's download pass is sent back to: that file's download address only. */
function downloadPath(link: PublicLink): string {
  return link.target === 'file'
    ? linkPaths(link.publicId).download
    : folderLinkPaths(link.publicId).file(link.file.id).download
}

const PASS_COOKIES: Record<PassKind, string> = {
  password: 'coffer_link_pass',
  download: 'coffer_download_pass',
}

/** Browsers fetching a page the reader has not opened (yet): such a request is not a view. */
export function isPrefetch(request: FastifyRequest): boolean {
  const { headers } = request
  const purpose = `${headers['sec-purpose'] ?? ''} ${headers.purpose ?? ''} ${headers['x-purpose'] ?? ''} ${headers['x-moz'] ?? ''}`
  return /\b(prefetch|prerender|preview)\b/i.test(purpose)
}

/** What every group of the links' page routes shares: the service, the option presets, the passes. */
export function linkPagesKit(app: RouteApp, { services, config, urls, web }: RouteDeps) {
  const { publicShares } = services
  const secure = config.publicUrl.startsWith('https:')

  /** The pass of `kind` this browser holds for links, if any. */
  function passOf(request: FastifyRequest, kind: PassKind): string | undefined {
    return app.parseCookie(request.headers.cookie ?? '')[PASS_COOKIES[kind]]
  }

  function givePass(reply: FastifyReply, path: string, kind: PassKind, pass: Pass): void {
    reply.setCookie(PASS_COOKIES[kind], pass.token, {
      path,
      httpOnly: true,
      sameSite: 'lax',
      secure,
      maxAge: pass.maxAgeSeconds,
    })
  }

  return {
    publicShares,
    urls,
    web,
    pages: new PageCache(),
    pageConfig: { page: true } as const,
    passOf,
    givePassword: (reply: FastifyReply, link: LinkAccess, pass: Pass) =>
      givePass(reply, linkPagePath(link), 'password', pass),
    giveDownloadPass: (reply: FastifyReply, link: PublicLink, pass: Pass) =>
      givePass(reply, downloadPath(link), 'download', pass),
    ...linkRefusals(web),
  }
}

export type LinkPagesKit = ReturnType<typeof linkPagesKit>

/** The pages of links a browser may not see. */
function linkRefusals(web: Web) {
  /** The 404 or 410 page of a link that does not work. */
  function sendGone(reply: FastifyReply, state: Exclude<LinkState<LinkAccess>, { kind: 'open' }>) {
    if (state.kind === 'unknown') return web.sendError(reply, 404)
    return web.sendError(reply, 410, state.reason === 'exhausted' ? EXHAUSTED : undefined)
  }

  /** The 403 page of a protected link's part asked for before its password was given. */
  function sendPasswordFirst(reply: FastifyReply, link: LinkAccess) {
    return web.sendError(reply, 403, {
      title: 'This link is protected',
      message: `Open ${linkPagePath(link)} and enter its password first.`,
    })
  }

  return { sendGone, sendPasswordFirst }
}

/** The password form of a protected link of `target`'s kind, posted to its page. */
export function passwordRoute(
  app: RouteApp,
  { publicShares, web, pageConfig, sendGone, givePassword }: LinkPagesKit,
  target: LinkTarget,
): void {
  const pagePath = (publicId: string) => linkPagePath({ target, publicId })
  app.post<{ Params: LinkParams }>(
    target === 'file' ? '/s/:publicId' : '/sf/:publicId',
    { config: pageConfig, schema: { hide: true } },
    async (request, reply) => {
      const { publicId } = request.params
      if (publicId.length > MAX_PUBLIC_ID_LENGTH) return sendGone(reply, { kind: 'unknown' })
      const form = readPasswordForm(request.body)
      if (!form.ok) {
        // Not a guess, so not counted: the form again, marked. A link that does not work is still its 404
        // or 410, and one without a password its page.
        const state =
          target === 'file' ? await publicShares.open(publicId) : await publicShares.openFolder(publicId)
        if (state.kind !== 'open') return sendGone(reply, state)
        if (!state.link.hasPassword) return reply.redirect(pagePath(publicId), 303)
        return web.send(reply, 400, passwordPage({ errors: form.errors }, target))
      }
      const { password } = form.value
      const result = await publicShares.unlock({
        target,
        publicId,
        password,
        client: addressBucket(clientAddress(request)),
      })
      switch (result.kind) {
        case 'unknown':
        case 'gone':
          return sendGone(reply, result)
        case 'unprotected':
          return reply.redirect(pagePath(publicId), 303)
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
            passwordPage({ errors: { password: 'That is not the password of this link.' } }, target),
          )
        case 'unlocked':
          givePassword(reply, result.link, result.pass)
          return reply.redirect(pagePath(publicId), 303)
      }
    },
  )
}

export const EXHAUSTED = {
  title: 'This link is no longer available',
  message:
    'It has been downloaded as many times as its owner allowed. Ask the person who sent it for a new one.',
}

export const LIMITED_RANGE_MESSAGE =
  "This link allows a limited number of downloads, so a download must begin from the file's first byte."

/**
 * Sends the bytes of a file a working link opens, as the API's download sends them (download.ts), for GET and
 * HEAD; counts a download when a GET sends bytes from byte 0, under the link's download limit
 * (PublicSharesService.admitDownload). `?disposition=inline` for the page's players and viewers.
 */
export async function sendLinkDownload(
  request: FastifyRequest<{ Querystring: { disposition?: string } }>,
  reply: FastifyReply,
  { publicShares, web, passOf, giveDownloadPass }: LinkPagesKit,
  link: PublicLink,
): Promise<FastifyReply> {
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
      if (admission.pass) giveDownloadPass(reply, link, admission.pass)
      return download.send({ end: plan.start + admission.length - 1, unsent: admission.unsent })
  }
}
