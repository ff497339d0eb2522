// "Forgot your password?": a link sent by email that sets a new password once, within RESET_LINK_LIFETIME_MS.
// Asking answers the same whether or not the address has an account, and is limited per client address, and per
// client address and address asked for together; an account gets at most one email every
// RESET_EMAIL_INTERVAL_MS however many ask, rather than a refusal, so that strangers who ask for it can neither
// flood its inbox nor keep its owner from asking; the secret is sent in the email alone (only its hash is stored, and the request logger
// redacts `coffer_` secrets from the URLs it logs). Using a link ends every session of the account: whoever
// knew the old password is signed out.
import type { AuditLog } from '../../platform/audit/audit-log.ts'
import { hashPassword, hashSecret, newSecret } from '../../platform/auth/secrets.ts'
import type { Transactor } from '../../platform/db/database.ts'
import type { MailMessage, QueueMail } from '../../platform/mail/mail.repository.ts'
import type { AccountsRepository } from './accounts.repository.ts'
import {
  type AttemptCounter,
  type AttemptCounters,
  accountActor,
  checkNewPassword,
  normaliseEmail,
  type Throttled,
  throttled,
} from './accounts.service.ts'
import type { PasswordResetsRepository } from './password-resets.repository.ts'
import type { SessionsService } from './sessions.service.ts'

export const RESET_SECRET_PREFIX = 'coffer_reset_'
export const RESET_LINK_LIFETIME_MS = 30 * 60_000
/**
 * Asks for one address from one client address: 3, then one every 20 minutes; from one client address, whatever
 * they ask for: 10, then one every 6.
 */
const RESETS_PER_PAIR = { limit: 3, windowMs: 60 * 60_000 }
const RESETS_PER_CLIENT = { limit: 10, windowMs: 60 * 60_000 }
/** The least time between two emails to one account: an ask meanwhile is answered alike, and sends nothing. */
export const RESET_EMAIL_INTERVAL_MS = 10 * 60_000

export class PasswordResetService {
  readonly #transaction: Transactor
  readonly #accountsRepository: AccountsRepository
  readonly #audit: AuditLog
  readonly #sessions: SessionsService
  readonly #resets: PasswordResetsRepository
  readonly #queueMail: QueueMail
  readonly #resetPage: (secret: string) => string
  readonly #perPair: AttemptCounter
  readonly #perClient: AttemptCounter

  constructor(deps: {
    transaction: Transactor
    accountsRepository: AccountsRepository
    /** Where a link used (and one an admin sent) is recorded, in its transaction. */
    audit: AuditLog
    sessions: SessionsService
    resets: PasswordResetsRepository
    queueMail: QueueMail
    /** The absolute URL of the page a link opens. */
    resetPage: (secret: string) => string
    attempts: AttemptCounters
  }) {
    this.#transaction = deps.transaction
    this.#accountsRepository = deps.accountsRepository
    this.#audit = deps.audit
    this.#sessions = deps.sessions
    this.#resets = deps.resets
    this.#queueMail = deps.queueMail
    this.#resetPage = deps.resetPage
    this.#perPair = deps.attempts(RESETS_PER_PAIR)
    this.#perClient = deps.attempts(RESETS_PER_CLIENT)
  }

  /**
   * Sends a link to `email` if it names an enabled account that was sent none in the last
   * RESET_EMAIL_INTERVAL_MS: 'sent', whether or not it names one, unless too many were asked from `client`, or for
   * that address from `client` (counted whether or not the address has an account); 'recently_sent' when the
   * account was sent one then (which still works), with when another may be sent: an admin is told so, anyone
   * else is answered as if it were 'sent'.
   * `byAdmin`: an admin sends it (the admin's pages), which the audit log records with the link's email.
   */
  async request(
    email: string,
    client: string,
    byAdmin = false,
  ): Promise<{ kind: 'sent' } | { kind: 'recently_sent'; anotherInSeconds: number } | Throttled> {
    const normalised = normaliseEmail(email)
    const refused = throttled(
      await Promise.all([
        this.#perPair.hit(`reset:${normalised}|${client}`),
        this.#perClient.hit(`reset-${client}`),
      ]),
    )
    if (refused) return refused
    const account = await this.#accountsRepository.byEmail(normalised)
    if (!account || account.disabled) return { kind: 'sent' }
    const now = Date.now()
    const lastSent = await this.#resets.lastSentAt(account.id, now)
    if (lastSent !== undefined && now - lastSent < RESET_EMAIL_INTERVAL_MS) {
      return {
        kind: 'recently_sent',
        anotherInSeconds: Math.ceil((lastSent + RESET_EMAIL_INTERVAL_MS - now) / 1000),
      }
    }
    const secret = newSecret(RESET_SECRET_PREFIX, 32)
    await this.#transaction(async (trx) => {
      await this.#resets.insert(trx, {
        secretHash: hashSecret(secret),
        accountId: account.id,
        createdAt: now,
        expiresAt: now + RESET_LINK_LIFETIME_MS,
      })
      await this.#queueMail(trx, resetMessage(account.email, this.#resetPage(secret)))
      if (byAdmin) {
        await this.#audit.record(trx, { accountId: account.id, kind: 'account.password_reset_sent' })
      }
    })
    return { kind: 'sent' }
  }

  /** Whether the secret is a link that works now. */
  async isValid(secret: string): Promise<boolean> {
    if (!isResetSecret(secret)) return false
    return (await this.#resets.accountOf(hashSecret(secret), Date.now())) !== undefined
  }

  /**
   * Sets the new password with a link that works, which it uses up, and ends every session of the account;
   * false for a link that does not work (used, expired, unknown). A password the rules refuse is an error
   * before the link is used.
   */
  async reset(secret: string, password: string): Promise<boolean> {
    checkNewPassword(password)
    // A link that does not work costs no hashing: anyone may post this form.
    if (!(await this.isValid(secret))) return false
    // Hashed before the transaction, which holds SQLite's writer: scrypt takes a while. The link is taken in it,
    // so one used meanwhile is refused there.
    const hash = await hashPassword(password)
    const accountId = await this.#transaction(async (trx) => {
      const taken = await this.#resets.take(trx, hashSecret(secret), Date.now())
      const account = taken === undefined ? undefined : await this.#accountsRepository.byId(taken, trx)
      if (!account) return undefined
      await this.#accountsRepository.setPasswordHash(account.id, hash, trx)
      // Whoever holds the link reads the account's email: the account itself, whoever the browser was.
      await this.#audit.record(trx, {
        accountId: account.id,
        kind: 'account.password_reset',
        actor: accountActor(account),
      })
      return account.id
    })
    if (accountId === undefined) return false
    await this.#sessions.endAll(accountId)
    return true
  }

  purgeExpired(): Promise<void> {
    return this.#resets.deleteExpired(Date.now())
  }
}

const isResetSecret = (secret: string) => secret.startsWith(RESET_SECRET_PREFIX) && secret.length <= 128

function resetMessage(to: string, link: string): MailMessage {
  return {
    to,
    subject: 'Reset your Coffer password',
    text: [
      `Someone, hopefully you, asked to reset the password of the Coffer account ${to}.`,
      '',
      `To choose a new password, open this link within ${RESET_LINK_LIFETIME_MS / 60_000} minutes:`,
      link,
      '',
      'The link works once, and signs the account out everywhere. If you did not ask for this, ignore this',
      'email: the password stays as it is.',
    ].join('\n'),
  }
}
