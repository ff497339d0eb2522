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

/**
 * The protected resources (OAuth's sense, RFC 8707): the API, and the MCP server. Each takes its own access
 * tokens (their audience) and points to its own metadata when it refuses one; API keys open both.
 */
export type ProtectedResource = 'api' | 'mcp'

interface RouteGuard {
  /** The route's security list; undefined for a public route. */
  security: SecurityRequirement[] | undefined
  limited: boolean
  resource: ProtectedResource
}

declare module 'fastify' {
  interface FastifyContextConfig {
    guard?: RouteGuard
    /** The protected resource a route belongs to; the API when not said. */
    protectedResource?: ProtectedResource
  }
}

/** Unknown paths (the 404 handler) are public and counted per address. */
const NOT_FOUND: RouteGuard = { security: undefined, limited: true, resource: 'api' }

export async function registerGuard(
  app: FastifyInstance,
  deps: {
    config: Config
    resources: Record<ProtectedResource, { authenticate: Authenticator; resourceMetadataUrl: string }>
  },
): Promise<void> {
  const challenges = {
    api: bearerChallenge(deps.resources.api.resourceMetadataUrl),
    mcp: bearerChallenge(deps.resources.mcp.resourceMetadataUrl),
  }
  decorateAuth(app)
  const limit = await createRateLimiter(app, deps.config)
  app.addHook('onRoute', (route) => {
    const guard: RouteGuard = {
      security: routeSecurity(route.schema),
      limited: !isExemptRoute(route),
      resource: route.config?.protectedResource ?? 'api',
    }
    route.config = { ...route.config, guard }
  })
  app.addHook('onRequest', async (request, reply) => {
    const { security, limited, resource } = request.routeOptions.config?.guard ?? NOT_FOUND
    if (security) await identify(request, deps.resources[resource].authenticate)
    if (limited) await limit(request, reply)
    if (security) authorize(request, reply, security, challenges[resource])
  })
}
