// Accounts' SQL. Emails are stored normalised (accounts.service.ts), so they compare exactly.
import type { Kysely } from 'kysely'
import type { Db, Executor } from '../../platform/db/database.ts'
import type { Database } from '../../platform/db/schema.ts'
import type { AccountRole } from './accounts.tables.ts'

export interface Account {
  id: string
  email: string
  createdAt: number
  role: AccountRole
}

const toAccount = (row: { id: string; email: string; created_at: number; role: AccountRole }): Account => ({
  id: row.id,
  email: row.email,
  createdAt: Number(row.created_at),
  role: row.role,
})

/** A failed sign-in, as the password page shows it. */
export interface FailedSignIn {
  at: number
  /** The client address as the rate limits name it. */
  client: string
}

export class AccountsRepository {
  readonly #db: Kysely<Database>
  readonly #engine: Db['engine']

  constructor(db: Db) {
    this.#db = db.kysely
    this.#engine = db.engine
  }

  /** False when the email is taken. */
  async insert(
    account: Account & { passwordHash: string | null },
    executor: Executor = this.#db,
  ): Promise<boolean> {
    const inserted = await executor
      .insertInto('accounts')
      .values({
        id: account.id,
        email: account.email,
        password_hash: account.passwordHash,
        created_at: account.createdAt,
        role: account.role,
      })
      .onConflict((oc) => oc.column('email').doNothing())
      .returning('id')
      .executeTakeFirst()
    return inserted !== undefined
  }

  /** Every account, newest first: ids sort by creation time, so the primary key gives the order. */
  async list(): Promise<Account[]> {
    const rows = await this.#db
      .selectFrom('accounts')
      .select(['id', 'email', 'created_at', 'role'])
      .orderBy('id', 'desc')
      .execute()
    return rows.map(toAccount)
  }

  /** The account with this (normalised) email, with its password hash, if any. */
  async byEmail(
    email: string,
  ): Promise<(Account & { passwordHash: string | null; disabled: boolean }) | undefined> {
    const row = await this.#db
      .selectFrom('accounts')
      .select(['id', 'email', 'created_at', 'role', 'password_hash', 'disabled_at'])
      .where('email', '=', email)
      .executeTakeFirst()
    return row && { ...toAccount(row), passwordHash: row.password_hash, disabled: row.disabled_at !== null }
  }

  async byId(
    id: string,
    executor: Executor = this.#db,
  ): Promise<(Account & { passwordHash: string | null; disabled: boolean }) | undefined> {
    const row = await executor
      .selectFrom('accounts')
      .select(['id', 'email', 'created_at', 'role', 'password_hash', 'disabled_at'])
      .where('id', '=', id)
      .executeTakeFirst()
    return row && { ...toAccount(row), passwordHash: row.password_hash, disabled: row.disabled_at !== null }
  }

  /** Whether any account exists: none means the first-run setup is pending. */
  async any(executor: Executor = this.#db): Promise<boolean> {
    const row = await executor.selectFrom('accounts').select('id').limit(1).executeTakeFirst()
    return row !== undefined
  }

  /**
   * The admins that are not disabled, read in `trx` and locked there on PostgreSQL (SQLite's writer holds the
   * whole database), so that two admins demoting or disabling each other at once cannot leave none.
   */
  async activeAdminIds(trx: Executor): Promise<string[]> {
    const query = trx
      .selectFrom('accounts')
      .select('id')
      .where('role', '=', 'admin')
      .where('disabled_at', 'is', null)
    const rows = await (this.#engine === 'postgres' ? query.forUpdate() : query).execute()
    return rows.map((row) => row.id)
  }

  /** False when there is no such account. */
  async setRole(trx: Executor, accountId: string, role: AccountRole): Promise<boolean> {
    const result = await trx
      .updateTable('accounts')
      .set({ role })
      .where('id', '=', accountId)
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  /** Marks the account deleted by an admin at `now`, and disabled if it was not: its files go next. */
  async markDeleting(trx: Executor, accountId: string, now: number): Promise<boolean> {
    const result = await trx
      .updateTable('accounts')
      .set((eb) => ({ deleting_at: now, disabled_at: eb.fn.coalesce('disabled_at', eb.val(now)) }))
      .where('id', '=', accountId)
      .where('deleting_at', 'is', null)
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  /**
   * Deletes the rows of the accounts an admin deleted whose files the purge removed, and with them (by their
   * foreign keys) everything else of theirs. Answers how many went.
   */
  async deleteEmptied(): Promise<number> {
    const result = await this.#db
      .deleteFrom('accounts')
      .where('deleting_at', 'is not', null)
      .where((eb) =>
        eb.not(
          eb.exists(
            eb.selectFrom('files').select('files.id').whereRef('files.account_id', '=', 'accounts.id'),
          ),
        ),
      )
      .executeTakeFirst()
    return Number(result.numDeletedRows)
  }

  /**
   * Disables the account at `at`, or enables it (null): 'changed'; 'unchanged' when it already was (a disabled
   * account keeps the time it was disabled); 'missing' when there is no such account or it is being deleted
   * (it stays disabled).
   */
  async setDisabled(
    accountId: string,
    at: number | null,
    executor: Executor = this.#db,
  ): Promise<'changed' | 'unchanged' | 'missing'> {
    const result = await executor
      .updateTable('accounts')
      .set({ disabled_at: at })
      .where('id', '=', accountId)
      .where('deleting_at', 'is', null)
      .where('disabled_at', at === null ? 'is not' : 'is', null)
      .executeTakeFirst()
    if (result.numUpdatedRows > 0n) return 'changed'
    const present = await executor
      .selectFrom('accounts')
      .select('id')
      .where('id', '=', accountId)
      .where('deleting_at', 'is', null)
      .executeTakeFirst()
    return present ? 'unchanged' : 'missing'
  }

  async recordSignIn(accountId: string, at: number, executor: Executor = this.#db): Promise<void> {
    await executor.updateTable('accounts').set({ last_sign_in_at: at }).where('id', '=', accountId).execute()
  }

  async recordFailedSignIn(
    accountId: string,
    failure: FailedSignIn,
    executor: Executor = this.#db,
  ): Promise<void> {
    await executor
      .insertInto('sign_in_failures')
      .values({ account_id: accountId, at: failure.at, client: failure.client })
      .execute()
  }

  /** The account's latest failed sign-ins since `since`, newest first. */
  async failedSignIns(accountId: string, since: number, limit: number): Promise<FailedSignIn[]> {
    const rows = await this.#db
      .selectFrom('sign_in_failures')
      .select(['at', 'client'])
      .where('account_id', '=', accountId)
      .where('at', '>=', since)
      .orderBy('at', 'desc')
      .limit(limit)
      .execute()
    return rows.map((row) => ({ at: Number(row.at), client: row.client }))
  }

  async deleteFailedSignInsBefore(before: number): Promise<void> {
    await this.#db.deleteFrom('sign_in_failures').where('at', '<', before).execute()
  }

  async setPasswordHash(
    accountId: string,
    passwordHash: string,
    executor: Executor = this.#db,
  ): Promise<boolean> {
    const result = await executor
      .updateTable('accounts')
      .set({ password_hash: passwordHash })
      .where('id', '=', accountId)
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }
}
