// The SQL of the identities at the provider that accounts signed in with (sso.tables.ts, migration 0036).
import type { Kysely } from 'kysely'
import type { Db } from '../../platform/db/database.ts'
import type { Database } from '../../platform/db/schema.ts'

export class SsoIdentitiesRepository {
  readonly #db: Kysely<Database>

  constructor(db: Db) {
    this.#db = db.kysely
  }

  /** The account the provider's subject signs in to, if it signed in before. */
  async accountOf(issuer: string, subject: string): Promise<string | undefined> {
    const row = await this.#db
      .selectFrom('sso_identities')
      .select('account_id')
      .where('issuer', '=', issuer)
      .where('subject', '=', subject)
      .executeTakeFirst()
    return row?.account_id
  }

  /** The subject at the provider the account signed in with, if any. */
  async subjectOf(accountId: string, issuer: string): Promise<string | undefined> {
    const row = await this.#db
      .selectFrom('sso_identities')
      .select('subject')
      .where('account_id', '=', accountId)
      .where('issuer', '=', issuer)
      .executeTakeFirst()
    return row?.subject
  }

  /**
   * Links the subject to the account, unless either is linked already (to this one or another): of two links at
   * once, one is kept. The caller reads `accountOf` after it to learn which.
   */
  async link(issuer: string, subject: string, accountId: string, now: number): Promise<void> {
    await this.#db
      .insertInto('sso_identities')
      .values({ issuer, subject, account_id: accountId, created_at: now })
      .onConflict((conflict) => conflict.doNothing())
      .execute()
  }
}
