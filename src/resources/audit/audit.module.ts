// What the audit log's reading side brings to the application: the account's log on the API (GET /audit) and
// its page (/account/activity), and the service the admin's pages read everyone's with. Its writing side is the
// platform's (platform/audit), since every module records into it, the accounts first.
import type { Module } from '../../module.ts'
import { activityRoutes } from './activity.routes.ts'
import { AuditRepository } from './audit.repository.ts'
import { auditRoutes } from './audit.routes.ts'
import { AuditEntrySchema } from './audit.schemas.ts'
import { AuditService } from './audit.service.ts'

declare module '../../module.ts' {
  interface Services {
    /** The audit log as its readers see it: an account's, or everyone's for an admin. */
    audit: AuditService
  }
}

export const auditModule: Module = {
  schemas: [AuditEntrySchema],
  apiRoutes: [auditRoutes],
  pageRoutes: [activityRoutes],
  wire: ({ db, config }) => ({
    services: {
      audit: new AuditService({ entries: new AuditRepository(db), retentionDays: config.auditRetentionDays }),
    },
  }),
}
