// What an admin does to the server's accounts: list and find them, change a role, disable and enable, invite,
// and send a password-reset link. The rules stay with accounts (the last admin, disabling ends every
// credential); this service reads the admin's list and checks that the one acting is an admin.
import { AppError, invalid, notFound, RetryLater } from '../../platform/errors.ts'
import type { Account } from '../accounts/accounts.repository.ts'
import type { AccountsService } from '../accounts/accounts.service.ts'
import type { AccountRole } from '../accounts/accounts.tables.ts'
import type { InvitationsService } from '../accounts/invitations.service.ts'
import type { PasswordResetService } from '../accounts/password-reset.service.ts'
import type { QuotaChange, QuotasService, Usage } from '../quotas/quotas.service.ts'
import type { AdminRepository, ManagedAccount } from './admin.repository.ts'

export interface AccountsPage {
  accounts: ManagedAccount[]
  /** Each account's files and bytes against its quota, by id. */
  usage: Map<string, Usage>
  /** The id the next page starts after; null on the last page. */
  next: string | null
}

export class AdminService {
  readonly #admin: AdminRepository
  readonly #accounts: AccountsService
  readonly #invitations: InvitationsService
  readonly #passwordReset: PasswordResetService | undefined
  readonly #quotas: QuotasService

  constructor(deps: {
    admin: AdminRepository
    accounts: AccountsService
    invitations: InvitationsService
    passwordReset: PasswordResetService | undefined
    quotas: QuotasService
  }) {
    this.#admin = deps.admin
    this.#accounts = deps.accounts
    this.#invitations = deps.invitations
    this.#passwordReset = deps.passwordReset
    this.#quotas = deps.quotas
  }

  /** The server's default quota (DEFAULT_QUOTA_BYTES); null: unlimited. */
  get defaultQuotaBytes(): number | null {
    return this.#quotas.defaultQuotaBytes
  }

  /** Whether a password-reset link can be sent (email is set up). */
  get sendsEmail(): boolean {
    return this.#passwordReset !== undefined
  }

  async accounts(query: { search?: string; after?: string; limit: number }): Promise<AccountsPage> {
    const rows = await this.#admin.accounts(query)
    const accounts = rows.slice(0, query.limit)
    const usage = await this.#quotas.usageOf(accounts.map((account) => account.id))
    return { accounts, usage, next: rows.length > query.limit ? (accounts.at(-1)?.id ?? null) : null }
  }

  async account(accountId: string): Promise<ManagedAccount> {
    const account = await this.#admin.account(accountId)
    if (!account) throw notFound('Account')
    return account
  }

  /** The account's files and bytes against its quota. */
  usage(accountId: string): Promise<Usage> {
    return this.#quotas.usage(accountId)
  }

  /** Sets the account's quota (a number, unlimited, or the server's default) and its largest file. */
  setQuota(accountId: string, change: QuotaChange): Promise<Usage> {
    return this.#quotas.set(accountId, change)
  }

  async setRole(accountId: string, role: AccountRole): Promise<ManagedAccount> {
    const account = await this.account(accountId)
    await this.#accounts.setRole(account.email, role)
    return this.account(accountId)
  }

  /** Disables (or enables) the account; an admin does not disable their own, from which they act. */
  async setDisabled(actor: Account, accountId: string, disabled: boolean): Promise<ManagedAccount> {
    const account = await this.account(accountId)
    if (disabled && account.id === actor.id) {
      throw new AppError('conflict', 'You cannot disable your own account.', 'Ask another admin to do it.')
    }
    if (disabled) await this.#accounts.disable(account.email)
    else await this.#accounts.enable(account.email)
    return this.account(accountId)
  }

  /**
   * Deletes the account: the admin types its email to confirm. It is disabled at once; its files go through
   * the trash's purge, and the account with them. An admin does not delete their own account here.
   */
  async deleteAccount(actor: Account, accountId: string, typedEmail: string): Promise<ManagedAccount> {
    const account = await this.account(accountId)
    if (account.id === actor.id) {
      throw new AppError('conflict', 'You cannot delete your own account.', 'Ask another admin to do it.')
    }
    if (typedEmail.trim().toLowerCase() !== account.email) {
      throw invalid(`Type ${account.email} to delete this account.`, undefined, 'email')
    }
    await this.#accounts.delete(account.email)
    return this.account(accountId)
  }

  /** Emails the account a password-reset link, as "Forgot your password?" would. */
  async sendPasswordReset(accountId: string, client: string): Promise<ManagedAccount> {
    const account = await this.account(accountId)
    if (!this.#passwordReset) {
      throw new AppError('conflict', 'This server sends no email: set SMTP_URL and MAIL_FROM to send links.')
    }
    if (account.disabledAt !== null) throw new AppError('conflict', 'A disabled account gets no reset link.')
    const sent = await this.#passwordReset.request(account.email, client, true)
    if (sent.kind === 'throttled') {
      throw new RetryLater('A link was sent to this account a moment ago.', sent.retryAfterSeconds)
    }
    if (sent.kind === 'recently_sent') {
      const minutes = Math.ceil(sent.anotherInSeconds / 60)
      throw new AppError(
        'conflict',
        `A reset link was emailed to this account a few minutes ago, and it still works: no other was sent. Another can be sent in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
      )
    }
    return account
  }

  invite(inviter: Account, input: { email?: string; role: AccountRole }) {
    return this.#invitations.invite(inviter, input)
  }

  invitations() {
    return this.#invitations.unused()
  }

  revokeInvitation(invitationId: string): Promise<void> {
    return this.#invitations.revoke(invitationId)
  }

  /** SIGNUP=closed: no invitation is made or taken. */
  get invitationsClosed(): boolean {
    return this.#invitations.closed
  }

  get invitationsAreEmailed(): boolean {
    return this.#invitations.sendsEmail
  }
}
