// What accounts bring to the application: the sign-in, setup, password and API-key pages.
import type { Module } from '../../routes.ts'
import { accountPagesRoutes } from './account-pages.routes.ts'

export const accountsModule: Module = { pageRoutes: [accountPagesRoutes] }
