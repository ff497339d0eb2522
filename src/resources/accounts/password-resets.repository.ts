// The links of "Forgot your password?": the hash of each one's secret, its account and when it stops working.
import type { Kysely } from 'kysely'
import type { Db, Executor } from '../../platform/db/database.ts'
import type { Database } from '../../platform/db/schema.ts'

export class PasswordResetsRepository {
  readonly #db: Kysely<Database>

  constructor(db: Db) {
    this.#db = db.kysely
  }

  async insert(
    executor: Executor,
    reset: { secretHash: string; accountId: string; createdAt: number; expiresAt: number },
  ): Promise<void> {
    await executor
      .insertInto('password_resets')
      .values({
        secret_hash: reset.secretHash,
        account_id: reset.accountId,
        created_at: reset.createdAt,
        expires_at: reset.expiresAt,
      })
      .execute()
  }

  /** When the account's latest link that works now was made, if it has one. */
  async lastSentAt(accountId: string, now: number): Promise<number | undefined> {
    const row = await this.#db
      .selectFrom('password_resets')
      .select((eb) => eb.fn.max('created_at').as('latest'))
      .where('account_id', '=', accountId)
      .where('expires_at', '>', now)
      .executeTakeFirst()
    return row?.latest === null || row?.latest === undefined ? undefined : Number(row.latest)
  }

  /** The account of a link that works now; undefined for an unknown, used or expired one. */
  async accountOf(secretHash: string, now: number): Promise<string | undefined> {
    const row = await this.#db
      .selectFrom('password_resets')
      .innerJoin('accounts', 'accounts.id', 'password_resets.account_id')
      .select('password_resets.account_id')
      .where('password_resets.secret_hash', '=', secretHash)
      .where('password_resets.expires_at', '>', now)
      .where('accounts.disabled_at', 'is', null)
      .executeTakeFirst()
    return row?.account_id
  }

  /**
   * Uses a link: if it works now, every link of its account is removed (the one used, and any other sent before
   * it) and its account returned, all in the caller's transaction `trx` (the one that sets the new password), so a
   * link is used once however many use it at once.
   */
  async take(trx: Executor, secretHash: string, now: number): Promise<string | undefined> {
    const taken = await trx
      .deleteFrom('password_resets')
      .where('secret_hash', '=', secretHash)
      .where('expires_at', '>', now)
      .returning('account_id')
      .executeTakeFirst()
    if (!taken) return undefined
    await trx.deleteFrom('password_resets').where('account_id', '=', taken.account_id).execute()
    return taken.account_id
  }

  async deleteExpired(now: number): Promise<void> {
    await this.#db.deleteFrom('password_resets').where('expires_at', '<=', now).execute()
  }
}
