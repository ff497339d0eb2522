// Every resource of the application, in order: app.ts adds their schemas and registers their routes in this
// order (the API's operations and the OpenAPI document's paths follow it). A new resource is a folder with its
// module (`<resource>.module.ts`), a line here, and its services in wiring.ts.
import { accountsModule } from './accounts/accounts.module.ts'
import { analyticsModule } from './analytics/analytics.module.ts'
import { filesModule } from './files/files.module.ts'
import { foldersModule } from './folders/folders.module.ts'
import { mcpModule } from './mcp/mcp.module.ts'
import { metaModule } from './meta/meta.module.ts'
import { oauthModule } from './oauth/oauth.module.ts'
import { requestsModule } from './requests/requests.module.ts'
import type { Module } from './routes.ts'
import { sharesModule } from './shares/shares.module.ts'
import { uploadsModule } from './uploads/uploads.module.ts'
import { webhooksModule } from './webhooks/webhooks.module.ts'

export const modules: readonly Module[] = [
  metaModule,
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
