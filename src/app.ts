// Assembles the Fastify application from its parts. Used by the server, the tests and the benchmarks.
import { randomBytes } from 'node:crypto'
import cookie from '@fastify/cookie'
import csrfProtection from '@fastify/csrf-protection'
import swagger from '@fastify/swagger'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyInstance } from 'fastify'
import { accountPagesRoutes } from './accounts/account-pages.routes.ts'
import { csrfUserInfo, WebSessions } from './accounts/web-sessions.ts'
import { analyticsRoutes } from './analytics/analytics.routes.ts'
import {
  AccountDailyAnalyticsSchema,
  AggregateAnalyticsSchema,
  ShareAnalyticsSchema,
  ShareDailyAnalyticsSchema,
  TopSharesSchema,
} from './analytics/analytics.schemas.ts'
import { analyticsAppRoutes } from './analytics/analytics-app.routes.ts'
import { API_KEY_PREFIX } from './auth/secrets.ts'
import type { BlobStore } from './blob/blob-store.ts'
import type { Config } from './config.ts'
import type { Db } from './db/database.ts'
import { ServerSecrets } from './db/server-secrets.ts'
import { AppError } from './errors.ts'
import { downloadHandoff } from './files/download.ts'
import { filesRoutes } from './files/files.routes.ts'
import { FileSchema, FileShareSummarySchema, FileSummarySchema } from './files/files.schemas.ts'
import { filesAppRoutes } from './files/files-app.routes.ts'
import { zipRoutes } from './files/zip/zip.routes.ts'
import { foldersRoutes } from './folders/folders.routes.ts'
import { FolderSchema } from './folders/folders.schemas.ts'
import { foldersAppRoutes } from './folders/folders-app.routes.ts'
import { registerBaselineHeaders } from './http/baseline-headers.ts'
import { fastifyTrustProxy } from './http/client-address.ts'
import { serverWithTimeouts } from './http/connections.ts'
import { clientError, frameworkError, MAX_PARAM_LENGTH, registerErrorHandling } from './http/errors.ts'
import { registerGuard } from './http/guard.ts'
import { InProcessCredentials } from './http/in-process-credentials.ts'
import { Metrics } from './http/metrics.ts'
import { registerRateLimitStores } from './http/rate-limit.ts'
import { loggedRequest, requestLogger } from './http/request-logger.ts'
import { registerResponseBatching } from './http/response-batching.ts'
import { registerSameOriginCheck } from './http/same-origin.ts'
import { ErrorSchema } from './http/schemas.ts'
import { buildSerializer } from './http/serialization.ts'
import { parseJsonStrictly, strictQuerystring } from './http/strict-text.ts'
import { buildValidator, refuseUnknownQueryParameters } from './http/validation.ts'
import { mcpRoutes } from './mcp/mcp.routes.ts'
import { metaRoutes } from './meta/meta.routes.ts'
import { openApiOptions } from './meta/openapi.ts'
import { oauthRoutes } from './oauth/oauth.routes.ts'
import { API_BASE_PATH, BLOB_API_PATH } from './public-urls.ts'
import { publicRequestsRoutes } from './requests/public-requests.routes.ts'
import { PublicFileRequestSchema } from './requests/public-requests.schemas.ts'
import { requestPagesRoutes } from './requests/request-pages.routes.ts'
import { requestsRoutes } from './requests/requests.routes.ts'
import {
  FileRequestSchema,
  FileRequestWithCountSchema,
  RequestLimitsSchema,
  RequestStateSchema,
  SubmissionSchema,
} from './requests/requests.schemas.ts'
import { requestsAppRoutes } from './requests/requests-app.routes.ts'
import type { Services } from './routes.ts'
import { sharePagesRoutes } from './shares/share-pages.routes.ts'
import { sharesRoutes } from './shares/shares.routes.ts'
import { ShareSchema, ShareStateSchema, ShareWithFileSchema } from './shares/shares.schemas.ts'
import { sharesAppRoutes } from './shares/shares-app.routes.ts'
import { blobEndpointRoutes } from './uploads/blob-endpoint/blob-endpoint.routes.ts'
import { uploadsRoutes } from './uploads/uploads.routes.ts'
import { uploadsAppRoutes } from './uploads/uploads-app.routes.ts'
import { registerWeb } from './web/web.ts'
import { webhooksRoutes } from './webhooks/webhooks.routes.ts'
import { DeliverySchema, WebhookSchema, WebhookWithSecretSchema } from './webhooks/webhooks.schemas.ts'
import { webhooksAppRoutes } from './webhooks/webhooks-app.routes.ts'
import { type Jobs, wire } from './wiring.ts'

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
  const app = Fastify({
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

  // Operators' figures, when asked for (METRICS_PORT or METRICS_TOKEN): the first hook, so a request's time
  // includes all the others.
  const { metrics: metricsConfig } = deps.config
  const metrics =
    metricsConfig.port !== undefined || metricsConfig.tokenHash !== undefined
      ? new Metrics({ poolUse: deps.db.poolUse })
      : undefined
  metrics?.measureRequests(app, (route) => route.startsWith(BLOB_API_PATH))

  // The API speaks JSON only; other bodies get 415 (routes that take raw bytes add their own parser).
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
  // Schemas referenced by name ($ref) from routes; they become components of the OpenAPI document.
  for (const schema of [
    ErrorSchema,
    FolderSchema,
    FileSummarySchema,
    ShareStateSchema,
    RequestStateSchema,
    FileShareSummarySchema,
    FileSchema,
    ShareSchema,
    ShareWithFileSchema,
    ShareAnalyticsSchema,
    AggregateAnalyticsSchema,
    ShareDailyAnalyticsSchema,
    AccountDailyAnalyticsSchema,
    TopSharesSchema,
    FileRequestSchema,
    FileRequestWithCountSchema,
    RequestLimitsSchema,
    PublicFileRequestSchema,
    SubmissionSchema,
    WebhookSchema,
    WebhookWithSecretSchema,
    DeliverySchema,
  ]) {
    app.addSchema(schema)
  }
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
  const { services, jobs, urls, authorizationServer, startJobs, stopJobs } = wire({
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
  // The CSRF token of every form of the account and OAuth pages: a secret in its own cookie, and a token
  // bound to the browser's session (`webSession`, set by those pages' pre-handler) in the form.
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

  // The MCP server's tools call the API in this process as the principal of their request.
  const inProcess = new InProcessCredentials()
  await registerGuard(app, {
    config: deps.config,
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

  metrics?.serve(app, metricsConfig)

  const webSessions = new WebSessions(app, services.sessions, deps.config.publicUrl)
  const routeDeps = { services, config: deps.config, urls, web, authorizationServer, webSessions, inProcess }
  await app.register(metaRoutes, routeDeps)
  await app.register(mcpRoutes, routeDeps)
  await app.register(accountPagesRoutes, routeDeps)
  await app.register(oauthRoutes, routeDeps)
  await app.register(sharePagesRoutes, routeDeps)
  await app.register(requestPagesRoutes, routeDeps)
  await app.register(analyticsAppRoutes, routeDeps)
  await app.register(requestsAppRoutes, routeDeps)
  await app.register(filesAppRoutes, routeDeps)
  await app.register(zipRoutes, routeDeps)
  await app.register(uploadsAppRoutes, routeDeps)
  await app.register(foldersAppRoutes, routeDeps)
  await app.register(sharesAppRoutes, routeDeps)
  await app.register(webhooksAppRoutes, routeDeps)
  for (const routes of [
    filesRoutes,
    uploadsRoutes,
    foldersRoutes,
    sharesRoutes,
    requestsRoutes,
    publicRequestsRoutes,
    analyticsRoutes,
    webhooksRoutes,
  ]) {
    await app.register(routes, { prefix: '/api/v1', ...routeDeps })
  }
  await app.register(blobEndpointRoutes, { prefix: BLOB_API_PATH, ...routeDeps })

  return app as unknown as App
}
