// What the OAuth authorization server brings to the application: its endpoints, metadata and pages, the tokens
// it issues for the API and for MCP, and the account's page of the applications it connected.
import type { Module } from '../../module.ts'
import { sessionCookieName } from '../accounts/web-sessions.ts'
import { AccessTokensService } from './access-tokens.service.ts'
import {
  type AuthorizationServer,
  createAuthorizationServer,
  type ProviderPages,
} from './authorization-server.ts'
import { connectedAppsRoutes } from './connected-apps.routes.ts'
import { ConnectedAppsService } from './connected-apps.service.ts'
import { oauthRoutes } from './oauth.routes.ts'
import { OauthRecordsRepository } from './oauth-records.repository.ts'

declare module '../../module.ts' {
  interface Repositories {
    oauthRecords: OauthRecordsRepository
  }
  interface Services {
    /** OAuth access tokens for the API (PUBLIC_URL/api/v1). */
    accessTokens: AccessTokensService
    /** OAuth access tokens for the MCP server (PUBLIC_URL/mcp): a token is for one of them only. */
    mcpAccessTokens: AccessTokensService
    connectedApps: ConnectedAppsService
    /** The OAuth authorization server, its pages drawn by `pages` (oauth.routes.ts). */
    authorizationServer(pages: ProviderPages): Promise<AuthorizationServer>
  }
}

export const oauthModule: Module = {
  pageRoutes: [oauthRoutes, connectedAppsRoutes],
  repositories: (db) => ({ oauthRecords: new OauthRecordsRepository(db) }),
  wire: ({ config, urls, serverSecrets, db, audit }, { repositories, services }) => {
    const records = repositories.oauthRecords
    const connectedApps = new ConnectedAppsService({
      records,
      resources: [urls.apiBase, urls.mcp],
      transaction: db.transaction,
      audit,
    })
    return {
      services: {
        accessTokens: new AccessTokensService({ records, resource: urls.apiBase }),
        mcpAccessTokens: new AccessTokensService({ records, resource: urls.mcp }),
        connectedApps,
        authorizationServer: (pages) =>
          createAuthorizationServer({
            issuer: urls.issuer,
            resources: { api: urls.apiBase, mcp: urls.mcp },
            records,
            grantEnds: connectedApps,
            accounts: repositories.accounts,
            sessions: services.sessions,
            sessionCookie: sessionCookieName(config.publicUrl),
            secret: (name, generate) => serverSecrets.getOrCreate(name, generate),
            pages,
            trustProxy: config.trustProxy !== false,
          }),
      },
    }
  },
  purges: (_platform, { repositories }) => ({
    'OAuth records': () => repositories.oauthRecords.deleteExpired(),
  }),
}
