// The web foundation every page stands on: the built assets (served under /assets/ with immutable caching),
// the layout, the security headers of a page, and the HTML error pages. Resources' page routes get a `Web`
// and answer through it; routes flagged `config: { page: true }` also get their errors as pages (see
// http/errors.ts), while /api/v1 keeps its JSON envelope.
import fastifyStatic from '@fastify/static'
import type { FastifyInstance, FastifyReply } from 'fastify'
import { html } from 'ghtml'
import type { Config } from '../config.ts'
import { ASSETS_DIR, ASSETS_PATH, ensureAssets } from './build.ts'
import { Layout, type Page } from './layout.ts'

/**
 * The policy of every page: scripts and styles only from this server's own files (no inline script, no
 * eval), images, media and frames from this server, forms posted only back to it, and no framing by
 * anyone. Nothing is loaded from elsewhere, so a share link's address never leaks through a request.
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "media-src 'self'",
  "frame-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ')

/** Sent with every page and error page. */
function pageHeaders(config: Config): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': PAGE_CSP,
    'x-content-type-options': 'nosniff',
    // The address of a share or request page is its capability: it must not travel to another site.
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
    // Pages count views and may show what was since disabled: never served from a cache.
    'cache-control': 'no-store',
    ...(config.publicUrl.startsWith('https:') ? { 'strict-transport-security': 'max-age=31536000' } : {}),
  }
}

/** Sent with every built asset: their names change with their content, so they never need revalidating. */
const ASSET_HEADERS = {
  'x-content-type-options': 'nosniff',
  'cross-origin-resource-policy': 'same-origin',
}

interface ErrorText {
  title: string
  message: string
}

const ERROR_TEXTS: Record<number, ErrorText> = {
  400: { title: 'This address is not valid', message: 'Check the link you were given and try again.' },
  403: { title: 'Not allowed', message: 'This page cannot be opened with this link.' },
  404: {
    title: 'Nothing here',
    message: 'The link may be mistyped, or what it pointed to has been deleted.',
  },
  410: {
    title: 'This link is no longer available',
    message: 'It was turned off or has expired. Ask the person who sent it for a new one.',
  },
  429: { title: 'Too many requests', message: 'Wait a little, then try again.' },
  500: {
    title: 'Something went wrong',
    message: 'This is a fault of the server, not of the link. Try again later.',
  },
  503: {
    title: 'Temporarily unavailable',
    message:
      'The server cannot reach its storage at the moment. This is not a fault of the link: try again in a minute.',
  },
}

/** What an error page says for a code of the catalogue whose status alone would say too little. */
const CODE_TEXTS: Record<string, ErrorText> = {
  cross_site_request: {
    title: 'This form came from another site',
    message:
      'Coffer takes forms only from its own pages. Open the page on this server and send the form from there.',
  },
  form_expired: {
    title: 'This form has expired',
    message:
      'It was opened in a session that has since ended, or too long ago. Go back, reload the page, and send it again.',
  },
}

/** The icon of a notice: a circle with an exclamation mark. Decorative. */
const NOTICE_ICON = html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><circle cx="12" cy="12" r="10" fill="none" stroke="currentColor" stroke-width="1.8"/><path d="M12 7v6" stroke="currentColor" stroke-width="2" stroke-linecap="round"/><circle cx="12" cy="16.5" r="1.2" fill="currentColor"/></svg>`

export class Web {
  readonly layout: Layout
  /** The headers of every page: for pages sent by something other than `send` (the OAuth server's). */
  readonly pageHeaders: Readonly<Record<string, string>>

  constructor(layout: Layout, config: Config) {
    this.layout = layout
    this.pageHeaders = pageHeaders(config)
  }

  /**
   * Answers with a page, its security headers replacing any set before (a download's sandbox, say).
   * `formTarget` is another origin (or scheme) the page's forms may end up at: CSP's `form-action` also
   * governs the redirects that follow a form, such as the consent page's back to the OAuth client.
   */
  send(reply: FastifyReply, status: number, page: Page, options: { formTarget?: string } = {}): FastifyReply {
    const html = this.layout.render(page)
    if (!options.formTarget) return this.sendRendered(reply, status, html)
    const csp = PAGE_CSP.replace("form-action 'self'", `form-action 'self' ${options.formTarget}`)
    return reply
      .status(status)
      .headers({ ...this.pageHeaders, 'content-security-policy': csp })
      .send(html)
  }

  /** `send` for a page already rendered by `layout` (and kept, say, in a PageCache). */
  sendRendered(reply: FastifyReply, status: number, html: string | Buffer): FastifyReply {
    return reply.status(status).headers(this.pageHeaders).send(html)
  }

  /** A notice in a card: what error pages and pages such as "link expired" show. */
  notice(options: { title: string; message: string; status?: number; extra?: string }): string {
    return html`<section class="card narrow" aria-labelledby="notice-title"><div class="card-body notice">!${NOTICE_ICON}<div>
!${options.status ? html`<p class="status-code">Error ${options.status}</p>` : ''}
<h1 id="notice-title">${options.title}</h1>
<p class="muted">${options.message}</p>
!${options.extra ?? ''}
</div></div></section>`
  }

  /** The words of an error page for a code of the error catalogue, when it has words of its own. */
  errorText(code: string): Partial<ErrorText> | undefined {
    return CODE_TEXTS[code]
  }

  /** An error page for `status`, which says nothing of what was asked for. */
  sendError(reply: FastifyReply, status: number, text?: Partial<ErrorText>): FastifyReply {
    const known = ERROR_TEXTS[status] ?? ERROR_TEXTS[status >= 500 ? 500 : 400]
    const { title, message } = { ...known, ...text } as ErrorText
    return this.send(reply, status, { title, main: this.notice({ title, message, status }) })
  }
}

/** Builds the assets if they are missing or stale, serves them, and returns what page routes answer with. */
export async function registerWeb(app: FastifyInstance, config: Config): Promise<Web> {
  const manifest = await ensureAssets()
  await app.register(fastifyStatic, {
    root: ASSETS_DIR,
    prefix: ASSETS_PATH,
    decorateReply: false,
    index: false,
    preCompressed: true,
    immutable: true,
    maxAge: '365d',
    setHeaders: (reply) => reply.headers(ASSET_HEADERS),
  })
  return new Web(new Layout(manifest), config)
}
