// Assembles the Fastify application from its parts. Used by the server, the tests and the benchmarks.
import { randomBytes } from 'node:crypto'
import cookie from '@fastify/cookie'
import csrfProtection from '@fastify/csrf-protection'
import swagger from '@fastify/swagger'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyInstance } from 'fastify'
import type { Jobs, RouteDeps, Services } from './module.ts'
import { modules } from './modules.ts'
import { API_KEY_PREFIX } from './platform/auth/secrets.ts'
import type { BlobStore } from './platform/blob/blob-store.ts'
import type { Config } from './platform/config.ts'
import type { Db } from './platform/db/database.ts'
import { ServerSecrets } from './platform/db/server-secrets.ts'
import { AppError } from './platform/errors.ts'
import { registerAuditContext } from './platform/http/audit-context.ts'
import { registerBaselineHeaders } from './platform/http/baseline-headers.ts'
import { fastifyTrustProxy } from './platform/http/client-address.ts'
import { serverWithTimeouts } from './platform/http/connections.ts'
import {
  clientError,
  frameworkError,
  MAX_PARAM_LENGTH,
  registerErrorHandling,
} from './platform/http/errors.ts'
import { registerGuard } from './platform/http/guard.ts'
import { InProcessCredentials } from './platform/http/in-process-credentials.ts'
import { Metrics } from './platform/http/metrics.ts'
import { registerRateLimitStores } from './platform/http/rate-limit.ts'
import { loggedRequest, requestLogger } from './platform/http/request-logger.ts'
import { registerResponseBatching } from './platform/http/response-batching.ts'
import { registerSameOriginCheck } from './platform/http/same-origin.ts'
import { ErrorSchema } from './platform/http/schemas.ts'
import { buildSerializer } from './platform/http/serialization.ts'
import { parseJsonStrictly, strictQuerystring } from './platform/http/strict-text.ts'
import { buildValidator, refuseUnknownQueryParameters } from './platform/http/validation.ts'
import type { PublicUrls } from './platform/public-urls.ts'
import { API_BASE_PATH, BLOB_API_PATH } from './platform/public-urls.ts'
import { registerWeb } from './platform/web/web.ts'
import { csrfUserInfo, WebSessions } from './resources/accounts/web-sessions.ts'
import { downloadHandoff } from './resources/files/download.ts'
import { openApiOptions } from './resources/service-info/openapi.ts'
import { wire } from './wiring.ts'

export interface AppDeps {
  config: Config
  db: Db
  blobs: BlobStore
  /** Pino options or false; tests pass a stream to capture logs. */
  logger?: boolean | object
}

export type App = FastifyInstance & { services: Services; jobs: Jobs }

/** Paths of secrets in logged requests; the request serializer never logs headers or bodies anyway. */
const REDACT = ['req.headers.authorization', 'req.headers.cookie', 'req.body', 'res.headers["set-cookie"]']

export async function buildApp(deps: AppDeps): Promise<App> {
  const app = newFastify(deps)

  // Operators' figures, when asked for (METRICS_PORT or METRICS_TOKEN): the first hook, so a request's time
  // includes all the others.
  const { metrics: metricsConfig } = deps.config
  const metrics =
    metricsConfig.port !== undefined || metricsConfig.tokenHash !== undefined
      ? new Metrics({ poolUse: deps.db.poolUse })
      : undefined
  metrics?.measureRequests(app, (route) => route.startsWith(BLOB_API_PATH))

  acceptJsonOnly(app)
  await registerAuditContext(app)
  // Schemas referenced by name ($ref) from routes; they become components of the OpenAPI document.
  app.addSchema(ErrorSchema)
  for (const schema of modules.flatMap((module) => module.schemas ?? [])) app.addSchema(schema)
  const web = await registerWeb(app, deps.config)
  registerErrorHandling(app, {
    sendError: (reply, status, code, message) =>
      web.sendError(
        reply,
        status,
        message === undefined
          ? code && web.errorText(code)
          : { title: 'This request could not be used', message: `${message} Go back and try again.` },
      ),
    // Everything outside the API and the blob endpoint is for people.
    isPagePath: (path) => !path.startsWith(API_BASE_PATH) && !path.startsWith(BLOB_API_PATH),
  })
  registerResponseBatching(app)
  registerBaselineHeaders(app)
  registerSameOriginCheck(app, deps.config.publicUrl)
  refuseUnknownQueryParameters(app)

  deps.db.reportTo(app.log)
  // Opened before the services are built: those that count attempts (sign-in, share passwords) get the same
  // stores as the request limit of the guard, shared by every process through Redis when it is configured.
  const attempts = await registerRateLimitStores(app, deps.config)
  const { services, jobs, urls, startJobs, stopJobs } = wire({
    ...deps,
    attempts,
    metrics,
  })
  app.decorate('services', services)
  app.decorate('jobs', jobs)
  // Read by every download (files/download.ts); refuses DOWNLOAD_ACCEL_REDIRECT with a store nginx cannot serve.
  app.decorate('downloadHandoff', downloadHandoff(deps.config, deps.blobs))
  app.addHook('onReady', async () => startJobs(app.log))
  app.addHook('onClose', async () => stopJobs())

  await app.register(swagger, openApiOptions(deps.config, urls))
  // Cookies for the pages (the passes of protected share links), parsed only by the routes that read one:
  // the API never does, and parsing on every request would cost every request.
  await app.register(cookie, { hook: false })
  app.decorateRequest('webSession', undefined)
  await registerCsrfProtection(app, deps)
  const inProcess = await registerCredentials(app, deps.config, services, urls)
  metrics?.serve(app, metricsConfig)

  const webSessions = new WebSessions(app, services.sessions, deps.config.publicUrl)
  const routeDeps = { services, config: deps.config, urls, web, webSessions, inProcess }
  await registerModules(app, routeDeps)

  return app as unknown as App
}

