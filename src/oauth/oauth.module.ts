// What the OAuth authorization server brings to the application: its endpoints, metadata and pages.
import type { Module } from '../routes.ts'
import { oauthRoutes } from './oauth.routes.ts'

export const oauthModule: Module = { pageRoutes: [oauthRoutes] }
