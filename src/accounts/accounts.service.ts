// Accounts: who owns files. Created by the CLI, the first-run setup link and, when SIGNUP=open, the sign-up
// page; signed in to with a password (scrypt).
import { hashPassword, verifyPassword } from '../auth/secrets.ts'
import type { Transactor } from '../db/database.ts'
import { conflict, invalid, notFound } from '../errors.ts'
import { newId } from '../ids.ts'
import type { OauthRecordsRepository } from '../oauth/oauth-records.repository.ts'
import type { Account, AccountsRepository } from './accounts.repository.ts'
import type { ApiKeysRepository } from './api-keys.repository.ts'
import type { SessionsRepository } from './sessions.repository.ts'

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/
export const MIN_PASSWORD_LENGTH = 8
export const MAX_PASSWORD_LENGTH = 1024

/** A hash no password matches, checked when there is no account, so that both answers take as long. */
let decoyHash: Promise<string> | undefined
const decoy = () => {
  decoyHash ??= hashPassword(`decoy ${Math.random()}`)
  return decoyHash
}

function checkNewPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH) {
    throw invalid(
      `The password must be at least ${MIN_PASSWORD_LENGTH} characters long (and at most ${MAX_PASSWORD_LENGTH}).`,
      undefined,
      'password',
    )
  }
}

export function normaliseEmail(email: string): string {
  const trimmed = email.trim().toLowerCase()
  if (trimmed.length > 254 || !EMAIL.test(trimmed)) throw invalid(`"${email}" is not a valid email address.`)
  return trimmed
}

export class AccountsService {
  readonly #transaction: Transactor
  readonly #accounts: AccountsRepository
  readonly #keys: ApiKeysRepository
  readonly #sessions: SessionsRepository
  readonly #oauth: OauthRecordsRepository

  constructor(deps: {
    transaction: Transactor
    accounts: AccountsRepository
    keys: ApiKeysRepository
    sessions: SessionsRepository
    oauth: OauthRecordsRepository
  }) {
    this.#transaction = deps.transaction
    this.#accounts = deps.accounts
    this.#keys = deps.keys
    this.#sessions = deps.sessions
    this.#oauth = deps.oauth
  }

  /**
   * Creates an account. `onlyIfFirst` runs in the same transaction before the insert and may refuse: the
   * first-run setup uses it to take its link and to make sure no account exists yet.
   */
  async create(
    input: { email: string; password?: string },
    onlyIfFirst?: (trx: Parameters<Parameters<Transactor>[0]>[0]) => Promise<void>,
  ): Promise<Account> {
    const email = normaliseEmail(input.email)
    if (input.password !== undefined) checkNewPassword(input.password)
    const passwordHash = input.password === undefined ? null : await hashPassword(input.password)
    const now = Date.now()
    const account = { id: newId('acc', now), email, createdAt: now }
    const inserted = await this.#transaction(async (trx) => {
      await onlyIfFirst?.(trx)
      return this.#accounts.insert({ ...account, passwordHash }, trx)
    })
    if (!inserted) throw conflict(`An account with the email ${email} already exists.`, undefined, 'email')
    return account
  }

  /** Whether any account exists yet (none: the first-run setup is pending). */
  any(): Promise<boolean> {
    return this.#accounts.any()
  }

  /** Every account, newest first. */
  list(): Promise<Account[]> {
    return this.#accounts.list()
  }

  async findByEmail(email: string): Promise<Account | undefined> {
    const found = await this.#accounts.byEmail(normaliseEmail(email))
    return found && { id: found.id, email: found.email, createdAt: found.createdAt }
  }

  async getByEmail(email: string): Promise<Account> {
    const account = await this.findByEmail(email)
    if (!account) throw notFound(`Account ${email}`)
    return account
  }

  /**
   * The account, if the password matches and the account is not disabled; undefined otherwise. Every
   * refusal costs one scrypt, an unknown email included, so neither the answer nor its time tells whether
   * the account exists.
   */
  async verifyPassword(email: string, password: string): Promise<Account | undefined> {
    let normalised: string | undefined
    try {
      normalised = normaliseEmail(email)
    } catch {}
    const found = normalised === undefined ? undefined : await this.#accounts.byEmail(normalised)
    if (password.length > MAX_PASSWORD_LENGTH) return undefined
    const matches = await verifyPassword(password, found?.passwordHash ?? (await decoy()))
    if (!found?.passwordHash || !matches || found.disabled) return undefined
    return { id: found.id, email: found.email, createdAt: found.createdAt }
  }

  async setPassword(accountId: string, password: string): Promise<void> {
    checkNewPassword(password)
    if (!(await this.#accounts.setPasswordHash(accountId, await hashPassword(password)))) {
      throw notFound('Account')
    }
  }

  /**
   * Changes the password of a signed-in account, which must give its current one, and ends its other
   * sessions: whoever else knew the old password is signed out.
   */
  async changePassword(input: {
    accountId: string
    sessionId: string
    current: string
    next: string
  }): Promise<void> {
    const found = await this.#accounts.byId(input.accountId)
    if (!found) throw notFound('Account')
    if (
      !found.passwordHash ||
      input.current.length > MAX_PASSWORD_LENGTH ||
      !(await verifyPassword(input.current, found.passwordHash))
    ) {
      throw invalid('The current password is not right.', undefined, 'current')
    }
    await this.setPassword(input.accountId, input.next)
    await this.#sessions.deleteOfAccount(input.accountId, input.sessionId)
  }

  /**
   * Disables an account: it signs in no more, its sessions end, its API keys are revoked and its OAuth
   * grants (with their tokens) removed, so every credential it had is refused on its next request.
   */
  async disable(email: string): Promise<Account> {
    const account = await this.getByEmail(email)
    await this.#accounts.setDisabled(account.id, Date.now())
    await this.#sessions.deleteOfAccount(account.id)
    await this.#keys.revokeAllOf(account.id)
    await this.#oauth.deleteGrantsOf(account.id)
    return account
  }

  /** Lets a disabled account sign in again; its revoked credentials stay revoked. */
  async enable(email: string): Promise<Account> {
    const account = await this.getByEmail(email)
    await this.#accounts.setDisabled(account.id, null)
    return account
  }
}