/** Fastify with the server's logger, timeouts, router bounds, errors and schema compilers. */
function newFastify(deps: AppDeps) {
  return Fastify({
    logger:
      deps.logger === false
        ? false
        : {
            level: deps.config.logLevel,
            redact: REDACT,
            serializers: { req: loggedRequest },
            ...(typeof deps.logger === 'object' ? deps.logger : {}),
          },
    childLoggerFactory: requestLogger,
    trustProxy: fastifyTrustProxy(deps.config.trustProxy),
    serverFactory: serverWithTimeouts(deps.config.timeouts),
    bodyLimit: 1024 * 1024,
    // Path parameters longer than the bounds must reach validation (400), not the router's 414.
    routerOptions: {
      ignoreTrailingSlash: true,
      maxParamLength: MAX_PARAM_LENGTH,
      querystringParser: strictQuerystring,
    },
    frameworkErrors: frameworkError,
    clientErrorHandler: clientError,
    // The factory's declared type is tied to Fastify's own Ajv wrapper; ours returns a plain compiler.
    schemaController: {
      compilersFactory: {
        buildValidator: buildValidator as never,
        buildSerializer: buildSerializer as never,
      },
    },
  }).withTypeProvider<TypeBoxTypeProvider>()
}

type AppBeingBuilt = ReturnType<typeof newFastify>

/** The API speaks JSON only, uncompressed. */
function acceptJsonOnly(app: AppBeingBuilt): void {
  // Other bodies get 415 (routes that take raw bytes add their own parser).
  app.removeContentTypeParser('text/plain')
  parseJsonStrictly(app)
  // No JSON body is decompressed: a compressed one would be refused as "not JSON", which misleads. The blob
  // endpoint stores bytes as sent, and answers in its own protocol's errors.
  app.addHook('preParsing', (request, _reply, payload, done) => {
    const encoding = request.headers['content-encoding']
    const plain = encoding === undefined || encoding.trim().toLowerCase() === 'identity'
    if (plain || request.routeOptions.url?.startsWith(BLOB_API_PATH)) return done(null, payload)
    done(
      new AppError(
        'unsupported_media_type',
        'The request body is compressed (Content-Encoding); send it uncompressed.',
      ),
    )
  })
}

/**
 * The CSRF token of every form of the account and OAuth pages: a secret in its own cookie, and a token bound to
 * the browser's session (`webSession`, set by those pages' pre-handler) in the form.
 */
async function registerCsrfProtection(app: AppBeingBuilt, deps: AppDeps): Promise<void> {
  const secure = deps.config.publicUrl.startsWith('https:')
  await app.register(csrfProtection, {
    cookieKey: secure ? '__Host-coffer_csrf' : 'coffer_csrf',
    cookieOpts: { path: '/', httpOnly: true, sameSite: 'lax', secure },
    getUserInfo: csrfUserInfo,
    csrfOpts: {
      hmacKey: await new ServerSecrets(deps.db).getOrCreate('csrf-hmac-key', () =>
        randomBytes(32).toString('base64url'),
      ),
    },
  })
}

/**
 * Who may call the API and the MCP server: API keys, OAuth access tokens (each for one of the two), and the
 * MCP server's tools, which call the API in this process as the principal of their request.
 */
async function registerCredentials(
  app: AppBeingBuilt,
  config: Config,
  services: Services,
  urls: PublicUrls,
): Promise<InProcessCredentials> {
  const inProcess = new InProcessCredentials()
  await registerGuard(app, {
    config,
    resources: {
      api: {
        // API keys carry a prefix no OAuth token has.
        authenticate: async (bearer) =>
          inProcess.principalOf(bearer) ??
          (bearer.startsWith(API_KEY_PREFIX)
            ? services.apiKeys.authenticate(bearer)
            : services.accessTokens.authenticate(bearer)),
        resourceMetadataUrl: urls.protectedResourceMetadata,
      },
      mcp: {
        authenticate: (bearer) =>
          bearer.startsWith(API_KEY_PREFIX)
            ? services.apiKeys.authenticate(bearer)
            : services.mcpAccessTokens.authenticate(bearer),
        resourceMetadataUrl: urls.mcpResourceMetadata,
      },
    },
  })
  return inProcess
}

/** Each resource's pages, its API and its own paths (modules.ts), in the modules' order. */
async function registerModules(app: AppBeingBuilt, routeDeps: RouteDeps): Promise<void> {
  for (const routes of modules.flatMap((module) => module.pageRoutes ?? [])) {
    await app.register(routes, routeDeps)
  }
  for (const routes of modules.flatMap((module) => module.apiRoutes ?? [])) {
    await app.register(routes, { prefix: API_BASE_PATH, ...routeDeps })
  }
  for (const { prefix, routes } of modules.flatMap((module) => module.mounts ?? [])) {
    await app.register(routes, { prefix, ...routeDeps })
  }
}
