// Accounts: who owns files. Created by the CLI (and later by sign-up pages).
import { hashPassword, verifyPassword } from '../auth/secrets.ts'
import { conflict, invalid, notFound } from '../errors.ts'
import { newId } from '../ids.ts'
import type { Account, AccountsRepository } from './accounts.repository.ts'

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/
export const MIN_PASSWORD_LENGTH = 8

export function normaliseEmail(email: string): string {
  const trimmed = email.trim().toLowerCase()
  if (trimmed.length > 254 || !EMAIL.test(trimmed)) throw invalid(`"${email}" is not a valid email address.`)
  return trimmed
}

export class AccountsService {
  readonly #accounts: AccountsRepository

  constructor(deps: { accounts: AccountsRepository }) {
    this.#accounts = deps.accounts
  }

  async create(input: { email: string; password?: string }): Promise<Account> {
    const email = normaliseEmail(input.email)
    if (input.password !== undefined && input.password.length < MIN_PASSWORD_LENGTH) {
      throw invalid(`The password must be at least ${MIN_PASSWORD_LENGTH} characters long.`)
    }
    const passwordHash = input.password === undefined ? null : await hashPassword(input.password)
    const now = Date.now()
    const account = { id: newId('acc', now), email, createdAt: now }
    if (!(await this.#accounts.insert({ ...account, passwordHash }))) {
      throw conflict(`An account with the email ${email} already exists.`)
    }
    return account
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

  /** The account, if the password matches; undefined otherwise (no hint which part was wrong). */
  async verifyPassword(email: string, password: string): Promise<Account | undefined> {
    const found = await this.#accounts.byEmail(normaliseEmail(email))
    if (!found?.passwordHash || !(await verifyPassword(password, found.passwordHash))) return undefined
    return { id: found.id, email: found.email, createdAt: found.createdAt }
  }

  async setPassword(accountId: string, password: string): Promise<void> {
    if (password.length < MIN_PASSWORD_LENGTH) {
      throw invalid(`The password must be at least ${MIN_PASSWORD_LENGTH} characters long.`)
    }
    if (!(await this.#accounts.setPasswordHash(accountId, await hashPassword(password)))) {
      throw notFound('Account')
    }
  }
}
