// The admin's audit log (views in admin-audit.views.ts): GET /admin/audit, a page of 50 entries of every
// account, by family of kinds and by account; GET /admin/audit/export, what the same filter selects as JSON
// Lines, streamed a batch at a time however long the log. Admins only, as every admin page (the kit's guard).
import { Readable } from 'node:stream'
import { Type } from 'typebox'
import type { Routes } from '../../module.ts'
import { knownKind, serializeAuditEntry } from '../audit/audit.schemas.ts'
import type { AuditEntry, AuditFilter } from '../audit/audit.service.ts'
import { auditPage } from './admin-audit.views.ts'
import { adminKit } from './admin-kit.ts'
import { ADMIN_PATHS } from './admin-pages.views.ts'

const PAGE_SIZE = 50

const AuditQuery = Type.Object(
  {
    kind: Type.Optional(Type.String({ maxLength: 40 })),
    account: Type.Optional(Type.String({ maxLength: 64 })),
    after: Type.Optional(Type.String({ maxLength: 128 })),
  },
  { additionalProperties: false },
)

type Query = { kind?: string; account?: string; after?: string }

/** The filter of a page's query: an unknown kind shows every kind; an empty account, every account. */
function filterOf(query: Query): AuditFilter {
  return { kind: knownKind(query.kind), accountId: query.account?.trim() || undefined }
}

/** The filter as a query string, with `extra` (the page's cursor). */
function queryOf(filter: AuditFilter, extra: Record<string, string> = {}): string {
  const search = new URLSearchParams({
    ...(filter.kind ? { kind: filter.kind } : {}),
    ...(filter.accountId ? { account: filter.accountId } : {}),
    ...extra,
  }).toString()
  return search ? `?${search}` : ''
}

/** An entry as a line of the export: the API's shape, with the account it belongs to. */
const exportLine = (entry: AuditEntry) =>
  `${JSON.stringify({ ...serializeAuditEntry(entry), accountId: entry.accountId, accountEmail: entry.accountEmail })}\n`

export const adminAuditRoutes: Routes = async (app, deps) => {
  const { audit, web, signedIn, nav, actor } = adminKit(app, deps)
  app.get<{ Querystring: Query }>(
    ADMIN_PATHS.audit,
    { ...signedIn, schema: { hide: true, querystring: AuditQuery } },
    async (request, reply) => {
      const filter = filterOf(request.query)
      const { after } = request.query
      const page = await audit.page(filter, after, PAGE_SIZE)
      // The account's email from its entries; with none on the page, its ID says which it is.
      const email = page.items[0]?.accountEmail ?? null
      return web.send(
        reply,
        200,
        auditPage({
          nav: nav(request, reply),
          viewerId: actor(request).id,
          entries: page.items,
          kind: filter.kind,
          account: filter.accountId ? { id: filter.accountId, email } : undefined,
          exportHref: `${ADMIN_PATHS.auditExport}${queryOf(filter)}`,
          newestHref: after === undefined ? null : `${ADMIN_PATHS.audit}${queryOf(filter)}`,
          olderHref: page.nextCursor
            ? `${ADMIN_PATHS.audit}${queryOf(filter, { after: page.nextCursor })}`
            : null,
          retentionDays: audit.retentionDays,
        }),
      )
    },
  )

  app.get<{ Querystring: Query }>(
    ADMIN_PATHS.auditExport,
    { ...signedIn, schema: { hide: true, querystring: AuditQuery } },
    async (request, reply) => {
      const filter = filterOf(request.query)
      const day = new Date().toISOString().slice(0, 10)
      const lines = Readable.from(
        (async function* () {
          for await (const entry of audit.all(filter)) yield exportLine(entry)
        })(),
      )
      return reply
        .header('content-type', 'application/jsonl; charset=utf-8')
        .header('content-disposition', `attachment; filename="coffer-audit-${day}.jsonl"`)
        .header('cache-control', 'no-store')
        .send(lines)
    },
  )
}
