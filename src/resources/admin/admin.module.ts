// What the admin's pages bring to the application: the server's accounts and invitations, for admins only.
import type { Module } from '../../module.ts'
import { AdminRepository } from './admin.repository.ts'
import { AdminService } from './admin.service.ts'
import { adminAuditRoutes } from './admin-audit.routes.ts'
import { adminPagesRoutes } from './admin-pages.routes.ts'

declare module '../../module.ts' {
  interface Services {
    /** What an admin does to the server's accounts. */
    admin: AdminService
  }
}

export const adminModule: Module = {
  pageRoutes: [adminPagesRoutes, adminAuditRoutes],
  wire: ({ db }, { services }) => ({
    services: {
      admin: new AdminService({
        admin: new AdminRepository(db),
        accounts: services.accounts,
        invitations: services.invitations,
        passwordReset: services.passwordReset,
        quotas: services.quotas,
      }),
    },
  }),
}
