// What quotas bring to the application: each account's usage (kept by triggers, migration 0035) and limits, the
// check that uploads' preparations make (`QuotasService.admit`), the API's GET /usage, and the service the
// admin's pages and command set quotas with.
import type { Module } from '../../module.ts'
import { AuditEntriesRepository } from '../../platform/audit/audit-entries.repository.ts'
import { ADMIN_COMMAND, AuditLog } from '../../platform/audit/audit-log.ts'
import type { Config } from '../../platform/config.ts'
import type { Db } from '../../platform/db/database.ts'
import { QuotasRepository } from './quotas.repository.ts'
import { quotasRoutes } from './quotas.routes.ts'
import { UsageSchema } from './quotas.schemas.ts'
import { QuotasService } from './quotas.service.ts'

declare module '../../module.ts' {
  interface Repositories {
    quotas: QuotasRepository
  }
  interface Services {
    /** Accounts' usage and limits: read in batches, set by admins, checked by uploads' preparations. */
    quotas: QuotasService
  }
}

/** The quotas' service alone, for the admin command (which wires no server). */
export function wireQuotas(db: Db, config: Pick<Config, 'defaultQuotaBytes'>): { quotas: QuotasService } {
  return {
    quotas: new QuotasService({
      quotas: new QuotasRepository(db),
      transaction: db.transaction,
      // Run on the server's host by its operator, as wiring.ts's `wireAccounts` is: the admin command acts.
      audit: new AuditLog({ entries: new AuditEntriesRepository(db), outsideRequests: ADMIN_COMMAND }),
      defaultQuotaBytes: config.defaultQuotaBytes,
    }),
  }
}

export const quotasModule: Module = {
  schemas: [UsageSchema],
  apiRoutes: [quotasRoutes],
  repositories: (db) => ({ quotas: new QuotasRepository(db) }),
  wire: ({ config, db, audit }, { repositories: r }) => ({
    services: {
      quotas: new QuotasService({
        quotas: r.quotas,
        transaction: db.transaction,
        audit,
        defaultQuotaBytes: config.defaultQuotaBytes,
      }),
    },
  }),
}
