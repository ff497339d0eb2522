// The first-run setup links' SQL: only the SHA-256 of each link's secret is kept.
import type { Kysely } from 'kysely'
import type { Db, Executor } from '../../platform/db/database.ts'
import type { Database } from '../../platform/db/schema.ts'

export class SetupLinksRepository {
  readonly #db: Kysely<Database>

  constructor(db: Db) {
    this.#db = db.kysely
  }

  async insert(secretHash: string, createdAt: number, expiresAt: number): Promise<void> {
    await this.#db
      .insertInto('setup_links')
      .values({ secret_hash: secretHash, created_at: createdAt, expires_at: expiresAt })
      .execute()
  }

  async isValid(secretHash: string, now: number): Promise<boolean> {
    const row = await this.#db
      .selectFrom('setup_links')
      .select('secret_hash')
      .where('secret_hash', '=', secretHash)
      .where('expires_at', '>', now)
      .executeTakeFirst()
    return row !== undefined
  }

  /**
   * Removes every link, and says whether the one with this hash was among them and valid. Run in the
   * transaction that creates the first account: of two redemptions at once, only one finds its link.
   */
  async takeAll(executor: Executor, secretHash: string, now: number): Promise<boolean> {
    const removed = await executor
      .deleteFrom('setup_links')
      .returning(['secret_hash', 'expires_at'])
      .execute()
    return removed.some((row) => row.secret_hash === secretHash && Number(row.expires_at) > now)
  }

  async deleteExpired(now: number): Promise<void> {
    await this.#db.deleteFrom('setup_links').where('expires_at', '<=', now).execute()
  }
}
