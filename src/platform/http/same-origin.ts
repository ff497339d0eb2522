// A second wall behind the CSRF token (issue 23): a request that changes something and carries cookies, which
// only a browser's pages send, must come from a page of this server. The browser says where a request comes
// from in Sec-Fetch-Site (every current browser), or else in Origin. The case this stops: a sibling site under
// the same registrable domain (another.example.org beside files.example.org) is "same-site", so the browser
// sends it Coffer's SameSite=Lax cookies with its forms; only the token stood in its way. A request with
// neither header (curl, a script) is left to the token; the API's own calls carry no cookies and pass.
import type { FastifyInstance } from 'fastify'
import { AppError } from '../errors.ts'

const CHANGES = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

export function registerSameOriginCheck(app: FastifyInstance, publicUrl: string): void {
  const origin = new URL(publicUrl).origin
  app.addHook('onRequest', (request, _reply, done) => {
    if (!CHANGES.has(request.method) || request.headers.cookie === undefined) return done()
    const site = request.headers['sec-fetch-site']
    const allowed =
      site !== undefined
        ? // 'none': the user's own doing (a bookmark), which no page can bring about.
          site === 'same-origin' || site === 'none'
        : request.headers.origin === undefined || request.headers.origin === origin
    if (allowed) return done()
    done(new AppError('cross_site_request', 'The request came from a page of another site.'))
  })
}
