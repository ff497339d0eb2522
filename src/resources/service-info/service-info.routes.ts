// The meta surface: the capability index and the OpenAPI document under /api/v1, the API reference page,
// and the liveness and readiness probes. None of them needs a credential.
import { Type } from 'typebox'
import type { Routes } from '../../module.ts'
import { AppError } from '../../platform/errors.ts'
import { API_BASE_PATH, OAUTH_METADATA_PATH } from '../../platform/public-urls.ts'
import { type CapabilityIndex, CapabilityIndexSchema, capabilityIndex } from './capabilities.ts'
import { docsPage, type OpenApiDocument } from './docs-page.ts'

const NO_STORE = 'no-store'

export const serviceInfoRoutes: Routes = async (app, { services, config, urls, web }) => {
  // Both depend on every route of the app, so they are built on first use, once all are registered.
  let index: CapabilityIndex | undefined
  let docs: string | undefined

  app.get(
    `${API_BASE_PATH}/`,
    {
      schema: {
        tags: ['index'],
        operationId: 'getCapabilities',
        summary: 'Capability index',
        description:
          'Needs no credential (one sent anyway is ignored). Lists links to the OpenAPI document and this reference, the accepted credentials, the scopes, the limits this server enforces, and the blob API address upload clients need.',
        security: [],
        // Counted against the caller's address like any request, so it too can be refused with a 429.
        response: { 200: CapabilityIndexSchema, 429: Type.Ref('Error'), default: Type.Ref('Error') },
      },
    },
    async () => {
      // Once an account exists, setup is never pending again: the index is then made once.
      if (index) return index
      const setupPending = await services.setup.pending()
      const made = capabilityIndex(config, urls, {
        oauth: app.hasRoute({ method: 'GET', url: OAUTH_METADATA_PATH }),
        jsonBodyBytes: app.initialConfig.bodyLimit ?? 1024 * 1024,
        setupPending,
      })
      if (!setupPending) index = made
      return made
    },
  )

  app.get(`${API_BASE_PATH}/openapi.json`, { schema: { hide: true } }, async (_request, reply) =>
    reply.type('application/json; charset=utf-8').send(app.swagger()),
  )

  // A page like any other (its failures pages too), rendered in the layout once and then served as it is.
  app.get('/docs', { config: { page: true }, schema: { hide: true } }, async (_request, reply) => {
    docs ??= web.layout.render(docsPage(app.swagger() as unknown as OpenApiDocument))
    return web.sendRendered(reply, 200, docs)
  })

  // Liveness: the process answers. It checks no dependency, so a database outage does not get every
  // process restarted; readiness takes the process out of the load balancer instead.
  app.get(
    '/healthz',
    {
      schema: {
        hide: true,
        response: { 200: Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false }) },
      },
    },
    async (_request, reply) => reply.header('cache-control', NO_STORE).send({ status: 'ok' as const }),
  )

  app.get(
    '/readyz',
    {
      schema: {
        hide: true,
        response: {
          200: Type.Object(
            {
              status: Type.Literal('ready'),
              checks: Type.Object(
                { database: Type.Literal('ok'), blobStore: Type.Literal('ok') },
                { additionalProperties: false },
              ),
            },
            { additionalProperties: false },
          ),
        },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', NO_STORE)
      const readiness = await services.health.readiness()
      if (readiness.draining) throw new AppError('unavailable', 'Not ready: shutting down.')
      if (!readiness.ready) {
        request.log.warn({ failures: readiness.failures }, 'not ready')
        const failed = Object.entries(readiness.checks)
          .filter(([, state]) => state === 'failed')
          .map(([name]) => name)
        throw new AppError('unavailable', `Not ready: ${failed.join(' and ')} unavailable.`)
      }
      return { status: 'ready' as const, checks: { database: 'ok' as const, blobStore: 'ok' as const } }
    },
  )
}
