// What every resource's routes module receives, its shape, and the shape of what a resource brings to the
// application (its module). Kept apart from the composition root (wiring.ts, which builds these services), so
// that a route file depends on the services' types alone.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { TSchema } from 'typebox'
import type { Config } from './platform/config.ts'
import type { InProcessCredentials } from './platform/http/in-process-credentials.ts'
import type { PublicUrls } from './platform/public-urls.ts'
import type { Web } from './platform/web/web.ts'
import type { AccountsService } from './resources/accounts/accounts.service.ts'
import type { ApiKeysService } from './resources/accounts/api-keys.service.ts'
import type { PasswordResetService } from './resources/accounts/password-reset.service.ts'
import type { SessionsService } from './resources/accounts/sessions.service.ts'
import type { SetupService } from './resources/accounts/setup.service.ts'
import type { WebSessions } from './resources/accounts/web-sessions.ts'
import type { AnalyticsService } from './resources/analytics/analytics.service.ts'
import type { FilesService } from './resources/files/files.service.ts'
import type { TrashService } from './resources/files/trash.service.ts'
import type { FilesZipService } from './resources/files/zip/zip.service.ts'
import type { FoldersService } from './resources/folders/folders.service.ts'
import type { AccessTokensService } from './resources/oauth/access-tokens.service.ts'
import type { AuthorizationServer, ProviderPages } from './resources/oauth/authorization-server.ts'
import type { ConnectedAppsService } from './resources/oauth/connected-apps.service.ts'
import type { PublicRequestsService } from './resources/requests/public-requests.service.ts'
import type { RequestsService } from './resources/requests/requests.service.ts'
import type { HealthService } from './resources/service-info/health.service.ts'
import type { FolderSharesService } from './resources/shares/folder-shares.service.ts'
import type { PublicSharesService } from './resources/shares/public-shares.service.ts'
import type { SharesService } from './resources/shares/shares.service.ts'
import type { BlobEndpointService } from './resources/uploads/blob-endpoint/blob-endpoint.service.ts'
import type { UploadsService } from './resources/uploads/uploads.service.ts'
import type { WebhooksService } from './resources/webhooks/webhooks.service.ts'

/** The services routes call: one per resource, built by wiring.ts. */
export interface Services {
  accounts: AccountsService
  apiKeys: ApiKeysService
  sessions: SessionsService
  setup: SetupService
  /** OAuth access tokens for the API (PUBLIC_URL/api/v1). */
  accessTokens: AccessTokensService
  /** OAuth access tokens for the MCP server (PUBLIC_URL/mcp): a token is for one of them only. */
  mcpAccessTokens: AccessTokensService
  connectedApps: ConnectedAppsService
  folders: FoldersService
  files: FilesService
  /** Deleted files, until they go for good. */
  trash: TrashService
  /** Several files, or a folder, as one zip. */
  zips: FilesZipService
  shares: SharesService
  folderShares: FolderSharesService
  publicShares: PublicSharesService
  requests: RequestsService
  publicRequests: PublicRequestsService
  analytics: AnalyticsService
  uploads: UploadsService
  blobEndpoint: BlobEndpointService
  health: HealthService
  /** Webhook endpoints, their deliveries and test events. */
  webhooks: WebhooksService
  /** "Forgot your password?"; undefined without email (SMTP_URL), which it needs. */
  passwordReset: PasswordResetService | undefined
}

/** What every resource's routes receive. */
export interface RouteDeps {
  services: Services
  config: Config
  urls: PublicUrls
  /** The OAuth authorization server, its pages drawn by `pages` (oauth/oauth.routes.ts). */
  authorizationServer(pages: ProviderPages): Promise<AuthorizationServer>
  /** What pages answer with: the layout, their security headers, error pages (web/web.ts). */
  web: Web
  /** The signed-in browser: its session cookie, and the pre-handler of the pages that need one. */
  webSessions: WebSessions
  /** Credentials for calls to the API within this process, as a request's principal (the MCP server's). */
  inProcess: InProcessCredentials
}

/** The shape of every resource's routes module. */
export type Routes = FastifyPluginAsyncTypebox<RouteDeps>

/** The app as a resource's routes receive it (with its schemas' types): what their groups of routes take. */
export type RouteApp = Parameters<Routes>[0]

/**
 * What a resource brings to the application: its schemas and its routes. Each resource exports one
 * (`<resource>.module.ts`); modules.ts lists them in order, and app.ts registers them in that order.
 */
export interface Module {
  /** Schemas its routes reference by name ($ref): they become components of the OpenAPI document. */
  schemas?: readonly TSchema[]
  /** Its routes of the API, served under /api/v1. */
  apiRoutes?: readonly Routes[]
  /** Its pages, and the forms and endpoints those pages use. */
  pageRoutes?: readonly Routes[]
  /** Routes served under a path of their own (the blob endpoint, which speaks another protocol). */
  mounts?: readonly { prefix: string; routes: Routes }[]
}
