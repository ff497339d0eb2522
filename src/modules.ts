// Every module of the application, from the bottom up: each builds on those before it and never on those after
// (the dependency rules of .dependency-cruiser.cjs read this order). wiring.ts builds them in this order, and
// app.ts adds their schemas and registers their routes in it (the API's operations and the OpenAPI document's
// paths follow it). A new resource is a folder with its module (`<resource>.module.ts`), a line here, and its
// migration.
import { mcpModule } from './clients/mcp/mcp.module.ts'
import type { Module } from './module.ts'
import { accountsModule } from './resources/accounts/accounts.module.ts'
import { adminModule } from './resources/admin/admin.module.ts'
import { analyticsModule } from './resources/analytics/analytics.module.ts'
import { auditModule } from './resources/audit/audit.module.ts'
import { filesModule } from './resources/files/files.module.ts'
import { foldersModule } from './resources/folders/folders.module.ts'
import { maintenanceModule } from './resources/maintenance/maintenance.module.ts'
import { oauthModule } from './resources/oauth/oauth.module.ts'
import { quotasModule } from './resources/quotas/quotas.module.ts'
import { requestsModule } from './resources/requests/requests.module.ts'
import { serviceInfoModule } from './resources/service-info/service-info.module.ts'
import { sharesModule } from './resources/shares/shares.module.ts'
import { ssoModule } from './resources/sso/sso.module.ts'
import { uploadsModule } from './resources/uploads/uploads.module.ts'
import { webhooksModule } from './resources/webhooks/webhooks.module.ts'

export const modules: readonly Module[] = [
  maintenanceModule,
  accountsModule,
  auditModule,
  oauthModule,
  ssoModule,
  webhooksModule,
  foldersModule,
  filesModule,
  quotasModule,
  sharesModule,
  uploadsModule,
  requestsModule,
  analyticsModule,
  adminModule,
  serviceInfoModule,
  mcpModule,
]
