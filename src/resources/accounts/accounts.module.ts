// What accounts bring to the application: accounts, their API keys, sessions, first-run setup and password
// resets, with the sign-in, setup, password and API-key pages.

import type { Module, Repositories } from '../../module.ts'
import type { AuditLog } from '../../platform/audit/audit-log.ts'
import type { Config, SignUpConfig } from '../../platform/config.ts'
import type { Db } from '../../platform/db/database.ts'
import type { ServerSecrets } from '../../platform/db/server-secrets.ts'
import { accountPagesRoutes } from './account-pages.routes.ts'
import { AccountsRepository } from './accounts.repository.ts'
import { AccountsService, type AttemptCounters, type OauthGrants } from './accounts.service.ts'
import { ApiKeysRepository } from './api-keys.repository.ts'
import { ApiKeysService } from './api-keys.service.ts'
import { invitationPagesRoutes } from './invitation-pages.routes.ts'
import { InvitationsRepository } from './invitations.repository.ts'
import { InvitationsService } from './invitations.service.ts'
import { KnownDevices } from './known-devices.ts'
import { NewKeyNotes } from './new-key-notes.ts'
import { PasswordResetService } from './password-reset.service.ts'
import { PasswordResetsRepository } from './password-resets.repository.ts'
import { SessionsRepository } from './sessions.repository.ts'
import { SessionsService } from './sessions.service.ts'
import { SetupService } from './setup.service.ts'
import { SetupLinksRepository } from './setup-links.repository.ts'

declare module '../../module.ts' {
  interface Repositories {
    accounts: AccountsRepository
    apiKeys: ApiKeysRepository
    sessions: SessionsRepository
    setupLinks: SetupLinksRepository
    passwordResets: PasswordResetsRepository
    invitations: InvitationsRepository
  }
  interface Services {
    accounts: AccountsService
    apiKeys: ApiKeysService
    sessions: SessionsService
    setup: SetupService
    /** "Forgot your password?"; undefined without email (SMTP_URL), which it needs. */
    passwordReset: PasswordResetService | undefined
    /** Single-use links, made by admins, that make an account. */
    invitations: InvitationsService
  }
}

export const accountsModule: Module = {
  pageRoutes: [accountPagesRoutes, invitationPagesRoutes],
  repositories: accountsRepositories,
  wire: ({ config, db, serverSecrets, attempts, mail, urls, audit }, { repositories }) => {
    const services = accountServices({
      db,
      serverSecrets,
      attempts,
      audit,
      signUpPolicy: config.signUp,
      repositories,
    })
    const passwordReset =
      config.mail &&
      new PasswordResetService({
        transaction: db.transaction,
        accountsRepository: repositories.accounts,
        audit,
        sessions: services.sessions,
        resets: repositories.passwordResets,
        queueMail: (trx, message) => mail.enqueue(trx, message),
        resetPage: (secret) => urls.passwordResetPage(secret),
        attempts,
      })
    const invitations = new InvitationsService({
      transaction: db.transaction,
      invitations: repositories.invitations,
      accounts: services.accounts,
      audit,
      queueMail: config.mail && ((trx, message) => mail.enqueue(trx, message)),
      invitationPage: (secret) => urls.invitationPage(secret),
      closed: config.signUp.policy === 'closed',
    })
    return { services: { ...services, passwordReset, invitations } }
  },
  purges: (_platform, { services, repositories }) => ({
    sessions: () => services.sessions.purgeExpired(),
    'setup links': () => services.setup.purgeExpired(),
    'failed sign-ins': () => services.accounts.purgeFailedSignIns(),
    'password reset links': () => repositories.passwordResets.deleteExpired(Date.now()),
    'ended invitations': () => services.invitations.purgeEnded(),
    // After the trash's purge (a module further up the list) removed their files, on an earlier pass.
    'deleted accounts': () => services.accounts.purgeDeleted(),
  }),
}

/** Its repositories, which the admin command's `wireAccounts` builds too. */
export function accountsRepositories(db: Db, config?: Pick<Config, 'defaultQuotaBytes'>) {
  return {
    accounts: new AccountsRepository(db),
    apiKeys: new ApiKeysRepository(db),
    sessions: new SessionsRepository(db, config?.defaultQuotaBytes ?? null),
    setupLinks: new SetupLinksRepository(db),
    passwordResets: new PasswordResetsRepository(db),
    invitations: new InvitationsRepository(db),
  }
}

/**
 * Accounts, their API keys, sessions and first-run setup: a part of the module's wiring, and what the admin
 * command manages (wiring.ts, `wireAccounts`). `oauth` is the OAuth module's record of grants, which an
 * account's deletion and password change end.
 */
export function accountServices(deps: {
  db: Db
  serverSecrets: ServerSecrets
  attempts: AttemptCounters
  /** Where sign-ins, passwords, keys and accounts' changes are recorded. */
  audit: AuditLog
  signUpPolicy: SignUpConfig
  repositories: Pick<Repositories, 'accounts' | 'apiKeys' | 'sessions' | 'setupLinks'> & {
    oauthRecords: OauthGrants
  }
}) {
  const { db, serverSecrets, attempts, audit, signUpPolicy, repositories: r } = deps
  const accounts = new AccountsService({
    transaction: db.transaction,
    audit,
    accounts: r.accounts,
    keys: r.apiKeys,
    sessions: r.sessions,
    oauth: r.oauthRecords,
    attempts,
    devices: new KnownDevices(serverSecrets),
    signUpPolicy,
  })
  return {
    accounts,
    apiKeys: new ApiKeysService({
      keys: r.apiKeys,
      notes: new NewKeyNotes(serverSecrets),
      transaction: db.transaction,
      audit,
    }),
    sessions: new SessionsService({ sessions: r.sessions }),
    setup: new SetupService({ links: r.setupLinks, accountsRepository: r.accounts, accounts }),
  }
}
