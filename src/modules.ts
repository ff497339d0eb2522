// Every resource of the application, in order: app.ts adds their schemas and registers their routes in this
// order (the API's operations and the OpenAPI document's paths follow it). A new resource is a folder with its
// module (`<resource>.module.ts`), a line here, and its services in wiring.ts.

import { mcpModule } from './clients/mcp/mcp.module.ts'
import { accountsModule } from './resources/accounts/accounts.module.ts'
import { analyticsModule } from './resources/analytics/analytics.module.ts'
import { filesModule } from './resources/files/files.module.ts'
import { foldersModule } from './resources/folders/folders.module.ts'
import { oauthModule } from './resources/oauth/oauth.module.ts'
import { requestsModule } from './resources/requests/requests.module.ts'
import { serviceInfoModule } from './resources/service-info/service-info.module.ts'
import { sharesModule } from './resources/shares/shares.module.ts'
import { uploadsModule } from './resources/uploads/uploads.module.ts'
import { webhooksModule } from './resources/webhooks/webhooks.module.ts'
import type { Module } from './routes.ts'

export const modules: readonly Module[] = [
  serviceInfoModule,
  mcpModule,
  accountsModule,
  oauthModule,
  foldersModule,
  filesModule,
  sharesModule,
  requestsModule,
  uploadsModule,
  analyticsModule,
  webhooksModule,
]
