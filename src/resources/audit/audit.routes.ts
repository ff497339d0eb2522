// The account's audit log on the API: GET /audit, newest first, filtered by kind and time.
import { Type } from 'typebox'
import type { Routes } from '../../module.ts'
import { invalid } from '../../platform/errors.ts'
import { accountOf, requireScopes } from '../../platform/http/auth.ts'
import { ERROR_RESPONSES, extensionOperation, List, PageQuery } from '../../platform/http/schemas.ts'
import { AUDIT_KIND_FILTERS, serializeAuditEntry } from './audit.schemas.ts'

const AuditQuery = Type.Object(
  {
    ...PageQuery(25),
    kind: Type.Optional(
      Type.Union(
        AUDIT_KIND_FILTERS.map((kind) => Type.Literal(kind)),
        {
          description: 'Only entries of this kind, or of this family of kinds (`share` for every `share.*`).',
        },
      ),
    ),
    since: Type.Optional(
      Type.String({ format: 'date-time', description: 'Only entries from this time on.' }),
    ),
    until: Type.Optional(Type.String({ format: 'date-time', description: 'Only entries before this time.' })),
  },
  { additionalProperties: false },
)

/** A query's date-time as epoch ms; a 400 naming the parameter when no calendar has it. */
export function timeOf(value: string | undefined, parameter: string): number | undefined {
  if (value === undefined) return undefined
  const ms = Date.parse(value)
  if (Number.isNaN(ms)) throw invalid(`The query parameter "${parameter}" must be an ISO 8601 date-time.`)
  return ms
}

export const auditRoutes: Routes = async (app, { services }) => {
  const { audit } = services
  app.get(
    '/audit',
    {
      schema: {
        tags: ['audit'],
        operationId: 'listAuditEntries',
        summary: 'List the account’s audit log',
        ...extensionOperation(
          'Who did what to the account, newest first: sign-ins (and refused ones), passwords, API keys, applications allowed and revoked, share and folder links, files deleted and restored, file requests, webhooks, and what admins did to it. Each entry names who did it (the account in the app, a key by its name, an application, an admin, the server) and from which address. Kept for `AUDIT_RETENTION_DAYS` (365 by default). No entry holds a secret.',
        ),
        security: requireScopes(['audit:read']),
        querystring: AuditQuery,
        response: { 200: List(Type.Ref('AuditEntry')), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { cursor, limit = 25, kind } = request.query
      const filter = {
        accountId: accountOf(request),
        kind,
        since: timeOf(request.query.since, 'since'),
        until: timeOf(request.query.until, 'until'),
      }
      const page = await audit.page(filter, cursor, limit)
      return { data: page.items.map(serializeAuditEntry), pagination: { nextCursor: page.nextCursor } }
    },
  )
}
