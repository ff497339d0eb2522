// What every request passes before its handler, in one hook and in this order: its credential is identified,
// it is counted against its rate limit (a client over its limit gets a 429 even with a bad credential), then
// it is refused if unauthenticated or lacking a scope. What each route needs is worked out once, when the
// route is added, so a request pays for one hook and no lookups.
import type { FastifyInstance } from 'fastify'
import type { Config } from '../config.ts'
import {
  type Authenticator,
  authorize,
  bearerChallenge,
  decorateAuth,
  identify,
  routeSecurity,
  type SecurityRequirement,
} from './auth.ts'
import { createRateLimiter, isExemptRoute } from './rate-limit.ts'

interface RouteGuard {
  /** The route's security list; undefined for a public route. */
  security: SecurityRequirement[] | undefined
  limited: boolean
}

declare module 'fastify' {
  interface FastifyContextConfig {
    guard?: RouteGuard
  }
}

/** Unknown paths (the 404 handler) are public and counted per address. */
const NOT_FOUND: RouteGuard = { security: undefined, limited: true }

export async function registerGuard(
  app: FastifyInstance,
  deps: { authenticate: Authenticator; config: Config; resourceMetadataUrl: string },
): Promise<void> {
  const challenge = bearerChallenge(deps.resourceMetadataUrl)
  decorateAuth(app)
  const limit = await createRateLimiter(app, deps.config)
  app.addHook('onRoute', (route) => {
    const guard: RouteGuard = { security: routeSecurity(route.schema), limited: !isExemptRoute(route) }
    route.config = { ...route.config, guard }
  })
  app.addHook('onRequest', async (request, reply) => {
    const { security, limited } = request.routeOptions.config?.guard ?? NOT_FOUND
    if (security) await identify(request, deps.authenticate)
    if (limited) await limit(request, reply)
    if (security) authorize(request, reply, security, challenge)
  })
}
