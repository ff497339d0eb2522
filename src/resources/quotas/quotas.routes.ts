// The account's usage against its quota: GET /usage.
import { Type } from 'typebox'
import type { Routes } from '../../module.ts'
import { accountOf, requireScopes } from '../../platform/http/auth.ts'
import { Data, ERROR_RESPONSES, extensionOperation } from '../../platform/http/schemas.ts'
import { serializeUsage } from './quotas.schemas.ts'

export const quotasRoutes: Routes = async (app, { services }) => {
  const { quotas } = services
  app.get(
    '/usage',
    {
      schema: {
        tags: ['usage'],
        operationId: 'getUsage',
        summary: 'Get the account’s storage usage and quota',
        ...extensionOperation(
          'What the account stores (files and bytes, the trash included, since deleted files count until they are purged), its quota (its own, set by an admin, or the server’s default `DEFAULT_QUOTA_BYTES`; null: unlimited), the largest file it may upload, and what is left. Read from one row kept with every change of the account’s files, so it is cheap whatever their number.',
        ),
        security: requireScopes(['files:read']),
        response: { 200: Data(Type.Ref('Usage')), ...ERROR_RESPONSES },
      },
    },
    async (request) => ({ data: serializeUsage(await quotas.usage(accountOf(request))) }),
  )
}
