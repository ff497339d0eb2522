// Invitations: an admin makes a single-use link that makes an account, valid seven days, for an address or for
// whoever the admin hands it to (unless SIGNUP=closed, where none is made or taken). With email (SMTP_URL) and an address, it is sent in the transaction that makes it;
// otherwise the admin copies it. Only the hash of its secret is kept, so the link is in the answer that made it
// and in the email, nowhere else.
import type { AuditLog } from '../../platform/audit/audit-log.ts'
import { hashSecret, newSecret } from '../../platform/auth/secrets.ts'
import type { Transactor } from '../../platform/db/database.ts'
import { AppError, notFound } from '../../platform/errors.ts'
import { newId } from '../../platform/ids.ts'
import type { MailMessage, QueueMail } from '../../platform/mail/mail.repository.ts'
import type { Account } from './accounts.repository.ts'
import { type AccountsService, normaliseEmail } from './accounts.service.ts'
import type { AccountRole } from './accounts.tables.ts'
import type { Invitation, InvitationsRepository } from './invitations.repository.ts'

/** The recognisable prefix lets the request logger redact a link's secret from the URLs it logs. */
export const INVITATION_SECRET_PREFIX = 'coffer_invite_'
export const INVITATION_LIFETIME_MS = 7 * 86_400_000
/** How long an ended invitation stays listed to its admins before it is forgotten. */
const ENDED_KEPT_MS = 30 * 86_400_000

const used = () =>
  new AppError(
    'gone',
    'This invitation was used or has expired.',
    'Ask the admin who sent it for a new one, or sign in if you already made your account.',
  )

export class InvitationsService {
  readonly #transaction: Transactor
  readonly #invitations: InvitationsRepository
  readonly #accounts: AccountsService
  readonly #audit: AuditLog
  /** Queues an email in the caller's transaction; undefined without SMTP_URL. */
  readonly #queueMail: QueueMail | undefined
  readonly #invitationPage: (secret: string) => string
  /** SIGNUP=closed: only the admin command makes accounts, and no invitation is made or taken. */
  readonly closed: boolean

  constructor(deps: {
    transaction: Transactor
    invitations: InvitationsRepository
    accounts: AccountsService
    /** Where invitations made and revoked are recorded (they belong to no account yet). */
    audit: AuditLog
    queueMail: QueueMail | undefined
    invitationPage: (secret: string) => string
    closed: boolean
  }) {
    this.#transaction = deps.transaction
    this.#invitations = deps.invitations
    this.#accounts = deps.accounts
    this.#audit = deps.audit
    this.#queueMail = deps.queueMail
    this.#invitationPage = deps.invitationPage
    this.closed = deps.closed
  }

  /** Whether invitations to an address are emailed (SMTP_URL is set). */
  get sendsEmail(): boolean {
    return this.#queueMail !== undefined
  }

  /**
   * A new invitation by `inviter`, for `email` if given (then emailed, with SMTP). The link is in the answer: the
   * admin copies it when it was not emailed.
   */
  async invite(
    inviter: Account,
    input: { email?: string; role: AccountRole },
  ): Promise<{ invitation: Invitation; link: string; emailed: boolean }> {
    if (this.closed) {
      throw new AppError(
        'conflict',
        'Invitations are off on this server (SIGNUP=closed).',
        'Make the account with the admin command, or set SIGNUP=invite.',
      )
    }
    const email = input.email === undefined ? null : normaliseEmail(input.email)
    if (email !== null && (await this.#accounts.findByEmail(email))) {
      throw new AppError('conflict', `An account with the email ${email} already exists.`, undefined, 'email')
    }
    const now = Date.now()
    const secret = newSecret(INVITATION_SECRET_PREFIX, 32)
    const invitation: Invitation = {
      id: newId('inv', now),
      email,
      role: input.role,
      invitedBy: inviter.id,
      createdAt: now,
      expiresAt: now + INVITATION_LIFETIME_MS,
    }
    const link = this.#invitationPage(secret)
    const queueMail = email === null ? undefined : this.#queueMail
    await this.#transaction(async (trx) => {
      await this.#invitations.insert(trx, { ...invitation, secretHash: hashSecret(secret) })
      if (queueMail && email !== null) await queueMail(trx, invitationMessage(email, inviter.email, link))
      await this.#audit.record(trx, {
        accountId: null,
        kind: 'invitation.created',
        subjectId: invitation.id,
        details: { ...(email === null ? {} : { email }), role: invitation.role },
      })
    })
    return { invitation, link, emailed: queueMail !== undefined }
  }

  /** The invitation the secret opens, if it is unused and not expired. */
  async open(secret: string): Promise<Invitation | undefined> {
    if (this.closed) return undefined
    if (!secret.startsWith(INVITATION_SECRET_PREFIX) || secret.length > 128) return undefined
    return this.#invitations.open(hashSecret(secret), Date.now())
  }

  /**
   * Makes the invitation's account, with its role, and uses the invitation up in the same transaction: used
   * twice at once, one of the two gets a 410. An invitation for an address makes that address's account.
   */
  async accept(secret: string, input: { email: string; password: string }): Promise<Account> {
    const invitation = await this.open(secret)
    if (!invitation) throw used()
    const email = invitation.email ?? input.email
    return this.#accounts.create(
      { email, password: input.password, role: invitation.role },
      {
        via: 'invitation',
        signsIn: true,
        details: { invitation: invitation.id },
        admit: async (trx, account) => {
          if (!(await this.#invitations.take(trx, invitation.id, account.id, Date.now()))) throw used()
        },
      },
    )
  }

  /** The invitations not used yet, newest first (ended ones too, until they are forgotten). */
  unused(): Promise<Invitation[]> {
    return this.#invitations.unused(200)
  }

  async revoke(invitationId: string): Promise<void> {
    await this.#transaction(async (trx) => {
      const revoked = await this.#invitations.delete(invitationId, trx)
      if (!revoked) throw notFound('Invitation')
      await this.#audit.record(trx, {
        accountId: null,
        kind: 'invitation.revoked',
        subjectId: invitationId,
        details: { ...(revoked.email === null ? {} : { email: revoked.email }), role: revoked.role },
      })
    })
  }

  purgeEnded(now = Date.now()): Promise<void> {
    return this.#invitations.deleteExpired(now - ENDED_KEPT_MS)
  }
}

function invitationMessage(to: string, inviter: string, link: string): MailMessage {
  return {
    to,
    subject: 'You are invited to Coffer',
    text: `${inviter} invited you to make an account on their Coffer server, where you can keep and share files.

Make your account here (the link works once, for 7 days):

${link}

If you did not expect this, you can ignore this email: nothing is made until the link is used.
`,
  }
}
