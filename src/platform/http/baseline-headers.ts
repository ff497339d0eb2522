// The headers every answer carries, whatever sends it: JSON of the API and the blob endpoint, errors, health
// checks, assets. Set before the handler runs, so that a page (web.ts) or a download (files/download.ts)
// replaces them with its own. No answer of Coffer is meant to be sniffed as another type or framed.
import type { FastifyInstance } from 'fastify'

export const BASELINE_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
} as const

export function registerBaselineHeaders(app: FastifyInstance): void {
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(BASELINE_HEADERS)
    done()
  })
}
