// What the OAuth authorization server brings to the application: its endpoints, metadata and pages, and the
// account's page of the applications it connected.
import type { Module } from '../../routes.ts'
import { connectedAppsRoutes } from './connected-apps.routes.ts'
import { oauthRoutes } from './oauth.routes.ts'

export const oauthModule: Module = { pageRoutes: [oauthRoutes, connectedAppsRoutes] }
