// Accounts: who owns files. Created by the CLI (and later by sign-up pages).
import type { Kysely } from 'kysely'
import { hashPassword, verifyPassword } from '../auth/secrets.ts'
import type { Database } from '../db/schema.ts'
import { conflict, invalid, notFound } from '../errors.ts'
import { newId } from '../ids.ts'

export interface Account {
  id: string
  email: string
  createdAt: number
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/
export const MIN_PASSWORD_LENGTH = 8

export function normaliseEmail(email: string): string {
  const trimmed = email.trim().toLowerCase()
  if (trimmed.length > 254 || !EMAIL.test(trimmed)) throw invalid(`"${email}" is not a valid email address.`)
  return trimmed
}

export class AccountsService {
  readonly #db: Kysely<Database>

  constructor(db: Kysely<Database>) {
    this.#db = db
  }

  async create(input: { email: string; password?: string }): Promise<Account> {
    const email = normaliseEmail(input.email)
    if (input.password !== undefined && input.password.length < MIN_PASSWORD_LENGTH) {
      throw invalid(`The password must be at least ${MIN_PASSWORD_LENGTH} characters long.`)
    }
    const passwordHash = input.password === undefined ? null : await hashPassword(input.password)
    const now = Date.now()
    const account = { id: newId('acc', now), email, created_at: now, password_hash: passwordHash }
    const inserted = await this.#db
      .insertInto('accounts')
      .values(account)
      .onConflict((oc) => oc.column('email').doNothing())
      .returning('id')
      .executeTakeFirst()
    if (!inserted) throw conflict(`An account with the email ${email} already exists.`)
    return { id: account.id, email, createdAt: now }
  }

  /** Every account, newest first: ids sort by creation time, so the primary key gives the order. */
  async list(): Promise<Account[]> {
    const rows = await this.#db
      .selectFrom('accounts')
      .select(['id', 'email', 'created_at'])
      .orderBy('id', 'desc')
      .execute()
    return rows.map((row) => ({ id: row.id, email: row.email, createdAt: row.created_at }))
  }

  async findByEmail(email: string): Promise<Account | undefined> {
    const row = await this.#db
      .selectFrom('accounts')
      .select(['id', 'email', 'created_at'])
      .where('email', '=', normaliseEmail(email))
      .executeTakeFirst()
    return row && { id: row.id, email: row.email, createdAt: row.created_at }
  }

  async getByEmail(email: string): Promise<Account> {
    const account = await this.findByEmail(email)
    if (!account) throw notFound(`Account ${email}`)
    return account
  }

  /** The account, if the password matches; undefined otherwise (no hint which part was wrong). */
  async verifyPassword(email: string, password: string): Promise<Account | undefined> {
    const row = await this.#db
      .selectFrom('accounts')
      .select(['id', 'email', 'created_at', 'password_hash'])
      .where('email', '=', normaliseEmail(email))
      .executeTakeFirst()
    if (!row?.password_hash || !(await verifyPassword(password, row.password_hash))) return undefined
    return { id: row.id, email: row.email, createdAt: row.created_at }
  }

  async setPassword(accountId: string, password: string): Promise<void> {
    if (password.length < MIN_PASSWORD_LENGTH) {
      throw invalid(`The password must be at least ${MIN_PASSWORD_LENGTH} characters long.`)
    }
    const result = await this.#db
      .updateTable('accounts')
      .set({ password_hash: await hashPassword(password) })
      .where('id', '=', accountId)
      .executeTakeFirst()
    if (result.numUpdatedRows === 0n) throw notFound('Account')
  }
}
